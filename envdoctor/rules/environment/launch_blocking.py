"""CUDA_LAUNCH_BLOCKING=1 left on after debugging (ED161)."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.model.findings import Severity
from envdoctor.probes.environment import EnvironmentFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.environment.common import nvidia_gpus, unset_fix

VARIABLE = "CUDA_LAUNCH_BLOCKING"


@rule(
    code="ED161",
    name="cuda-launch-blocking-left-on",
    severity=Severity.WARNING,
    summary="CUDA_LAUNCH_BLOCKING=1 makes every CUDA kernel launch wait: a debugging switch left on",
    needs=(EnvironmentFacts,),
    doc=RuleDoc(
        what="Whether CUDA_LAUNCH_BLOCKING is set to 1 in the environment the examined interpreter inherits.",
        why="It makes each kernel launch synchronous, so that a CUDA error is reported at the line "
        "that caused it. That is what torch's error messages suggest for debugging; left on in a "
        "shell profile, a recipe or a training script, it serialises the GPU and the CPU and "
        "training runs several times slower, with no error to say why.",
        fix="Unset it, and remove it where it is set (`export` in a script, os.environ in Python); "
        "set it only for a debugging run.",
        example='train.py starts with os.environ["CUDA_LAUNCH_BLOCKING"] = "1", copied from a '
        "debugging session.",
    ),
)
def cuda_launch_blocking_left_on(ctx: RuleContext) -> Iterator[Hit]:
    value = ctx.need(EnvironmentFacts).variable(VARIABLE)
    if value is None or value.strip() != "1":  # CUDA acts on 1 only
        return
    torch = ctx.get(TorchFacts)
    if nvidia_gpus(ctx) == 0 and not (torch is not None and torch.imported and torch.cuda):
        return  # no CUDA here: the switch has nothing to slow down
    yield Hit(
        title=f"{VARIABLE}=1: every CUDA kernel launch waits for the one before it",
        detail="Kernel launches are synchronous, so the CPU waits for the GPU after each one and "
        "nothing overlaps: training and inference run several times slower. It is meant for one "
        "debugging run (to see which line raised a CUDA error), not for everyday work.",
        evidence=(f"{VARIABLE}={value!r}",),
        fixes=(unset_fix(ctx, VARIABLE, f"Unset {VARIABLE} (set it again only for a debugging run)"),),
    )
