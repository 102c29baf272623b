"""Intel GPUs: an Intel GPU torch.xpu serves beside a build without XPU (ED153), an xpu build that
cannot use the GPU (ED154), and an Intel Extension for PyTorch wheel beside another oneAPI release
than the one it was built against (ED158)."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.knowledge import gpu_vendors as known
from envdoctor.knowledge import oneapi
from envdoctor.knowledge.signatures import ErrorEvidence
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.gpu_vendors import GpuVendorFacts, VendorGpu
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
ONEAPI_DOWNLOADS = "https://www.intel.com/content/www/us/en/developer/tools/oneapi/base-toolkit-download.html"
IPEX_GUIDE = "https://intel.github.io/intel-extension-for-pytorch/"


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
    if facts.ipex_version and "xpu" in facts.ipex_version:
        return  # Intel Extension for PyTorch's xpu build brings torch.xpu to its own torch (ED158)
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


def _built_without_xpu(ctx: RuleContext, torch: TorchFacts, served: tuple[VendorGpu, ...]) -> Hit:
    fixes: list[Fix] = []
    found = vendor_fix(
        ctx,
        "Reinstall torch from PyTorch's xpu index (a release, or another night's build)",
        vendor_plan(ctx, xpu=True),
    )
    fixes.append(
        found
        if found is not None
        else Fix(summary="Reinstall torch's xpu build from PyTorch's xpu index", link=XPU_GUIDE)
    )
    gpus = f" the {gpus_words(served)} waits" if served else " no GPU is used"
    return Hit(
        title=f"torch {torch.version} is labelled +xpu, but it was built without XPU",
        detail=f"torch.version.xpu is None: this wheel carries no XPU code (torch.xpu._is_compiled() is "
        f"False), as some nightlies on the xpu index did, so torch.xpu.is_available() is False and{gpus}. "
        "No driver or runtime change helps: only another wheel.",
        evidence=(
            f"torch.__version__ = {torch.version}",
            "torch.version.xpu = None",
            "torch.xpu.is_available() = False",
        ),
        fixes=tuple(fixes),
    )


@rule(
    code="ED154",
    name="xpu-build-but-xpu-unavailable",
    severity=Severity.ERROR,
    summary="torch is an xpu build, but torch.xpu.is_available() is False",
    needs=(TorchFacts,),
    consequence_of=("ED157",),
    doc=RuleDoc(
        what="An +xpu build of torch whose torch.xpu.is_available() is False, judged with the Intel "
        "GPUs in sysfs and with torch.version.xpu (None in a wheel built without XPU).",
        why="Without an Intel GPU torch.xpu serves, or without Intel's GPU compute runtime (Level "
        "Zero) and access to /dev/dri, the xpu build runs on the CPU only; some nightlies on the xpu "
        "index shipped without XPU compiled in at all (torch.xpu._is_compiled() False).",
        fix="Install Intel's GPU driver packages (compute runtime, Level Zero) and add the user to "
        "the render group; reinstall a wheel built without XPU from the xpu index; on a machine "
        "without such a GPU, install the CPU build.",
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
    if torch.variant == "xpu" and xpu.xpu is None:
        yield _built_without_xpu(ctx, torch, served)
        return
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
        again = vendor_fix(
            ctx,
            "Reinstall torch from PyTorch's xpu index, which brings the oneAPI runtime wheels the xpu "
            "build needs (a wheel installed without them, or from elsewhere, finds no device)",
            vendor_plan(ctx, xpu=True),
        )
        if again is not None:
            fixes.append(again)
        detail = (
            f"The {gpus_words(served)} is one torch.xpu serves, yet torch.xpu.is_available() is False: "
            "Intel's GPU compute runtime (Level Zero) is missing, this user cannot open /dev/dri, or "
            "torch came without the oneAPI runtime wheels it needs."
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
    said = "; ".join(w.splitlines()[0].rstrip(".") for w in torch.warnings if w.strip())
    yield Hit(
        title=f"torch {torch.version} is an xpu build, but torch.xpu.is_available() is False",
        detail=detail + (f" torch said: {said}." if said else ""),
        evidence=(f"torch.version.xpu = {xpu.xpu}", "torch.xpu.is_available() = False"),
        fixes=tuple(fixes),
    )


def _oneapi_words(versions: tuple[str, ...]) -> str:
    return ", ".join(versions) if versions else "none under /opt/intel/oneapi"


@rule(
    code="ED158",
    name="ipex-oneapi-release-mismatch",
    severity=Severity.ERROR,
    summary="the Intel Extension for PyTorch wheel needs another oneAPI Base Toolkit than the one installed",
    needs=(GpuVendorFacts,),
    doc=RuleDoc(
        what="The intel_extension_for_pytorch +xpu release in the environment against the oneAPI Base "
        "Toolkit release it was built with (its installation guide), and the releases installed under "
        "/opt/intel/oneapi; or an import error naming a oneAPI library that is missing.",
        why="Before torch's own xpu builds, IPEX's xpu wheels linked against one basekit release's DPC++ "
        "runtime and oneMKL: with another release installed and sourced, the import fails "
        "('libmkl_sycl.so.3: cannot open shared object file' once 2024.0 replaced 2023.2).",
        fix="Install the basekit release the wheel was built for beside the one you have and source its "
        "setvars.sh before Python starts, or install the IPEX release built for your basekit; current "
        "torch xpu builds need neither IPEX nor a basekit.",
        example="intel-extension-for-pytorch 2.1.10+xpu on a host with oneAPI 2023.2 only: the import "
        "misses an MKL library; IPEX 2.1 wants basekit 2024.0.",
    ),
)
def ipex_oneapi_release_mismatch(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(GpuVendorFacts)
    evidence = ctx.get(ErrorEvidence)
    said = evidence.get("oneapi-library-missing") if evidence is not None else None
    installed = facts.oneapi_versions
    need = oneapi.ipex_oneapi(facts.ipex_version) if facts.ipex_version else None
    if need is not None and installed and not any(oneapi.oneapi_matches(v, need.oneapi) for v in installed):
        mismatch = True
    elif said is not None:
        mismatch = True
        library = said.group("library") or ""
        need = need or oneapi.library_oneapi(library)
    else:
        mismatch = False
    if not mismatch or ctx.platform.os != "linux":
        return
    ipex = (
        f"intel_extension_for_pytorch {facts.ipex_version}"
        if facts.ipex_version
        else "intel_extension_for_pytorch"
    )
    wanted = need.oneapi if need is not None else None
    detail = f"{ipex} was built against "
    detail += f"oneAPI Base Toolkit {wanted}" if wanted else "another oneAPI Base Toolkit release"
    detail += f"; installed: {_oneapi_words(installed)}."
    if said is not None:
        detail += f" Its import fails: {said.excerpt}"
        if need is not None and need.library:
            detail += f" ({need.library} ships with the {need.oneapi} basekits only)."
    fixes = [
        Fix(
            summary=(
                f"Install the oneAPI Base Toolkit {wanted} beside the one you have (Intel's offline "
                "installer, or its apt/yum repository) and source its setvars.sh before Python starts (with "
                "several releases installed, setvars.sh --config names the one to use)"
                if wanted
                else "Install the oneAPI Base Toolkit release your IPEX wheel was built for and source its "
                "setvars.sh before Python starts"
            ),
            commands=("source /opt/intel/oneapi/setvars.sh",),
            link=ONEAPI_DOWNLOADS,
        ),
        Fix(
            summary="Install the intel_extension_for_pytorch release built for your basekit (its "
            "installation guide names the pair), or move to torch's own xpu build (2.5 or later), which "
            "needs neither",
            link=IPEX_GUIDE,
        ),
    ]
    yield Hit(
        title=f"{ipex} needs oneAPI {wanted or 'another release'}; this machine has "
        f"{_oneapi_words(installed)}",
        detail=detail,
        evidence=(
            f"intel_extension_for_pytorch = {facts.ipex_version or 'unknown'}",
            f"/opt/intel/oneapi/compiler: {_oneapi_words(installed)}",
            *((f"{said.source}, line {said.line}: {said.excerpt}",) if said is not None else ()),
        ),
        fixes=tuple(fixes),
    )
