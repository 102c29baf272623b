"""CUDA_VISIBLE_DEVICES naming GPUs this machine does not have (ED160).

CUDA reads the list left to right and stops at the first entry it cannot use: an index at or past
the number of GPUs, a negative number, a word. Everything after it is ignored, so "1" on a one-GPU
machine and "-1" both leave no GPU at all, and "0,2" on a two-GPU machine leaves GPU 0 only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from envdoctor.model.findings import Severity
from envdoctor.probes.environment import EnvironmentFacts
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.environment.common import cuda_torch, nvidia_gpus, set_fix, unset_fix
from envdoctor.util.records import record

VARIABLE = "CUDA_VISIBLE_DEVICES"
_INDEX = re.compile(r"\d{1,4}")


@record
class Visible:
    """What CUDA makes of the variable on a machine with `count` GPUs."""

    shown: tuple[int, ...]  # the physical indices CUDA exposes, in the order given
    stopped_at: str | None  # the first entry CUDA could not use (the rest is ignored); None: none
    judged: bool = True  # False: an entry envdoctor cannot check (a GPU-/MIG- UUID)


def parse(value: str, count: int) -> Visible:
    shown: list[int] = []
    for raw in value.split(","):
        entry = raw.strip()
        if entry.upper().startswith(("GPU-", "MIG-")):
            return Visible(tuple(shown), None, judged=False)  # UUIDs: the nvml rules judge MIG ones
        if not _INDEX.fullmatch(entry) or int(entry) >= count or int(entry) in shown:
            return Visible(tuple(shown), entry)
        shown.append(int(entry))
    return Visible(tuple(shown), None)


def _indices(count: int) -> str:
    return ",".join(str(i) for i in range(count))


@rule(
    code="ED160",
    name="cuda-visible-devices-names-missing-gpu",
    severity=Severity.ERROR,
    summary="CUDA_VISIBLE_DEVICES names GPUs this machine does not have, so torch sees fewer or none",
    needs=(EnvironmentFacts, NvmlFacts),
    doc=RuleDoc(
        what="CUDA_VISIBLE_DEVICES, as this process and the interpreter it examines inherit it, "
        "against the GPUs the NVIDIA driver lists: an index at or beyond the number of GPUs, a "
        "negative number (-1), an empty value, or a word.",
        why="CUDA stops reading the list at the first entry it cannot use and ignores the rest. "
        "A run script written for an eight-GPU server (`export CUDA_VISIBLE_DEVICES=1`, or "
        '`os.environ["CUDA_VISIBLE_DEVICES"] = "7"` in train.py) hides every GPU of a one-GPU '
        'machine: torch.cuda.is_available() is False, or "RuntimeError: No CUDA GPUs are '
        'available", and training silently runs on the CPU.',
        fix="Set it to GPUs that exist (0 on a one-GPU machine) or unset it, in the shell and in "
        "the script that sets it.",
        example="One RTX 2070 SUPER, and the repository's run script exports CUDA_VISIBLE_DEVICES=2.",
    ),
)
def cuda_visible_devices_names_missing_gpu(ctx: RuleContext) -> Iterator[Hit]:
    env = ctx.need(EnvironmentFacts)
    value = env.variable(VARIABLE)
    if value is None:
        torch = ctx.get(TorchFacts)  # what the torch child saw, from a snapshot without the variables
        value = torch.cuda_visible_devices if torch is not None and not env.variables_read else None
    count = nvidia_gpus(ctx)
    if value is None or count == 0 or not cuda_torch(ctx):
        return
    visible = parse(value, count)
    if not visible.judged or visible.stopped_at is None:
        return
    have = "GPU 0 only" if count == 1 else f"GPUs 0-{count - 1}"
    evidence = (f"{VARIABLE}={value!r}", f"NVIDIA GPUs: {count}")
    stopped = visible.stopped_at
    deliberate = stopped in ("", "-1") or not _INDEX.fullmatch(stopped)
    if not visible.shown:
        said = (
            "an empty value hides every GPU"
            if value.strip() == ""
            else f"CUDA stops at {stopped!r}, which names no GPU of this machine ({have}), and ignores "
            "the rest"
        )
        why = (
            "Such a value hides the GPUs on purpose (a CPU-only step); left set, it hides them from "
            "every later run too."
            if deliberate
            else "The value was likely written for a machine with more GPUs (a run script, or "
            "os.environ in the training script)."
        )
        yield Hit(
            title=f"{VARIABLE}={value!r} hides every GPU: this machine has {have}",
            detail=f'{said}, so torch.cuda.is_available() is False ("No CUDA GPUs are available") and '
            f"work runs on the CPU. {why}",
            evidence=evidence,
            fixes=(
                set_fix(
                    ctx, VARIABLE, _indices(count), f"Name the GPUs this machine has ({_indices(count)})"
                ),
                unset_fix(ctx, VARIABLE, "Unset it: torch then sees every GPU"),
            ),
        )
        return
    shown = ",".join(str(i) for i in visible.shown)
    yield Hit(
        title=f"{VARIABLE}={value!r} names {stopped!r}, which is no GPU of this machine: torch sees "
        f"GPU {shown} only",
        detail=f"This machine has {have}. CUDA stops reading the list at {stopped!r} and ignores what "
        f"follows, so a job that expects {len(value.split(','))} GPUs gets {len(visible.shown)} "
        '("invalid device ordinal" for the others).',
        evidence=evidence,
        fixes=(set_fix(ctx, VARIABLE, shown, f"Name only GPUs that exist ({shown})"),),
    )
