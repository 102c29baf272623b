"""The NVIDIA driver: present, loaded, and new enough for the CUDA build of torch that is installed."""

from __future__ import annotations

import re
from collections.abc import Iterator

from packaging.version import Version

from envdoctor import knowledge
from envdoctor.knowledge import gpu_access, parse_driver
from envdoctor.knowledge.drivers import DriverKind, driver_support
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.gpu_vendors import GpuVendorFacts
from envdoctor.probes.nvml import NvmlFacts, NvmlStatus
from envdoctor.probes.system import SystemFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules import symptoms
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import driver_fix, planned_fix
from envdoctor.rules.nvml.driver_causes import elsewhere, not_loaded_causes, open_source_holders
from envdoctor.util.records import record

_TOO_OLD = re.compile(r"NVIDIA driver on your system is too old \(found version (\d+)\)")


@record
class DriverVerdict:
    """How the installed driver relates to torch's CUDA (knowledge.drivers judges), with evidence."""

    kind: DriverKind
    torch_cuda: str
    driver: str | None
    floor: Version | None  # the lowest driver that runs it at all (MVC minimum)
    native: Version | None  # the toolkit's own minimum, where NVIDIA publishes one
    evidence: tuple[str, ...]


def too_old_warning(torch: TorchFacts) -> int | None:
    """The "found version 12080" number from torch's own driver-too-old warning, if it gave one."""
    for warning in torch.warnings:
        match = _TOO_OLD.search(warning)
        if match:
            return int(match.group(1))
    return None


def driver_verdict(ctx: RuleContext) -> DriverVerdict | None:
    """Judge the driver against torch's CUDA; None when there is nothing to compare."""
    torch = ctx.get(TorchFacts)
    nvml = ctx.get(NvmlFacts)
    if torch is None or not torch.imported or not torch.cuda:
        return None
    working = nvml if nvml is not None and nvml.working else None
    driver_text = working.driver_version if working is not None else None
    support = driver_support(
        knowledge.cuda_variant(torch.cuda),
        driver_text,
        ctx.platform.os,
        working.driver_cuda if working is not None else None,
    )
    evidence: list[str] = [f"torch.version.cuda = {torch.cuda}"]
    if driver_text:
        evidence.append(f"driver {driver_text} (CUDA {nvml.driver_cuda if nvml else '?'})")
    found = too_old_warning(torch)
    if found is not None:
        # torch's own word outranks the tables: it tried the driver and failed.
        evidence.append(f"torch warned: driver too old (found version {found})")
        kind = DriverKind.TOO_OLD
    elif parse_driver(driver_text) is None:
        return None
    else:
        kind = support.kind
    return DriverVerdict(kind, torch.cuda, driver_text, support.floor, support.toolkit, tuple(evidence))


@rule(
    code="ED101",
    name="driver-too-old-for-torch-cuda",
    severity=Severity.ERROR,
    summary="the NVIDIA driver cannot run the CUDA version torch was built with",
    needs=(TorchFacts, NvmlFacts),
    consequence_of=("ED305",),
    doc=RuleDoc(
        what="The driver version (NVML) against the minimum driver of torch's CUDA major "
        "family (minor-version compatibility), and torch's own 'driver too old' warning.",
        why="A CUDA 12 build cannot run on a CUDA 11 driver (and cu13x needs >= 580): CUDA "
        "is simply unavailable. Common after a plain `pip install -U torch` pulled a newer "
        "CUDA default than the driver supports.",
        fix="Upgrade the driver to at least the shown minimum, or install the torch variant "
        "the current driver supports (the command is shown).",
        example="driver 470.182.03 (CUDA 11.4) with torch 2.5.1+cu124: 'The NVIDIA driver on "
        "your system is too old (found version 11040)'.",
    ),
)
def driver_too_old_for_torch_cuda(ctx: RuleContext) -> Iterator[Hit]:
    verdict = driver_verdict(ctx)
    if verdict is None or verdict.kind != DriverKind.TOO_OLD:
        return
    torch = ctx.need(TorchFacts)
    need = str(verdict.floor) if verdict.floor else None
    have = f"driver {verdict.driver}" if verdict.driver else "the installed driver"
    fixes = [driver_fix(ctx, need)]
    matching = planned_fix(ctx, "Install the torch build this driver supports", want_cuda=True)
    if matching is not None:
        fixes.append(matching)
    yield Hit(
        title=f"the NVIDIA driver is too old for torch {torch.version} (CUDA {verdict.torch_cuda})",
        detail=f"{have} cannot run CUDA {verdict.torch_cuda} programs"
        + (f"; CUDA {verdict.torch_cuda.split('.')[0]}.x needs a driver >= {need}" if need else "")
        + ". torch.cuda.is_available() returns False and the first CUDA call raises "
        '"The NVIDIA driver on your system is too old".',
        evidence=verdict.evidence,
        fixes=tuple(fixes),
    )


