"""Intel GPUs: an Intel GPU torch.xpu serves beside a build without XPU (ED153), and an xpu build
that cannot use the GPU (ED154)."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.knowledge import gpu_vendors as known
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.gpu_vendors import GpuVendorFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import planned_fix
from envdoctor.rules.gpu_vendors.common import (
    gpus_words,
    known_gfx,
    nvidia_here,
    vendor_fix,
    vendor_plan,
)

XPU_GUIDE = "https://docs.pytorch.org/docs/stable/notes/get_start_xpu.html"


def _xpu_build(torch: TorchFacts) -> bool:
    return torch.variant == "xpu" or bool(torch.accelerators is not None and torch.accelerators.xpu)


@rule(
    code="ED153",
    name="intel-gpu-without-xpu-torch",
    severity=Severity.WARNING,
    summary="an Intel GPU torch.xpu serves is here, but torch is not an xpu build",
    needs=(TorchFacts, GpuVendorFacts),
    doc=RuleDoc(
        what="An Intel GPU of a family PyTorch's XPU builds serve (Arc A/B-series, Data Center GPU "
        "Max, Core Ultra graphics; by PCI device id), no NVIDIA or served AMD GPU, and a torch "
        "that is not an +xpu build.",
        why="Only the xpu builds (torch >= 2.5, from PyTorch's xpu index) can use Intel GPUs: a CPU "
        "build leaves the GPU idle, and a dependency install often swaps the xpu wheel for PyPI's.",
        fix="Install the xpu build from PyTorch's xpu index (the command is shown) and use device='xpu'.",
        example="An Arc A770 (8086:56a0) with torch 2.12.0+cpu after a package reinstalled torch from PyPI.",
    ),
)
def intel_gpu_without_xpu_torch(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    facts = ctx.need(GpuVendorFacts)
    variant = torch.variant or ""
    if not torch.imported or _xpu_build(torch) or torch.hip or not facts.xpu_gpus:
        return
    if not (variant == "cpu" or variant.startswith("cu")) or nvidia_here(ctx) or known_gfx(facts):
        return  # CUDA or ROCm is the plan there (ED201, ED152)
    plan = vendor_plan(ctx, xpu=True)
    fixes: list[Fix] = []
    found = vendor_fix(ctx, "Install the xpu build", plan)
    if found is not None:
        fixes.append(found)
    else:
        fixes.append(
            Fix(summary="Install torch's xpu build (torch >= 2.5) from PyTorch's xpu index", link=XPU_GUIDE)
        )
    kind = f"CUDA {torch.cuda}" if torch.cuda else "CPU-only"
    yield Hit(
        title=f"torch {torch.version} is a {kind} build; the {gpus_words(facts.xpu_gpus)} needs the xpu "
        "build",
        detail=f"Intel GPUs are served only by torch's xpu builds (device 'xpu', torch.xpu); torch "
        f"{torch.version} cannot use the GPU, so models run on the CPU.",
        evidence=(
            f"torch.__version__ = {torch.version}",
            *(f"{g.card}: 8086:{g.device_id[2:]} {g.xpu_family}" for g in facts.xpu_gpus),
        ),
        fixes=tuple(fixes),
    )


@rule(
    code="ED154",
    name="xpu-build-but-xpu-unavailable",
    severity=Severity.ERROR,
    summary="torch is an xpu build, but torch.xpu.is_available() is False",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="An +xpu build of torch whose torch.xpu.is_available() is False, judged with the Intel "
        "GPUs in sysfs.",
        why="Without an Intel GPU torch.xpu serves, or without Intel's GPU compute runtime (Level "
        "Zero) and access to /dev/dri, the xpu build runs on the CPU only.",
        fix="Install Intel's GPU driver packages (compute runtime, Level Zero) and add the user to "
        "the render group; on a machine without such a GPU, install the CPU build.",
        example="torch 2.8.0+xpu on an Arc A770 whose Level Zero runtime is missing: "
        "torch.xpu.is_available() returns False.",
    ),
)
def xpu_build_but_xpu_unavailable(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    xpu = torch.accelerators
    if not torch.imported or not _xpu_build(torch) or xpu is None or xpu.xpu_available is not False:
        return
    facts = ctx.get(GpuVendorFacts)
    served = facts.xpu_gpus if facts is not None else ()
    fixes: list[Fix] = []
    if served:
        provenance = known.xpu_driver_provenance()
        fixes.append(
            Fix(
                summary="Install Intel's GPU compute runtime (Level Zero and the OpenCL driver; package "
                "names as on Ubuntu 24.04 and later) and let your user open the GPU (render group), "
                "then log in again",
                commands=(
                    "sudo apt-get install -y libze1 libze-intel-gpu1 intel-opencl-icd",
                    'sudo usermod -aG render "$USER"',
                ),
                link=provenance.source[0] if provenance.source else XPU_GUIDE,
            )
        )
        detail = (
            f"The {gpus_words(served)} is one torch.xpu serves, yet torch.xpu.is_available() is False: "
            "Intel's GPU compute runtime (Level Zero) is missing, or this user cannot open /dev/dri."
        )
    elif facts is None:  # GPUs not listed here (Windows, or an older snapshot)
        detail = (
            "torch.xpu.is_available() is False: there is no Intel GPU torch.xpu serves (Arc A-series "
            "or newer, Core Ultra graphics), or its driver is missing or too old."
        )
        fixes.append(
            Fix(
                summary="Install or update Intel's GPU driver for this GPU, then check again; without such "
                "a GPU, install the CPU build",
                link=XPU_GUIDE,
            )
        )
    else:
        others = facts.intel
        what = (
            f"the Intel GPU here ({gpus_words(others)}) is not one PyTorch's XPU builds serve (Arc "
            "A-series or newer)"
            if others
            else "no Intel GPU was found"
        )
        detail = f"torch.xpu.is_available() is False: {what}, so this build runs on the CPU only."
        cpu = planned_fix(ctx, "Install the CPU build", want_cuda=False)
        if cpu is not None:
            fixes.append(cpu)
    said = "; ".join(w.splitlines()[0] for w in torch.warnings if w.strip())
    yield Hit(
        title=f"torch {torch.version} is an xpu build, but torch.xpu.is_available() is False",
        detail=detail + (f" torch said: {said}." if said else ""),
        evidence=(f"torch.version.xpu = {xpu.xpu}", "torch.xpu.is_available() = False"),
        fixes=tuple(fixes),
    )
