"""A CUDA build that cannot use the GPU although the driver looks fine (ED203): one symptom, many
causes. The causes, their checks and fixes are data (knowledge/symptoms.json); the readers here say
what this machine's facts make of each, so the list comes out most likely first."""

from __future__ import annotations

import re
from collections.abc import Iterator

from envdoctor.knowledge.drivers import DriverKind
from envdoctor.model.findings import Severity
from envdoctor.probes.gpu_access import GpuAccessFacts
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.system import SystemFacts
from envdoctor.probes.toolkit import ToolkitFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules import symptoms
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import unset_command
from envdoctor.rules.fixes import driver_fix
from envdoctor.rules.nvml.driver import driver_verdict
from envdoctor.rules.symptoms import POSSIBLE, RULED_OUT, Likelihood, Reading, reads

CODE = "ED203"
# At most this many causes are listed in the finding; the rest are in `envdoctor explain ED203`.
SHOWN = 6

# CUDA's own error numbers as torch's initialisation warning prints them ("Error 803: ...").
_CUDA_ERROR = re.compile(r"Error (\d+): ([^\n(]+)")


def _errors(ctx: RuleContext) -> dict[int, str] | None:
    """The CUDA error numbers torch's warnings name, with their words; None when torch warned nothing."""
    torch = ctx.get(TorchFacts)
    if torch is None or not torch.warnings:
        return None
    found: dict[int, str] = {}
    for text in torch.warnings:
        for match in _CUDA_ERROR.finditer(text):
            found.setdefault(int(match.group(1)), match.group(2).strip())
    return found


def _named_error(ctx: RuleContext, number: int, title: str) -> Reading | None:
    """CONFIRMED where torch's warning names CUDA error `number`, RULED_OUT where it names another."""
    errors = _errors(ctx)
    if errors is None or not errors:
        return None
    if number in errors:
        return Reading(Likelihood.CONFIRMED, title=f"CUDA says 'Error {number}: {errors[number]}': {title}")
    return RULED_OUT


@reads(CODE, "visible-devices")
def _visible_devices(ctx: RuleContext) -> Reading:
    torch = ctx.get(TorchFacts)
    nvml = ctx.get(NvmlFacts)
    hidden = torch.cuda_visible_devices if torch is not None else None
    if hidden is None:
        return RULED_OUT  # the torch child reads it: unset
    gpus = len(nvml.gpus) if nvml is not None else 0
    numbers = [int(p) for p in (p.strip() for p in hidden.split(",")) if p.isdigit()]
    likelihood = Likelihood.CONFIRMED
    if not hidden.strip() or hidden.strip() == "-1":
        title = f"CUDA_VISIBLE_DEVICES={hidden!r} hides every GPU from CUDA"
    elif numbers and max(numbers) >= gpus:
        title = (
            f"CUDA_VISIBLE_DEVICES={hidden!r} names GPU {max(numbers)}, but this machine has {gpus} "
            f"(numbered 0 to {gpus - 1}); CUDA stops at the first index that does not exist"
        )
    else:
        title, likelihood = (
            f"CUDA_VISIBLE_DEVICES={hidden!r} decides which GPUs torch may see",
            Likelihood.LIKELY,
        )
    title += (
        " (scripts and notebooks often set it: os.environ['CUDA_VISIBLE_DEVICES'] or an export in "
        "the launch script)"
    )
    unset = unset_command(ctx.platform.os, None, "CUDA_VISIBLE_DEVICES")
    return Reading(likelihood, title=title, commands=(unset,))


@reads(CODE, "module-mismatch")
def _module_mismatch(ctx: RuleContext) -> Reading:
    named = _named_error(ctx, 803, "the driver's libraries and its loaded kernel module differ")
    return named or POSSIBLE


@reads(CODE, "uvm-missing")
def _uvm_missing(ctx: RuleContext) -> Reading:
    access = ctx.get(GpuAccessFacts)
    if access is not None and access.wsl:
        return RULED_OUT  # WSL has no /dev/nvidia-uvm: CUDA goes through /dev/dxg
    if access is not None and "/dev/nvidia-uvm" in access.device_files:
        return RULED_OUT
    errors = _errors(ctx)
    if errors and 999 in errors:
        return Reading(Likelihood.LIKELY)  # 'unknown error' is how a missing uvm device shows
    return RULED_OUT if errors else POSSIBLE