@rule(
    code="ED102",
    name="driver-relies-on-minor-version-compat",
    severity=Severity.WARNING,
    summary="the driver runs torch's CUDA only through minor-version compatibility",
    needs=(TorchFacts, NvmlFacts),
    consequence_of=("ED305",),
    doc=RuleDoc(
        what="Whether the driver is older than the CUDA toolkit torch was built with, while "
        "still meeting the minor-version-compatibility minimum of that major version "
        "(Linux >= 525.60.13 for 12.x, >= 580 for 13.x).",
        why="Such a driver runs the build's precompiled kernels, but PTX JIT compilation "
        "and newer-driver APIs fail, which can break torch.compile, newer GPUs served by "
        "PTX, and some sparse/JIT-linked paths.",
        fix="Upgrade the driver to the toolkit's own minimum, or install the variant that "
        "matches the driver's CUDA version.",
        example="driver 550.54.14 (CUDA 12.4) with torch 2.7.1+cu126.",
    ),
)
def driver_relies_on_minor_version_compat(ctx: RuleContext) -> Iterator[Hit]:
    verdict = driver_verdict(ctx)
    if verdict is None or verdict.kind != DriverKind.COMPAT:
        return
    torch = ctx.need(TorchFacts)
    native = verdict.native
    fixes = [driver_fix(ctx, str(native) if native else None)]
    # Same torch, the variant this driver runs natively: the fix must not be the MVC build again.
    same = (torch.version or "").split("+", 1)[0] or None
    matching = planned_fix(
        ctx, "Install the build that matches the driver", want_cuda=True, torch=same, native_only=True
    )
    if matching is not None:
        fixes.append(matching)
    since = f" (native from {native})" if native else ""
    detail = (
        f"driver {verdict.driver} predates CUDA {verdict.torch_cuda}{since} but runs it through CUDA "
        f"minor-version compatibility (>= {verdict.floor}). Ordinary kernels work; PTX JIT (a GPU "
        "newer than the build's cubins, torch.compile/Triton, some cuSPARSE/nvJitLink paths) and APIs "
        "that need a newer driver can fail with cudaErrorUnsupportedPtxVersion or "
        "cudaErrorCallRequiresNewerDriver."
    )
    yield Hit(
        title=f"torch {torch.version} (CUDA {verdict.torch_cuda}) runs on this driver only with limits",
        detail=detail,
        evidence=verdict.evidence,
        fixes=tuple(fixes),
    )


_BROKEN_DRIVER = {
    NvmlStatus.VERSION_MISMATCH: (
        "the NVIDIA driver libraries and the loaded kernel module have different versions",
        "The driver was upgraded but the old kernel module is still loaded.",
        Fix(summary="Reboot to load the new kernel module", commands=("sudo reboot",)),
    ),
    NvmlStatus.NO_PERMISSION: (
        "this user may not talk to the NVIDIA driver",
        "The /dev/nvidia* device files are not accessible to this user.",
        Fix(summary="Ask an administrator to grant access to the GPU devices (video group)"),
    ),
}


_NOT_LOADED = Fix(
    summary="Load the module (or reboot); with Secure Boot, enrol the driver's key or disable Secure Boot",
    commands=("sudo modprobe nvidia", "nvidia-smi"),
)


