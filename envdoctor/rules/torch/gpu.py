"""The GPU's architecture against the build, and what the smoke test saw when kernels really ran."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from envdoctor import knowledge
from envdoctor.install import plan as install
from envdoctor.knowledge import gpu_compute
from envdoctor.knowledge.archs import Capability, dotted, sm
from envdoctor.knowledge.drivers import DriverKind, driver_support
from envdoctor.knowledge.mirrors import official_wheel_url
from envdoctor.model.findings import Fix, FixKind, Severity
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.probes.torch_smoke import DeviceKind, SmokeDevice, SmokeStep, StepStatus
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import GET_STARTED, driver_fix, install_target, plan_fix, planned_fix
from envdoctor.shell import join

# torch's own warnings name the GPU's capability; they are a source of it when nothing else is.
_CUBIN_WARNING = re.compile(r"(?P<name>[^\n]+?) with CUDA capability sm_(?P<cc>\d+) is not compatible")
_CAPABILITY_WARNING = re.compile(
    r"Found GPU\d+ (?P<name>.+?) which is of (?:cuda|compute) capability (?:\(CC\) )?"
    r"(?P<major>\d+)\.(?P<minor>\d+)"
)
_ARCH_WARNING_WORDS = ("is not compatible with the current PyTorch", "which is of cuda capability")


@dataclass(frozen=True)
class SeenGpu:
    name: str
    capability: Capability
    source: str  # torch, nvml, or "torch's warning"


def _from_sm(digits: str) -> Capability:
    """ "120" -> 12.0, "86" -> 8.6: the last digit is the minor version."""
    return int(digits[:-1]), int(digits[-1])


def seen_gpus(ctx: RuleContext) -> tuple[SeenGpu, ...]:
    """Every distinct GPU capability torch, NVML or torch's warnings reported."""
    torch = ctx.get(TorchFacts)
    nvml = ctx.get(NvmlFacts)
    found: dict[Capability, SeenGpu] = {}

    def add(name: str | None, capability: Capability, source: str) -> None:
        found.setdefault(capability, SeenGpu(name or "the GPU", capability, source))

    if torch is not None:
        for device in torch.devices:
            if device.capability:
                add(device.name, device.capability, "torch")
    if nvml is not None and nvml.working:
        for gpu in nvml.gpus:
            if gpu.capability:
                add(gpu.name, gpu.capability, "nvml")
    if torch is not None:
        for text in torch.warnings:
            for match in _CUBIN_WARNING.finditer(text):
                add(match.group("name").strip(), _from_sm(match.group("cc")), "torch's warning")
            for match in _CAPABILITY_WARNING.finditer(text):
                cc = (int(match.group("major")), int(match.group("minor")))
                add(match.group("name").strip(), cc, "torch's warning")
    return tuple(found.values())


def _arch_warning(torch: TorchFacts) -> str | None:
    for text in torch.warnings:
        if any(word in text for word in _ARCH_WARNING_WORDS):
            return text
    return None


def _smoke_devices(torch: TorchFacts, capability: Capability) -> tuple[SmokeDevice, ...]:
    if torch.smoke is None:
        return ()
    return tuple(d for d in torch.smoke.devices if d.capability is not None and d.capability == capability)


def uncovered_gpus(ctx: RuleContext) -> tuple[SeenGpu, ...]:
    """GPUs for which this CUDA build has neither a cubin nor usable PTX (before any kernel runs)."""
    torch = ctx.get(TorchFacts)
    if torch is None or not torch.imported or not torch.cuda or torch.hip:
        return ()
    arch = gpu_compute.parse_arch_list(torch.arch_list)
    if not arch:
        return ()  # no arch list to judge against
    missing = []
    for gpu in seen_gpus(ctx):
        if gpu_compute.serving_entry(arch, gpu.capability) is not None:
            continue
        matmuls = [d.step("matmul_fp32") for d in _smoke_devices(torch, gpu.capability)]
        if any(step is not None and step.status == StepStatus.OK for step in matmuls):
            continue  # kernels demonstrably ran: the build knows better than the table
        missing.append(gpu)
    return tuple(missing)