@reads(CODE, "forward-compat")
def _forward_compat(ctx: RuleContext) -> Reading:
    named = _named_error(ctx, 804, "a cuda-compat libcuda loads on a GPU that does not support it")
    if named is not None:
        return named
    access = ctx.get(GpuAccessFacts)
    if access is not None and access.libcuda is not None and not access.compat_folders:
        return RULED_OUT  # the loader's libcuda folders were read and none is a compat folder
    return POSSIBLE


@reads(CODE, "stub-libcuda")
def _stub(ctx: RuleContext) -> Reading:
    named = _named_error(ctx, 34, "a toolkit's stub libcuda loads instead of the driver's")
    if named is not None:
        return named
    toolkit = ctx.get(ToolkitFacts)
    if toolkit is not None and not any("stubs" in c.directory for c in toolkit.loader_path_libraries):
        return RULED_OUT
    return POSSIBLE


@reads(CODE, "minor-compat")
def _minor_compat(ctx: RuleContext) -> Reading:
    verdict = driver_verdict(ctx)
    if verdict is None:
        return POSSIBLE
    if verdict.kind != DriverKind.COMPAT:
        return RULED_OUT
    native = verdict.native
    title = (
        f"driver {verdict.driver} is older than CUDA {verdict.torch_cuda}'s own minimum"
        + (f" ({native})" if native else "")
        + " and runs it only through minor-version compatibility; where that does not hold "
        "(Windows drivers, PTX, newer APIs) CUDA does not start"
    )
    return Reading(Likelihood.LIKELY, title=title, fix=driver_fix(ctx, str(native) if native else None))


@reads(CODE, "container")
def _container(ctx: RuleContext) -> Reading:
    system = ctx.get(SystemFacts)
    access = ctx.get(GpuAccessFacts)
    container = (system.container if system else None) or (access.container if access else None)
    if container:
        return Reading(
            Likelihood.LIKELY,
            title=f"this runs in a {container} container, which sees GPUs only when started with them "
            "(docker run --gpus all, or the runtime's device request)",
        )
    return RULED_OUT if system is not None else POSSIBLE


@reads(CODE, "scheduler")
def _scheduler(ctx: RuleContext) -> Reading:
    access = ctx.get(GpuAccessFacts)
    if access is None:
        return POSSIBLE
    if access.slurm_job:
        return Reading(Likelihood.LIKELY if not access.slurm_gpus else Likelihood.POSSIBLE)
    system = ctx.get(SystemFacts)
    if system is not None and system.container == "kubernetes":
        return POSSIBLE
    return RULED_OUT


@reads(CODE, "loader-path")
def _loader_path(ctx: RuleContext) -> Reading:
    toolkit = ctx.get(ToolkitFacts)
    if toolkit is None:
        return POSSIBLE
    if not toolkit.loader_path_libraries:
        return RULED_OUT
    foreign = [c for c in toolkit.loader_path_libraries if c.family == "cudart"] or list(
        toolkit.loader_path_libraries
    )
    return Reading(
        Likelihood.LIKELY,
        title=f"LD_LIBRARY_PATH puts other CUDA libraries before torch's own ({foreign[0].family} in "
        f"{foreign[0].directory})",
    )


@reads(CODE, "fabric-manager")
def _fabric_manager(ctx: RuleContext) -> Reading:
    errors = _errors(ctx)
    if errors and 802 in errors:
        return Reading(Likelihood.CONFIRMED)
    nvml = ctx.get(NvmlFacts)
    host = nvml.host if nvml is not None else None
    if nvml is not None and nvml.working and (host is None or (host.nvswitches == 0 and not host.gpu_fabric)):
        # The probe reads the host's NVSwitch and fabric facts whenever there is an NVSwitch to see.
        return RULED_OUT
    return RULED_OUT if errors else POSSIBLE