def _not_loaded(ctx: RuleContext, nvml: NvmlFacts) -> Hit:
    """The driver is installed but its module is not loaded: the causes, ranked from the facts."""
    title = "the NVIDIA driver is installed but its kernel module is not loaded"
    if elsewhere(ctx) is not None:
        # A container's or WSL's kernel is not this system's: ED122/ED124 say what to do there.
        return Hit(
            title=title,
            detail="Often Secure Boot blocked the unsigned module, or a reboot after installing is "
            f"pending. NVML said: {nvml.error}",
            evidence=(f"nvml.status = {nvml.status}",),
            fixes=(_NOT_LOADED,),
        )
    causes = not_loaded_causes(ctx)
    detail = (
        "NVIDIA-SMI 'couldn't communicate with the NVIDIA driver': the driver's libraries are "
        f"installed but its kernel module is not loaded. NVML said: {nvml.error}. The causes, most "
        "likely first given the facts, and the command that tells each apart: "
    )
    return Hit(
        title=title,
        detail=detail + symptoms.listed(causes),
        evidence=(f"nvml.status = {nvml.status}", *symptoms.evidence(causes)),
        fixes=(
            Fix(
                summary="Load the module: if it fails, modprobe's message names the cause ('Module nvidia "
                "not found': not built for this kernel; 'Key was rejected by service': Secure Boot; "
                "'No such device': another driver holds the GPU)",
                commands=("sudo modprobe nvidia", "nvidia-smi"),
            ),
            *symptoms.cause_fixes(causes),
        ),
    )


@rule(
    code="ED103",
    name="gpu-without-working-driver",
    severity=Severity.ERROR,
    summary="an NVIDIA GPU is present but the driver is missing, not loaded or mismatched",
    needs=(NvmlFacts,),
    # A driver inside the image, a Linux driver inside WSL, and the host causes that name why the
    # module is not loaded or mismatched (driver_module.py).
    consequence_of=(
        "ED122",
        "ED124",
        "ED130",
        "ED131",
        "ED132",
        "ED133",
        "ED134",
        "ED175",
        "ED176",
        "ED178",
    ),
    doc=RuleDoc(
        what="NVML's status: library not found while an NVIDIA display controller is on the "
        "PCI bus, driver not loaded, driver/library version mismatch, or no permission.",
        why="Without a working driver no CUDA program runs, whatever torch build is installed. "
        "'NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver' has several "
        "causes: where the facts confirm one its own finding says it; otherwise this one lists them, "
        "most likely first, with the command that tells each apart.",
        fix="Install the driver (or pass it into the container), load the kernel module, or "
        "reboot after a driver upgrade, as the finding says.",
        example="nvidia-smi: 'Failed to initialize NVML: Driver/library version mismatch' "
        "after an unattended driver upgrade.",
    ),
)
def gpu_without_working_driver(ctx: RuleContext) -> Iterator[Hit]:
    nvml = ctx.need(NvmlFacts)
    if nvml.working:
        return
    if nvml.status == NvmlStatus.DRIVER_NOT_LOADED:
        yield _not_loaded(ctx, nvml)
        return
    if nvml.status in _BROKEN_DRIVER:
        title, why, fix = _BROKEN_DRIVER[nvml.status]
        yield Hit(
            title=title,
            detail=f"{why} NVML said: {nvml.error}",
            evidence=(f"nvml.status = {nvml.status}",),
            fixes=(fix,),
        )
        return
    if nvml.status == NvmlStatus.LIBRARY_NOT_FOUND and nvml.pci_nvidia_devices:
        system = ctx.get(SystemFacts)
        detail = (
            f"{len(nvml.pci_nvidia_devices)} NVIDIA GPU(s) are on the PCI bus "
            f"({', '.join(nvml.pci_nvidia_devices)}), but the driver library (libnvidia-ml) cannot "
            "be loaded, so no program can use them."
        )
        holders = open_source_holders(nvml.host) if nvml.host is not None else ()
        if holders:
            detail += (
                f" {', '.join(holders)} runs on the open-source driver, which has no CUDA (and no "
                "nvidia-smi): the NVIDIA driver is what CUDA needs, and its packages blacklist nouveau."
            )
        fixes: tuple[Fix, ...] = (driver_fix(ctx),)
        if system is not None and system.container:
            detail += (
                f" Inside a {system.container} container the host's driver must be passed in "
                "(docker run --gpus all with the NVIDIA Container Toolkit)."
            )
            # Not a driver install inside the container: the runtime's way to pass the GPU in.
            fixes = gpu_access.gpu_access_fixes(system.container)
        yield Hit(
            title="an NVIDIA GPU is present but no NVIDIA driver works",
            detail=detail,
            evidence=("nvml.status = library_not_found", "nvml.pci_nvidia_devices"),
            fixes=fixes,
        )


