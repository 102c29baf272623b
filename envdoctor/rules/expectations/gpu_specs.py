"""What each GPU torch uses must offer: a compute capability (ED705), an amount of memory
(ED706)."""

from __future__ import annotations

from collections.abc import Iterator

from packaging.specifiers import SpecifierSet

from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.torch_build import TorchDevice
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.expectations.gpu_view import device_name, evidence, gpu_view, title
from envdoctor.settings import MEMORY_TOLERANCE, Expectations


def _select_hint(ctx: RuleContext, good: list[TorchDevice], what: str) -> Fix:
    if good:
        return Fix(
            summary=f"Use only the GPUs that meet {what} ({', '.join(device_name(d) for d in good)}): "
            "list them in CUDA_VISIBLE_DEVICES, with CUDA_DEVICE_ORDER=PCI_BUS_ID so the indices "
            "are nvidia-smi's"
        )
    return Fix(summary=f"Run the job on GPUs that meet {what}")


@rule(
    code="ED705",
    name="capability-requirement-unmet",
    severity=Severity.ERROR,
    summary="a GPU torch uses has a compute capability outside require-capability",
    needs=(Expectations,),
    doc=RuleDoc(
        what="Each device torch sees (its compute capability, e.g. 8.6) against the "
        "require-capability specifier.",
        why="bf16, FlashAttention 2 and FP8 kernels need Ampere (8.0), Ada (8.9) or Hopper "
        "(9.0) and newer; on older GPUs they fail or fall back slowly.",
        fix="Run on GPUs that qualify, or hide the others with CUDA_VISIBLE_DEVICES.",
        example='require-capability = ">=8.0" on a Tesla V100 (7.0).',
    ),
)
def capability_requirement_unmet(ctx: RuleContext) -> Iterator[Hit]:
    expect = ctx.need(Expectations)
    view = gpu_view(ctx)
    if expect.capability is None or not view.devices:
        return
    spec = SpecifierSet(expect.capability)
    bad: list[TorchDevice] = []
    good: list[TorchDevice] = []
    for device in view.devices:
        cap = f"{device.capability[0]}.{device.capability[1]}" if device.capability else None
        (good if cap is not None and spec.contains(cap) else bad).append(device)
    if not bad:
        return
    described = ", ".join(
        f"{d.index}: {d.name or 'GPU'} is "
        + (f"{d.capability[0]}.{d.capability[1]}" if d.capability else "of unknown capability")
        for d in bad
    )
    yield Hit(
        title=title("require-capability", expect.capability, described),
        detail=f"Every GPU torch uses must have compute capability {expect.capability}; {described}. "
        "Kernels built for newer architectures (bf16, FlashAttention, FP8) do not run on older ones.",
        evidence=evidence("require-capability", expect.capability, "torch.devices[].capability"),
        fixes=(_select_hint(ctx, good, f"compute capability {expect.capability}"),),
    )


def _gib(value: int) -> str:
    return f"{value / 2**30:.2f} GiB"


@rule(
    code="ED706",
    name="gpu-memory-requirement-unmet",
    severity=Severity.ERROR,
    summary="a GPU torch uses has less memory than min-gpu-memory",
    needs=(Expectations,),
    doc=RuleDoc(
        what="Each device's total memory (torch.cuda.get_device_properties) against "
        "min-gpu-memory; a board within 2% below the asked size counts, since boards report "
        "a little less than their nominal size (an RTX 4090 shows 23.99 GiB).",
        why="A model that does not fit fails with CUDA out of memory after the data loading "
        "and warm-up, not at the start.",
        fix="Run on GPUs with enough memory, or hide the smaller ones with CUDA_VISIBLE_DEVICES.",
        example='min-gpu-memory = "40GiB" on a 32 GiB V100.',
    ),
)
def gpu_memory_requirement_unmet(ctx: RuleContext) -> Iterator[Hit]:
    expect = ctx.need(Expectations)
    wanted = expect.min_gpu_memory_bytes
    view = gpu_view(ctx)
    if wanted is None or not view.devices:
        return
    floor = wanted * (1 - MEMORY_TOLERANCE)
    bad: list[TorchDevice] = []
    good: list[TorchDevice] = []
    for device in view.devices:
        size = device.total_memory_bytes
        (good if size is not None and size >= floor else bad).append(device)
    if not bad:
        return
    described = ", ".join(
        f"{d.index}: {d.name or 'GPU'} has "
        + (_gib(d.total_memory_bytes) if d.total_memory_bytes is not None else "an unknown amount")
        for d in bad
    )
    yield Hit(
        title=title("min-gpu-memory", expect.min_gpu_memory, described),
        detail=f"Every GPU torch uses must have at least {expect.min_gpu_memory} "
        f"({_gib(wanted)}; boards within {MEMORY_TOLERANCE:.0%} below count, as they report a little "
        f"less than their nominal size); {described}.",
        evidence=evidence("min-gpu-memory", expect.min_gpu_memory, "torch.devices[].total_memory_bytes"),
        fixes=(_select_hint(ctx, good, f"{expect.min_gpu_memory} of memory"),),
    )