@reads(CODE, "exclusive-process")
def _exclusive(ctx: RuleContext) -> Reading:
    access = ctx.get(GpuAccessFacts)
    if access is not None and access.gpu_states:
        modes = {state.compute_mode for state in access.gpu_states}
        if modes <= {"default", None}:
            return RULED_OUT
        return Reading(Likelihood.LIKELY)
    return POSSIBLE


@reads(CODE, "broken-driver")
def _broken_driver(ctx: RuleContext) -> Reading:
    return Reading(Likelihood.POSSIBLE, fix=driver_fix(ctx))


@rule(
    code=CODE,
    name="cuda-build-but-cuda-unavailable",
    severity=Severity.ERROR,
    summary="a CUDA build of torch cannot use the GPU although the driver looks fine",
    needs=(TorchFacts, NvmlFacts),
    # A retired GPU; or the device and module states of the nvml area (WSL, uvm, exclusive, MIG).
    # The causes other rules name exactly: a GPU too old, WSL and device state, a CUDA_VISIBLE_DEVICES
    # hiding the GPU, a container's CUDA (804, compat libraries, no libcuda, access revoked), a
    # Slurm job without a GPU, WSL's libcuda and kernel, NVSwitch's Fabric Manager.
    consequence_of=(
        "ED305",
        "ED124",
        "ED125",
        "ED126",
        "ED127",
        "ED128",
        "ED135",
        "ED160",
        "ED170",
        "ED171",
        "ED172",
        "ED174",
        "ED178",
        "ED179",
        "ED180",
        "ED181",
    ),
    doc=RuleDoc(
        what="A CUDA build, NVML sees GPUs, the driver is not too old, and yet torch.cuda.is_available() is "
        "False; the finding lists the usual causes, most likely first given the facts (CUDA_VISIBLE_DEVICES, "
        "the CUDA error torch's warning names, a driver running the build only through minor-version "
        "compatibility, a container, a batch job, LD_LIBRARY_PATH, a broken driver), each with the command "
        "that tells it apart and its fix; what the facts rule out is left out.",
        why="The symptom is one, the causes are many, and the usual advice (reinstall torch) fixes none of "
        "them; torch's own warning and the environment usually say which it is.",
        fix="Run the command of the first cause listed; if it shows that cause, apply its fix, else go on "
        "to the next.",
        example="CUDA_VISIBLE_DEVICES=2 set in a training script on a machine with one GPU: 'RuntimeError: "
        "No CUDA GPUs are available'.",
    ),
)
def cuda_build_but_cuda_unavailable(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    nvml = ctx.get(NvmlFacts)
    if not torch.imported or not torch.cuda or torch.cuda_available is not False:
        return
    if nvml is None or not nvml.working or not nvml.gpus:
        return  # no GPU (ED104) or a broken driver (ED103) explains it already
    verdict = driver_verdict(ctx)
    if verdict is not None and verdict.kind == DriverKind.TOO_OLD:
        return  # ED101 explains it
    said = "; ".join(w.splitlines()[0] for w in torch.warnings) or "no warning was printed"
    evidence = ["torch.cuda_available = false", "nvml.gpus", *(w[:200] for w in torch.warnings)]
    if torch.cuda_visible_devices is not None:
        evidence.append(f"CUDA_VISIBLE_DEVICES={torch.cuda_visible_devices!r}")
    causes = symptoms.ranked(ctx, CODE)
    shown = causes[:SHOWN]
    more = (
        f" {len(causes) - SHOWN} rarer causes are in `envdoctor explain {CODE}`."
        if len(causes) > SHOWN
        else ""
    )
    yield Hit(
        title=f"torch {torch.version} is a CUDA build but torch.cuda.is_available() is False",
        detail=f"NVML sees {len(nvml.gpus)} GPU(s) and the driver is not too old for CUDA {torch.cuda}, yet "
        f"torch cannot initialise CUDA. torch said: {said}. Likely causes, most likely first: "
        f"{symptoms.listed(shown)}{more}",
        evidence=(*evidence, *symptoms.evidence(shown)),
        fixes=symptoms.cause_fixes(shown),
    )