@rule(
    code="ED104",
    name="no-nvidia-gpu",
    severity=Severity.INFO,
    summary="no NVIDIA GPU or driver was found; torch runs on the CPU",
    needs=(NvmlFacts,),
    consequence_of=("ED121", "ED123", "ED124"),  # a container without the GPU, WSL 1, WSL 2 broken
    doc=RuleDoc(
        what="Whether the machine has no NVIDIA driver and no NVIDIA GPU on the PCI bus.",
        why="Says plainly that CPU-only is the expected state here, so nobody chases a GPU "
        "problem that does not exist.",
        fix="Nothing to fix; for GPU work use a machine with an NVIDIA GPU and driver.",
        example="A laptop with integrated graphics, a CI runner, or a container started without --gpus.",
    ),
)
def no_nvidia_gpu(ctx: RuleContext) -> Iterator[Hit]:
    nvml = ctx.need(NvmlFacts)
    if nvml.status != NvmlStatus.LIBRARY_NOT_FOUND or nvml.pci_nvidia_devices:
        return
    if nvml.host is not None and nvml.host.jetson:
        return  # a Jetson's GPU is integrated (no PCI, no NVML): the jetson rules judge it
    vendors = ctx.get(GpuVendorFacts)
    if vendors is not None and (vendors.amd or vendors.xpu_gpus):
        return  # an AMD or Intel GPU torch can use: "no GPU" would be wrong (the gpu_vendors area)
    torch = ctx.get(TorchFacts)
    system = ctx.get(SystemFacts)
    detail = "torch will run on the CPU."
    if torch is not None and torch.imported and torch.cuda:
        detail += (
            f" The installed torch is a CUDA {torch.cuda} build, which works on the CPU too "
            "but is several GB larger than the CPU build."
        )
    if system is not None and system.wsl:
        detail += " On WSL the GPU driver is the Windows driver: install it on Windows, not inside WSL."
    causes = symptoms.ranked(ctx, "ED104")
    if causes:
        detail += " If this machine should have a GPU, the usual reasons it is not seen: " + symptoms.listed(
            causes
        )
    yield Hit(
        title="no NVIDIA GPU or driver found",
        detail=detail,
        evidence=("nvml.status = library_not_found", *symptoms.evidence(causes)),
        fixes=symptoms.cause_fixes(causes, without=("no-nvidia-gpu",)),  # that one has nothing to fix
    )


def _system(ctx: RuleContext) -> SystemFacts | None:
    return ctx.get(SystemFacts)


@symptoms.reads("ED104", "no-nvidia-gpu")
def _no_gpu(ctx: RuleContext) -> symptoms.Reading:
    return symptoms.Reading(symptoms.Likelihood.LIKELY)  # NVML and the PCI bus both show none


@symptoms.reads("ED104", "container")
def _in_container(ctx: RuleContext) -> symptoms.Reading:
    system = _system(ctx)
    if system is None:
        return symptoms.POSSIBLE
    return symptoms.Reading(symptoms.Likelihood.LIKELY) if system.container else symptoms.RULED_OUT


@symptoms.reads("ED104", "wsl")
def _in_wsl(ctx: RuleContext) -> symptoms.Reading:
    system = _system(ctx)
    if system is None:
        return symptoms.POSSIBLE
    return symptoms.Reading(symptoms.Likelihood.LIKELY) if system.wsl else symptoms.RULED_OUT


@symptoms.reads("ED104", "virtual-machine")
@symptoms.reads("ED104", "gpu-off")
def _not_in_wsl_or_container(ctx: RuleContext) -> symptoms.Reading:
    system = _system(ctx)
    if system is not None and (system.wsl or system.container):
        return symptoms.RULED_OUT  # the GPU would come through WSL or the container runtime
    return symptoms.POSSIBLE
