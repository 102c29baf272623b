"""Packages a training job leans on beside torch, as each rank found them."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.fleet.facts import FleetFacts
from envdoctor.fleet.words import count, names
from envdoctor.install.packages import PackageRequest
from envdoctor.model.findings import Severity
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import elsewhere_package_fix


@rule(
    code="ED830",
    name="numpy-missing",
    severity=Severity.INFO,
    summary="NumPy cannot be imported on some ranks",
    needs=(FleetFacts,),
    doc=RuleDoc(
        what="Whether `import numpy` works in each rank's process, the interpreter the launcher started.",
        why="torch runs without NumPy and envdoctor's own exchange needs none (it sends bytes through the "
        "rendezvous store), so the check still completes; but Tensor.numpy(), torch.from_numpy, "
        "DataLoader batches of NumPy arrays and most data pipelines fail on those ranks.",
        fix="Install NumPy in the job's environment on the named nodes (`python -m pip install numpy`), "
        "or confirm the job never uses it.",
        example="A slim container image installs torch from a wheel without its optional NumPy, and the "
        "first DataLoader batch raises 'Numpy is not available'.",
    ),
)
def numpy_missing(ctx: RuleContext) -> Iterator[Hit]:
    infos = [i for i in ctx.need(FleetFacts).rank_infos() if i.numpy_error is not None]
    if not infos:
        return
    nodes = sorted({i.node for i in infos})
    first = infos[0]
    yield Hit(
        title=f"NumPy cannot be imported on {count(len(infos), 'rank')} ({names(nodes)}); "
        "the check ran without it",
        detail=f"rank {first.rank} says: {first.numpy_error}\nenvdoctor exchanged its data as bytes "
        "through the rendezvous store, so this report is complete; code that converts between "
        "tensors and NumPy arrays will fail on these ranks.",
        evidence=tuple(f"rank {i.rank} ({i.node}): {i.numpy_error}" for i in infos[:8]),
        fixes=(
            elsewhere_package_fix(
                "Install NumPy into the job's environment on those nodes", PackageRequest(("numpy",))
            ),
        ),
    )


RULES = (numpy_missing,)
