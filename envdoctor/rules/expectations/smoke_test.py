"""A passed GPU smoke test on every GPU torch uses: require-smoke (ED707)."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.torch_build import TorchDevice, TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.expectations.gpu_view import device_name, evidence, gpu_view, title
from envdoctor.settings import Expectations


def _smoke_gaps(torch: TorchFacts | None, devices: tuple[TorchDevice, ...]) -> tuple[str, str]:
    """(what was found, evidence) when the smoke test does not vouch for every GPU; ("", "") else."""
    smoke = torch.smoke if torch is not None else None
    if smoke is None:
        return "the smoke test did not run (these facts hold no smoke results)", "torch.smoke: absent"
    if not smoke.ran:
        return f"the smoke test did not run ({smoke.skipped_reason or 'skipped'})", "torch.smoke.ran = false"
    gaps = []
    for device in devices:
        result = smoke.device(f"cuda:{device.index}")
        if result is None:
            gaps.append(f"{device_name(device)}: no smoke result")
        elif not result.passed:
            failed = ", ".join(f"{step.label} {step.status}" for step in result.problems) or "incomplete"
            gaps.append(f"{device_name(device)}: {failed}")
    if smoke.stopped and not gaps:
        gaps.append(f"the smoke test stopped early ({smoke.stopped})")
    return "; ".join(gaps), "torch.smoke.devices"


@rule(
    code="ED707",
    name="smoke-requirement-unmet",
    severity=Severity.ERROR,
    summary="the project needs a passed GPU smoke test, and none passed",
    needs=(Expectations,),
    doc=RuleDoc(
        what="With require-smoke, whether the GPU smoke test ran and passed on every GPU; "
        "when no smoke results exist the expectation is unmet.",
        why="A GPU can be visible and still fail its first kernel (no kernel image for the "
        "architecture, a broken driver state); only running one proves it works.",
        fix="Follow the smoke test's finding; run a check that includes the smoke test.",
        example="require-smoke = true, and the smoke test was not run.",
    ),
)
def smoke_requirement_unmet(ctx: RuleContext) -> Iterator[Hit]:
    expect = ctx.need(Expectations)
    if not expect.smoke:
        return
    view = gpu_view(ctx)
    if not view.devices:
        return  # ED701 already says there is no GPU to test
    found, where = _smoke_gaps(ctx.get(TorchFacts), view.devices)
    if not found:
        return
    not_run = found.startswith("the smoke test did not run")
    yield Hit(
        title=title("require-smoke", True, found),
        detail="The project needs a passed GPU smoke test (matmul, autograd, fp16/bf16 and a "
        f"convolution on each GPU torch uses); {found}."
        + ("" if not_run else " The smoke test's own finding (ED30x) gives the error and the fix."),
        evidence=evidence("require-smoke", True, where),
        fixes=(
            Fix(
                summary="Run the check with the smoke test (leave out --no-smoke)",
                commands=("envdoctor check --require-smoke",),
            )
            if not_run
            else Fix(summary="Fix what the smoke test's finding names, then check again"),
        ),
    )