def _platform(ctx: RuleContext) -> str:
    return knowledge.platform_key(ctx.platform.os, ctx.platform.machine)


def _planned_runs_on(ctx: RuleContext, plan: install.InstallPlan, capability: Capability) -> bool:
    """False when the planner proposes a CUDA build that envdoctor's data says lacks kernels for the GPU.

    The planner sees only the GPUs NVML reports; this one may be known from torch or its warnings.
    A release newer than the data is judged by the newest known build of the same variant: arch
    lists change per variant, rarely within one.
    """
    if plan.torch is None or plan.variant is None or not plan.variant.startswith("cu"):
        return True
    series = ".".join(plan.torch.split(".")[:2])
    build = gpu_compute.closest_build(series, plan.variant, _platform(ctx))
    return build is None or build.runs_on(capability)


def _fallback_fix(ctx: RuleContext, capability: Capability) -> Fix | None:
    """The newest official build with kernels for the GPU whose CUDA the driver runs."""
    support = gpu_compute.support_for(capability, _platform(ctx))
    nvml = ctx.get(NvmlFacts)
    working = nvml if nvml is not None and nvml.working else None
    driver = working.driver_version if working is not None else None
    driver_cuda = working.driver_cuda if working is not None else None
    for build in reversed(support.builds):
        cuda = knowledge.variant_cuda(build.variant)
        if driver_support(build.variant, driver, ctx.platform.os, driver_cuda).kind == DriverKind.TOO_OLD:
            continue
        releases = [r for r in knowledge.release_series(build.series) if cuda in r.cuda]
        if not releases:
            continue
        release = releases[-1]
        packages = [f"torch=={release.torch}"]
        if release.torchvision:
            packages.append(f"torchvision=={release.torchvision}")
        target = install_target(ctx, want_cuda=True)
        argv = [
            *target.python_launcher,
            "install",
            *packages,
            "--index-url",
            official_wheel_url(build.variant),
        ]
        return Fix(
            summary=f"Install torch {release.torch} ({build.variant}), which has kernels for "
            f"{sm(capability)}",
            commands=(join(argv, ctx.platform.os),),
            link=GET_STARTED,
            kind=FixKind.INSTALL,
        )
    return None


def arch_fixes(ctx: RuleContext, capability: Capability) -> tuple[Fix, ...]:
    plan = install.plan(install_target(ctx, want_cuda=True))
    planned = plan_fix(ctx, plan, f"Install a build with kernels for {sm(capability)}")
    if planned is not None and _planned_runs_on(ctx, plan, capability):
        return (planned,)
    fallback = _fallback_fix(ctx, capability)
    return (fallback,) if fallback is not None else ()


def _arch_list_text(torch: TorchFacts) -> str:
    return " ".join(torch.arch_list) or "(none)"


def _first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else ""


