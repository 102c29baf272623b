"""GPUs that no current torch CUDA build and no current NVIDIA driver can serve (Fermi, Kepler):
said plainly, with the newest torch and driver that could, and the CPU build as the fix (ED305);
a note when the CPU build is what is installed and nothing else fits (ED306)."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor import knowledge
from envdoctor.knowledge import gpu_compute
from envdoctor.knowledge.archs import dotted, sm
from envdoctor.knowledge.drivers import DriverKind
from envdoctor.knowledge.retired_gpus import RetiredGpu, retired
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import planned_fix
from envdoctor.rules.nvml.driver import driver_verdict
from envdoctor.rules.torch.gpu import SeenGpu, seen_gpus, uncovered_gpus
from envdoctor.util.records import record

MATRIX = "https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html"


@record
class OldGpu:
    gpu: SeenGpu
    family: RetiredGpu
    support: gpu_compute.ArchSupport

    @property
    def label(self) -> str:
        cc = self.gpu.capability
        return f"{self.gpu.name} ({sm(cc)}, {self.family.architecture})"

    def newest_torch(self) -> str:
        """The newest official torch with kernels for it: from the arch lists, else from the table."""
        if self.support.builds:
            series = self.support.newest_series or ""
            releases = knowledge.release_series(series)
            version = releases[-1].torch if releases else series
            return f"torch {version} ({', '.join(self.support.newest_variants)})"
        if self.family.newest_torch:
            return f"torch {self.family.newest_torch}, {self.family.newest_torch_build}"
        return "no official torch build"

    def story(self) -> str:
        family = self.family
        return (
            f"{self.label} has compute capability {dotted(self.gpu.capability)}. NVIDIA's CUDA "
            f"{family.last_cuda_toolkit} was the last toolkit for it and {family.last_driver_branch} its "
            f"last driver branch (CUDA <= {family.last_driver_cuda}); current torch CUDA builds have no "
            f"kernels for it and need newer drivers than it can take. The newest torch that could use it: "
            f"{self.newest_torch()}, with an {family.last_driver_branch} driver."
        )


def old_gpus(ctx: RuleContext) -> list[OldGpu]:
    """The GPUs seen here that belong to a retired architecture the newest torch does not serve."""
    platform = knowledge.platform_key(ctx.platform.os, ctx.platform.machine)
    newest = knowledge.releases()[-1].series
    nvml = ctx.get(NvmlFacts)
    names = {g.capability: g.name for g in nvml.gpus if g.name} if nvml is not None else {}
    found = []
    for gpu in seen_gpus(ctx):
        if gpu.capability in names:  # NVML names the card as the user knows it
            gpu = SeenGpu(names[gpu.capability], gpu.capability, gpu.source)
        family = retired(gpu.capability)
        if family is None:
            continue
        support = gpu_compute.support_for(gpu.capability, platform)
        if support.newest_series == newest:
            continue  # the current release still carries its kernels
        found.append(OldGpu(gpu, family, support))
    return found


def _cpu_fix(ctx: RuleContext) -> Fix | None:
    return planned_fix(ctx, "Use torch's CPU build, which works on any machine", want_cuda=False)


@rule(
    code="ED305",
    name="gpu-too-old-for-torch-cuda-builds",
    severity=Severity.ERROR,
    summary="the GPU is older than any current torch CUDA build and NVIDIA driver can serve (Fermi, Kepler)",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="Each GPU's compute capability against retired_gpus.json (NVIDIA's last toolkit and last "
        "driver branch per architecture: Fermi 2.x R390, Kepler 3.x R470) and against the arch lists of "
        "the newest torch release, when a CUDA build of torch is installed and cannot use the GPU.",
        why="The usual advice is wrong for these GPUs: no driver >= 525 exists for them, and no "
        "current wheel has their kernels. Saying so plainly saves days of reinstalling drivers.",
        fix="Use the CPU build (the command is shown); to keep the GPU, only the old torch and driver "
        "named in the finding can use it.",
        example="Tesla K80 (sm_37, Kepler) on driver 470.256.02 with torch 2.5.1+cu124: 'The NVIDIA "
        "driver on your system is too old (found version 11040)', and no driver newer than R470 exists "
        "for it.",
    ),
)
def gpu_too_old_for_torch_cuda_builds(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    if not torch.imported or not torch.cuda or torch.hip:
        return
    old = old_gpus(ctx)
    if not old:
        return
    verdict = driver_verdict(ctx)
    driver_bad = verdict is not None and verdict.kind == DriverKind.TOO_OLD
    uncovered = {g.capability for g in uncovered_gpus(ctx)}
    unusable = [
        o for o in old if driver_bad or o.gpu.capability in uncovered or torch.cuda_available is False
    ]
    if not unusable:
        return  # an old build that still serves it (torch 2.7 cu118 on a K80): nothing to say
    fixes = []
    cpu = _cpu_fix(ctx)
    if cpu is not None:
        fixes.append(cpu)
    first = unusable[0]
    keep = planned_fix(
        ctx,
        f"To keep using the GPU: the last CUDA build with kernels for {sm(first.gpu.capability)}",
        want_cuda=True,
    )
    if keep is not None:
        fixes.append(keep)
    why = []
    if driver_bad and verdict is not None:
        why.append(
            f"the driver {verdict.driver or ''} cannot run CUDA {verdict.torch_cuda}".replace("  ", " ")
        )
    if first.gpu.capability in uncovered:
        why.append(f"torch {torch.version} has no kernels for {sm(first.gpu.capability)}")
    because = f" Here {' and '.join(why)}." if why else ""
    yield Hit(
        title=f"{first.label} cannot run current torch CUDA builds",
        detail=" ".join(o.story() for o in unusable) + because + " Upgrading the driver is not "
        "possible for this GPU: NVIDIA publishes no newer driver for it.",
        evidence=tuple(
            f"{sm(o.gpu.capability)} (from {o.gpu.source}): {o.family.architecture}" for o in unusable
        )
        + (tuple(verdict.evidence) if driver_bad and verdict is not None else ()),
        fixes=tuple(fixes),
    )


@rule(
    code="ED306",
    name="gpu-too-old-cpu-torch-is-right",
    severity=Severity.INFO,
    summary="the only NVIDIA GPUs are too old for any current torch CUDA build: the CPU build is right",
    needs=(TorchFacts, NvmlFacts),
    doc=RuleDoc(
        what="A CPU build of torch on a machine whose NVIDIA GPUs all belong to retired architectures "
        "(retired_gpus.json) for which no CUDA build fits the driver and this Python.",
        why="The CPU-only check (ED201) would otherwise demand a CUDA build that cannot exist for "
        "this GPU; the note says why the CPU build is the right one and what could use the GPU.",
        fix="Nothing to change for CPU work; the finding names the old torch and driver that could use "
        "the GPU.",
        example="Windows, GeForce GTX 780 (sm_35, Kepler), driver 474.82, torch 2.13.0+cpu.",
    ),
)
def gpu_too_old_cpu_torch_is_right(ctx: RuleContext) -> Iterator[Hit]:
    if not cpu_torch_is_right(ctx):
        return
    old = old_gpus(ctx)
    torch = ctx.need(TorchFacts)
    yield Hit(
        title=f"{old[0].label} cannot run current torch CUDA builds: the CPU build ({torch.version}) is "
        "the right one here",
        detail=" ".join(o.story() for o in old) + " torch runs on the CPU.",
        evidence=tuple(f"{sm(o.gpu.capability)} (from {o.gpu.source}): {o.family.architecture}" for o in old),
        fixes=(
            Fix(
                summary="Nothing to change for CPU work; NVIDIA's matrix lists the last toolkit and driver "
                "of each GPU architecture",
                link=MATRIX,
            ),
        ),
    )


def cpu_torch_is_right(ctx: RuleContext) -> bool:
    """A CPU torch, NVIDIA GPUs that are all retired, and no CUDA build that fits (ED201 stays quiet)."""
    torch = ctx.get(TorchFacts)
    if torch is None or not torch.imported or torch.variant != "cpu":
        return False
    seen = seen_gpus(ctx)
    old = old_gpus(ctx)
    if not seen or len(old) != len(seen):
        return False
    return planned_fix(ctx, "", want_cuda=True) is None