@rule(
    code="ED301",
    name="gpu-arch-not-in-build",
    severity=Severity.ERROR,
    summary="the installed torch has no kernels (cubin or PTX) for this GPU's architecture",
    needs=(TorchFacts,),
    consequence_of=("ED305",),
    doc=RuleDoc(
        what="Each GPU's compute capability (from torch, NVML, or torch's own 'sm_XX is not "
        "compatible' warning) against torch.cuda.get_arch_list(), with NVIDIA's rule: a cubin "
        "for sm_XY runs on sm_XZ with Z >= Y of the same major, PTX compute_XY on any GPU >= "
        "X.Y, and the Jetson/Tegra parts (5.3, 6.2, 7.2, 8.7, 10.1) run only their own cubins.",
        why="is_available() says True, and then every kernel fails with 'no kernel image is "
        "available for execution on the device'. Typical: an RTX 50xx (sm_120) with a cu124 "
        "or cu126 build, a Pascal card with a cu128 build, a Kepler card with anything newer "
        "than torch 2.7 cu118.",
        fix="Install a variant whose arch list covers the GPU (the finding names the minimum "
        "torch and variants and gives the command), or build from source with TORCH_CUDA_ARCH_LIST.",
        example="RTX 5090 (sm_120) with torch 2.6.0+cu124: arch list sm_50 ... sm_90, no PTX.",
    ),
)
def gpu_arch_not_in_build(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    warning = _arch_warning(torch)
    for gpu in uncovered_gpus(ctx):
        cc = gpu.capability
        detail = (
            f"{gpu.name} has compute capability {dotted(cc)} ({sm(cc)}). torch {torch.version} carries "
            f"kernels for {_arch_list_text(torch)} and no PTX that could be compiled for it (a "
            "cubin runs only on GPUs of its own major version with an equal or higher minor, PTX "
            "only on equal or newer GPUs). torch.cuda.is_available() can still say True, but every "
            'kernel fails with "CUDA error: no kernel image is available for execution on the '
            f'device". {gpu_compute.support_for(cc, _platform(ctx)).summary()}.'
        )
        evidence = [f"torch.cuda.get_arch_list() = {_arch_list_text(torch)}", f"{sm(cc)} (from {gpu.source})"]
        if warning:
            detail += f' torch itself warned: "{_first_line(warning)}"'
            evidence.append(_first_line(warning)[:200])
        confirmed: dict[tuple[str, str], list[str]] = {}
        for device in _smoke_devices(torch, cc):
            failed = [s for s in device.problems if s.error is not None]
            if failed:
                step = failed[0]
                message = _first_line(step.error.message) if step.error else ""
                confirmed.setdefault((step.label, message), []).append(device.device)
                evidence.append(f"smoke {device.device} {step.step}: {step.status}")
        for (label, message), labels in confirmed.items():
            detail += f' The smoke test confirmed it: {label} on {", ".join(labels)} failed with "{message}".'
        yield Hit(
            title=f"torch {torch.version} has no kernels for {gpu.name} ({sm(cc)})",
            detail=detail,
            evidence=tuple(evidence),
            fixes=arch_fixes(ctx, cc),
        )


# -- smoke-test failures ---------------------------------------------------------------------

_CAUSES = {
    "arch": "the build has no kernels for this GPU's architecture",
    "busy": "the GPU refuses a new CUDA context: it is in exclusive-process compute mode and "
    "another process holds it, or it is not really available to this process (container, VM or "
    "MIG setup). is_available() only counts devices; it does not create a context",
    "ptx_toolchain": "the build's PTX is newer than the driver's JIT compiler understands",
    "device_fault": "the GPU faulted while running a plain, correct kernel: this points at the driver "
    "or the hardware (the kernel log shows NVIDIA Xid errors), not at your code",
    "library": "a cuBLAS/cuDNN library other than the one torch ships was loaded (a system CUDA on "
    "the loader path), or it does not support this GPU",
    "wrong_result": "the device computed wrong numbers without raising an error: faulty or "
    "overheating hardware, unstable clocks (overclocking, undervolting), or a driver/library bug",
    "cpu": "torch's CPU kernels (BLAS, oneDNN) failed: a damaged install, or a foreign BLAS or "
    "OpenMP library loaded in their place",
    None: "not one envdoctor recognises; re-running with CUDA_LAUNCH_BLOCKING=1 makes the error "
    "appear at the call that caused it",
}


def smoke_cause(device: SmokeDevice, step: SmokeStep) -> str | None:
    """Why a step failed, from its error text: one of _CAUSES' keys (memory is ED303's)."""
    if not device.gpu:
        return "cpu"
    if step.status == StepStatus.WRONG:
        return "wrong_result"
    return gpu_compute.kernel_error_cause(step.error.message if step.error else "")


def _launch_blocking(ctx: RuleContext) -> Fix:
    if ctx.platform.os == "windows":
        command = "$env:CUDA_LAUNCH_BLOCKING=1; envdoctor check  # PowerShell"
    else:
        command = "CUDA_LAUNCH_BLOCKING=1 envdoctor check"
    return Fix(
        summary="Re-run with synchronous kernel launches to see the call that fails", commands=(command,)
    )


def _gpu_processes() -> Fix:
    return Fix(
        summary="See which processes use the GPUs, and each GPU's compute mode",
        commands=(
            "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
            "nvidia-smi --query-gpu=index,name,compute_mode,memory.used,memory.total --format=csv",
        ),
    )


def _xid(ctx: RuleContext) -> Fix:
    commands = ["nvidia-smi -q -d ECC"]
    if ctx.platform.os == "linux":
        commands.insert(0, "sudo dmesg | grep -i xid")
    return Fix(summary="Look for driver (Xid) and memory (ECC) errors", commands=tuple(commands))


def _cause_fixes(ctx: RuleContext, cause: str | None, devices: tuple[SmokeDevice, ...]) -> tuple[Fix, ...]:
    torch = ctx.need(TorchFacts)
    device = devices[0]
    if cause == "arch" and device.capability:
        return arch_fixes(ctx, device.capability)
    if cause == "busy":
        sudo = "" if ctx.platform.os == "windows" else "sudo "
        which = f"-i {device.device.split(':')[-1]} " if len(devices) == 1 else ""
        return (
            _gpu_processes(),
            Fix(
                summary="If the GPU is in exclusive-process mode, wait for that process, pick another "
                "GPU (CUDA_VISIBLE_DEVICES), or have an administrator set the shared mode "
                "(nvidia-smi numbers GPUs by PCI bus; CUDA may order them differently)",
                commands=(f"{sudo}nvidia-smi {which}-c DEFAULT",),
            ),
        )
    if cause in ("device_fault", "wrong_result"):
        return (_xid(ctx), driver_fix(ctx))
    if cause == "ptx_toolchain":
        return (driver_fix(ctx),)
    if cause == "library":
        fixes = []
        if ctx.platform.os == "linux":
            fixes.append(
                Fix(
                    summary="Try without foreign CUDA libraries on the loader path; if that works, "
                    "remove them from LD_LIBRARY_PATH for good",
                    commands=("env -u LD_LIBRARY_PATH envdoctor check",),
                )
            )
        planned = planned_fix(ctx, "Reinstall a matching build", want_cuda=True)
        return (*fixes, *((planned,) if planned else ()))
    if cause == "cpu":
        planned = planned_fix(
            ctx, "Reinstall torch", torch=torch.public_version, want_cuda=bool(torch.cuda) or None
        )
        return (planned,) if planned else ()
    return (_launch_blocking(ctx), driver_fix(ctx))


def _step_story(step: SmokeStep) -> str:
    if step.status == StepStatus.WRONG:
        if step.finite is False:
            return f"{step.label} returned NaN/inf where the reference is finite"
        return (
            f"{step.label} returned wrong numbers: normalised error {step.max_error:.3g} against a "
            f"tolerance of {step.tolerance:.3g} ({step.precision})"
            if step.max_error is not None and step.tolerance is not None
            else f"{step.label} returned wrong numbers ({step.note or 'mismatch'})"
        )
    error = step.error
    if error is None:
        return f"{step.label} {step.status}"
    if step.status == StepStatus.CRASHED:
        return f"{step.label}: {error.message}"
    return f"{step.label} raised {error.type}: {error.message.strip().rstrip('.')}"


@rule(
    code="ED302",
    name="smoke-test-failed",
    severity=Severity.ERROR,
    summary="a smoke-test step (matmul, autograd, fp16/bf16, conv) failed or computed wrong numbers",
    needs=(TorchFacts,),
    # An AMD GPU the ROCm build has no kernels for; CUDA's unknown error at start, a GPU held in
    # exclusive mode.
    consequence_of=("ED150", "ED151", "ED125", "ED127"),
    doc=RuleDoc(
        what="The smoke test's steps on every device: a first kernel, a matmul against a CPU "
        "reference, autograd against the analytic gradient, fp16/bf16 matmuls, a conv2d against "
        "an im2col reference; errors are kept verbatim.",
        why="is_available() only says the driver libraries load. A busy GPU in exclusive mode, "
        "a faulting GPU, foreign cuBLAS/cuDNN libraries or broken hardware show up only when "
        "kernels really run.",
        fix="Follow the likely cause the finding names: free or share the GPU, check the "
        "kernel log for Xid errors, clean LD_LIBRARY_PATH, or reinstall.",
        example="Tesla T4, is_available() True, first allocation: 'CUDA error: CUDA-capable "
        "device(s) is/are busy or unavailable'.",
    ),
)
def smoke_test_failed(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    if torch.smoke is None:
        return
    flagged = {g.capability for g in uncovered_gpus(ctx)}
    # Identical failures on identical GPUs (two busy T4s) make one finding naming every device.
    groups: dict[tuple[str, ...], list[tuple[SmokeDevice, list[SmokeStep]]]] = {}
    for device in torch.smoke.devices:
        steps = [
            s
            for s in device.problems
            if s.status in (StepStatus.FAILED, StepStatus.WRONG, StepStatus.CRASHED)
        ]
        if not steps:
            continue
        cause = smoke_cause(device, steps[0])
        if cause == "memory":
            continue  # ED303
        if cause == "arch" and device.capability and device.capability in flagged:
            continue  # ED301 already explains it, with this failure as confirmation
        key = (device.kind, device.name or "", steps[0].step, _first_line(_step_story(steps[0])))
        groups.setdefault(key, []).append((device, steps))
    for members in groups.values():
        device, steps = members[0]
        first = steps[0]
        cause = smoke_cause(device, first)
        labels = ", ".join(d.device for d, _ in members)
        name = f" ({device.name})" if device.name else ""
        if device.gpu:
            available = {DeviceKind.MPS: "torch.backends.mps", DeviceKind.XPU: "torch.xpu"}.get(
                device.kind, "torch.cuda"
            )
            title = f"{first.label} fails on {labels}{name} although {available}.is_available() is True"
        else:
            title = f"the CPU smoke test fails: {first.label}"
        detail = _step_story(first) + "."
        if len(steps) > 1:
            detail += " Also: " + "; ".join(_first_line(_step_story(s)) for s in steps[1:]) + "."
        detail += f"\nLikely cause: {_CAUSES.get(cause, _CAUSES[None])}."
        evidence = tuple(f"smoke {d.device} {s.step}: {s.status}" for d, ss in members for s in ss)
        devices = tuple(d for d, _ in members)
        yield Hit(title=title, detail=detail, evidence=evidence, fixes=_cause_fixes(ctx, cause, devices))


def _bytes(count: int | None) -> str:
    return "?" if count is None else f"{count / 2**20:,.0f} MiB"


@rule(
    code="ED303",
    name="gpu-out-of-memory",
    severity=Severity.WARNING,
    summary="the GPU works, but the smoke test could not allocate memory on it",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="Smoke-test steps that failed with 'out of memory' (or cuBLAS failing to create "
        "its handle for lack of memory) even at a size reduced to the free memory.",
        why="The installation is fine, but any job started now fails: another process holds the memory.",
        fix="Find the process with nvidia-smi, stop it, or run on another GPU.",
        example="RTX 3090 with 11 MiB free: 'CUDA out of memory. ... Process 4121 has 23.1 GiB "
        "memory in use'.",
    ),
)
def gpu_out_of_memory(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    if torch.smoke is None:
        return
    for device in torch.smoke.devices:
        failed = [
            s for s in device.problems if s.status == StepStatus.FAILED and smoke_cause(device, s) == "memory"
        ]
        if not device.gpu or not failed:
            continue
        step = failed[0]
        size = (
            f"{step.size}x{step.size}" if step.size else f"{device.size}x{device.size}" if device.size else ""
        )
        free = ""
        if device.memory_total:
            free = f" {_bytes(device.memory_free_before)} of {_bytes(device.memory_total)} were free."
        message = step.error.message.strip() if step.error else ""
        yield Hit(
            title=f"{device.device} ({device.name or 'GPU'}) is out of memory: the smoke test could not "
            f"run {step.label}{' at ' + size if size else ''}",
            detail=f"torch works on this GPU, but there is no room for a job right now.{free} "
            f"{step.label} raised: {message}\nLikely cause: another process (or another job of "
            "yours) holds the memory; torch's message names the processes it can see.",
            evidence=(
                f"smoke {device.device} {step.step}: out of memory",
                f"memory free {device.memory_free_before} of {device.memory_total}",
            ),
            fixes=(
                _gpu_processes(),
                Fix(
                    summary="Stop the process that holds the memory, or run on a GPU with free memory "
                    "(CUDA_VISIBLE_DEVICES=<index>)",
                ),
            ),
        )


@rule(
    code="ED304",
    name="smoke-test-hung",
    severity=Severity.ERROR,
    summary="a smoke-test step did not finish within its time limit",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="Smoke-test steps that the child's watchdog (or envdoctor's timeout) had to stop; "
        "each step announces itself before it runs, so the hung step is known.",
        why="A GPU call that never returns hangs every program that uses the GPU; on a CPU it "
        "points at a threading deadlock.",
        fix="Check the GPU with nvidia-smi and the kernel log; if the machine is only slow "
        "(or compiling PTX for a new GPU), raise --timeout.",
        example="A virtual A800 (GRID A800D-40C) where torch.rand(5, 3).cuda() never returns.",
    ),
)
def smoke_test_hung(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    if torch.smoke is None:
        return
    arch = gpu_compute.parse_arch_list(torch.arch_list)
    for device in torch.smoke.devices:
        for step in device.steps:
            if step.status != StepStatus.TIMEOUT:
                continue
            limit = f"{step.timeout:.0f} s" if step.timeout is not None else "its time limit"
            name = f" ({device.name})" if device.name else ""
            if device.gpu:
                detail = (
                    "A CUDA call that never returns usually means the GPU or its driver is stuck "
                    "(Xid errors in the kernel log; on a virtual GPU, possibly the host side), or "
                    "another process monopolises the GPU."
                )
                if device.capability and arch:
                    entry = gpu_compute.serving_entry(arch, device.capability)
                    if entry is not None and entry.ptx:
                        detail += (
                            f" This GPU runs torch only through {entry.text} PTX, which the driver "
                            "JIT-compiles on first use (minutes, cached in ~/.nv/ComputeCache): a "
                            "longer --timeout may let it finish."
                        )
                fixes = [_gpu_processes(), _xid(ctx)]
            else:
                detail = (
                    "A CPU kernel that never returns usually means a thread-pool deadlock (OpenMP "
                    "libraries from two sources, or too many threads for the CPUs this process may use)."
                )
                fixes = [Fix(summary="Try with one thread", commands=("OMP_NUM_THREADS=1 envdoctor check",))]
            fixes.append(
                Fix(
                    summary="If the machine was only slow, give the check more time",
                    commands=("envdoctor check --timeout 300",),
                )
            )
            yield Hit(
                title=f"{step.label} on {device.device}{name} hung: it did not finish within {limit}",
                detail=f"The smoke test stopped the process after {step.label} ran for {limit}. {detail}",
                evidence=(f"smoke {device.device} {step.step}: timeout after {limit}",),
                fixes=tuple(fixes),
            )
