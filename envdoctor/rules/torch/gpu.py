"""The GPU's architecture against the build, and what the smoke test saw when kernels really ran."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

from envdoctor import knowledge
from envdoctor.install import plan as install
from envdoctor.knowledge import gpu_compute
from envdoctor.knowledge.archs import Capability, cubin_runs_on, cuda_number, dotted, first_cuda, sm
from envdoctor.knowledge.drivers import DriverKind, driver_support, native_cuda
from envdoctor.knowledge.signatures import ErrorEvidence
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.toolkit import ToolkitFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.probes.torch_smoke import DeviceKind, SmokeDevice, SmokeStep, StepStatus
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import set_command
from envdoctor.rules.fixes import driver_fix, install_target, plan_fix, planned_fix
from envdoctor.util.records import record

# torch's own warnings name the GPU's capability; they are a source of it when nothing else is.
_CUBIN_WARNING = re.compile(r"(?P<name>[^\n]+?) with CUDA capability sm_(?P<cc>\d+) is not compatible")
_CAPABILITY_WARNING = re.compile(
    r"Found GPU\d+ (?P<name>.+?) which is of (?:cuda|compute) capability (?:\(CC\) )?"
    r"(?P<major>\d+)\.(?P<minor>\d+)"
)
_ARCH_WARNING_WORDS = ("is not compatible with the current PyTorch", "which is of cuda capability")


@record
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
        target = replace(install_target(ctx, want_cuda=True, torch=release.torch), variant=build.variant)
        fix = plan_fix(
            ctx,
            install.plan(target),
            f"Install torch {release.torch} ({build.variant}), which has kernels for {sm(capability)}",
        )
        if fix is not None:
            return fix
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
    "or the hardware (the kernel log shows NVIDIA Xid errors; a card that fails this way needs replacing) "
    "or at unstable clocks (overclocking, undervolting), not at your code",
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
    # exclusive mode; PTX the driver cannot compile, libraries older than the GPU.
    consequence_of=("ED150", "ED151", "ED125", "ED127", "ED307", "ED310"),
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


# What torch's out-of-memory message says about the GPU: the old form ("7.92 GiB total capacity;
# 69.17 MiB already allocated; 24.56 MiB free; 86.00 MiB reserved in total by PyTorch") and the
# form of torch >= 2.1 ("a total capacity of 23.69 GiB of which 11.06 MiB is free. ... Of the
# allocated memory 22.8 GiB is allocated by PyTorch, and 120 MiB is reserved by PyTorch but
# unallocated").
_SIZE = r"(\d+(?:\.\d+)?) ?([KMGT]i?B)"
_OOM_FIELDS = {
    "total": (rf"{_SIZE} total capacity", rf"total capacity of {_SIZE}"),
    "free": (rf"{_SIZE} free", rf"of which {_SIZE} is free"),
    "allocated": (rf"{_SIZE} already allocated", rf"{_SIZE} is allocated by PyTorch"),
    "reserved": (rf"{_SIZE} reserved in total by PyTorch",),
    "unallocated": (rf"{_SIZE} is reserved by PyTorch but unallocated",),
    "wanted": (rf"Tried to allocate {_SIZE}",),
}
_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_GIB = 2**30
LOW_MEMORY_GPU = 6 * _GIB  # below this, common models (Stable Diffusion, 7B LLMs) need their low-VRAM modes


@record
class OomReport:
    """The numbers torch's out-of-memory message gave, in bytes (None: not said)."""

    total: int | None = None
    free: int | None = None
    allocated: int | None = None
    reserved: int | None = None  # allocated + cached by torch's allocator
    wanted: int | None = None

    @property
    def others(self) -> int | None:
        """What other processes (or other allocators in this one) hold."""
        if self.total is None or self.free is None or self.reserved is None:
            return None
        return max(0, self.total - self.free - self.reserved)

    @property
    def cached(self) -> int | None:
        """Reserved by torch but not in use: fragmentation when large."""
        if self.reserved is None or self.allocated is None:
            return None
        return max(0, self.reserved - self.allocated)


def _bytes_of(number: str, unit: str) -> int:
    return int(float(number) * _UNITS.get(unit[0].upper(), 1))


def parse_oom(text: str) -> OomReport:
    found: dict[str, int] = {}
    for key, patterns in _OOM_FIELDS.items():
        for pattern in patterns:
            match = re.search(pattern, text[:20_000], re.IGNORECASE)
            if match:
                found[key] = _bytes_of(match.group(1), match.group(2))
                break
    reserved = found.get("reserved")
    if reserved is None and "allocated" in found and "unallocated" in found:
        reserved = found["allocated"] + found["unallocated"]
    return OomReport(
        found.get("total"), found.get("free"), found.get("allocated"), reserved, found.get("wanted")
    )


def _gib(count: int) -> str:
    return f"{count / _GIB:.2f} GiB" if count >= _GIB else f"{count / 2**20:,.0f} MiB"


def _hidden_processes(ctx: RuleContext) -> Fix:
    commands = ["nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"]
    if ctx.platform.os != "windows":
        # nvidia-smi lists no processes of other containers or PID namespaces, nor some zombies.
        commands.append("sudo fuser -v /dev/nvidia*")
    return Fix(
        summary="Find what holds the memory (a finished job's leftover or zombie worker, another user's "
        "job, a notebook kernel); processes nvidia-smi does not list show up on the device files",
        commands=tuple(commands),
    )


def _oom_from_text(ctx: RuleContext, match_text: str, whole: str) -> Hit:
    report = parse_oom(whole)
    nvml = ctx.get(NvmlFacts)
    total = report.total
    if total is None and nvml is not None and nvml.working and nvml.gpus:
        total = nvml.gpus[0].memory_total_bytes
    torch = ctx.get(TorchFacts)
    extensions = torch.extensions if torch is not None else None
    vllm = (
        "vllm" in whole.lower()
        or "cumem_allocator" in whole.lower()
        or (extensions is not None and extensions.distribution("vllm") is not None)
    )
    said = f'The error says: "{match_text}".'
    others = report.others
    cached = report.cached
    fixes: list[Fix]
    if others is not None and total and others > 0.25 * total and others > _GIB // 2:
        title = f"the GPU ran out of memory because something else holds {_gib(others)} of its {_gib(total)}"
        cause = (
            f"Only {_gib(report.free or 0)} was free and this process's torch held "
            f"{_gib(report.reserved or 0)}, so about {_gib(others)} belongs to other processes: often a "
            "finished run's leftover workers or a zombie, which nvidia-smi may not even list."
        )
        fixes = [
            _hidden_processes(ctx),
            Fix(
                summary="Stop those processes (kill <pid>), or run on a GPU with free memory "
                "(CUDA_VISIBLE_DEVICES=<index>)"
            ),
        ]
    elif cached is not None and total and cached > 0.25 * total:
        title = "the GPU ran out of memory although torch holds much of it unused (fragmentation)"
        cause = (
            f"torch reserved {_gib(report.reserved or 0)} but uses only {_gib(report.allocated or 0)}: the "
            "free blocks are too fragmented for the request."
        )
        unset = set_command(ctx.platform.os, None, "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
        fixes = [
            Fix(summary="Let torch's allocator grow segments instead of fragmenting them", commands=(unset,))
        ]
    elif vllm:
        title = "vLLM reserved most of the GPU's memory at start, and the rest ran out"
        cause = (
            "vLLM preallocates gpu_memory_utilization (by default 0.9) of each GPU for its weights and KV "
            "cache; anything else on the same GPU (training, a second engine) gets only what is left."
        )
        fixes = [
            Fix(
                summary="Lower vLLM's share where other work shares the GPU: gpu_memory_utilization=0.45 "
                "(--gpu-memory-utilization 0.45), or give vLLM a GPU of its own"
            ),
            _gpu_processes(),
        ]
    else:
        size = f" of {_gib(total)}" if total else ""
        small = total is not None and total < LOW_MEMORY_GPU
        tight = f" in {_gib(total)}, a small GPU for current models." if total is not None and small else "."
        title = f"the job needs more memory than the GPU{size} has"
        cause = "Nothing else holds the memory: this job's model, batch and activations do not fit" + tight
        fixes = [
            Fix(
                summary="Make the job smaller: a smaller batch or resolution, half precision (bf16/fp16), "
                "gradient checkpointing, or offloading parts to the CPU; applications have a low-memory mode "
                "for this (Stable Diffusion web UIs: --medvram or --lowvram, with --xformers)"
            ),
            _gpu_processes(),
        ]
    detail = f"{said} {cause}"
    if report.wanted is not None:
        detail += f" It asked for {_gib(report.wanted)} more."
    return Hit(title=title, detail=detail, evidence=("error text: CUDA out of memory",), fixes=tuple(fixes))


@rule(
    code="ED303",
    name="gpu-out-of-memory",
    severity=Severity.WARNING,
    summary="the GPU works, but there was no memory for the work (the smoke test, or the job in the error)",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="Smoke-test steps that failed with 'out of memory' (or cuBLAS failing to create its handle for "
        "lack of memory) even at a size reduced to the free memory; and an out-of-memory error the check "
        "captured or was given, read for what holds the memory: other processes, torch's own fragmented "
        "cache, vLLM's preallocation, or a job larger than the GPU.",
        why="The installation is fine, but any job started now fails: another process holds the memory. "
        "Each cause has its own fix, and a leftover process is often invisible in nvidia-smi.",
        fix="Find and stop the process that holds the memory, lower vLLM's gpu_memory_utilization, set "
        "expandable segments, or make the job smaller; the finding names which.",
        example="RTX 3090 with 11 MiB free: 'CUDA out of memory. ... Process 4121 has 23.1 GiB memory in "
        "use'.",
    ),
)
def gpu_out_of_memory(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    reported = False
    for device in torch.smoke.devices if torch.smoke is not None else ():
        failed = [
            s for s in device.problems if s.status == StepStatus.FAILED and smoke_cause(device, s) == "memory"
        ]
        if not device.gpu or not failed:
            continue
        reported = True
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
                _hidden_processes(ctx),
                Fix(
                    summary="Stop the process that holds the memory, or run on a GPU with free memory "
                    "(CUDA_VISIBLE_DEVICES=<index>)",
                ),
            ),
        )
    if reported:
        return
    evidence = ctx.get(ErrorEvidence) or ErrorEvidence()
    matches = evidence.matching("ED303")
    if not matches:
        return
    whole = next(
        (
            t.text
            for t in evidence.texts
            if matches[0].source == t.source or (matches[0].source == "pasted" and t.source == "pasted")
        ),
        matches[0].excerpt,
    )
    yield _oom_from_text(ctx, matches[0].excerpt, whole)


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


# -- the build's CUDA against the GPU and the driver ------------------------------------------------


def _torch_cuda(torch: TorchFacts) -> tuple[int, int] | None:
    return cuda_number(torch.cuda) if torch.imported and torch.cuda and not torch.hip else None


def _smoke_failure(torch: TorchFacts, capability: Capability) -> tuple[str, str] | None:
    """(device, first failing step's message) of the smoke test on GPUs of `capability`."""
    for device in _smoke_devices(torch, capability):
        for step in device.problems:
            if step.error is not None:
                return device.device, f"{step.label}: {_first_line(step.error.message)}"
    return None


@rule(
    code="ED310",
    name="torch-cuda-older-than-gpu",
    severity=Severity.ERROR,
    summary="torch was built with a CUDA release older than the GPU: its cuBLAS/cuDNN cannot run there",
    needs=(TorchFacts,),
    consequence_of=("ED305",),
    doc=RuleDoc(
        what="The CUDA version torch was built with against the first CUDA release that supports each "
        "GPU's compute capability (archs.json 'first_cuda': 10.0 for Turing, 11.0 for A100, 11.1 for "
        "RTX 30xx, 11.8 for RTX 40xx and H100, 12.8 for Blackwell), for GPUs the build serves only through "
        "the PTX of an older architecture (or whose arch list is not known); a GPU with no kernels at all is "
        "ED301's, one with a cubin of its own major runs by binary compatibility.",
        why="Old PTX makes torch load and is_available() say True, but the "
        "cuBLAS and cuDNN that came with the older CUDA predate the GPU: matmuls and convolutions fail "
        "with 'CUBLAS_STATUS_EXECUTION_FAILED', 'CUDNN_STATUS_EXECUTION_FAILED' or 'the GPU program failed "
        "to execute', often only now and then, and torch itself may warn that the GPU is not compatible.",
        fix="Install a build made with a CUDA that supports the GPU (the command is shown).",
        example="RTX 3090 (sm_86) with a CUDA 10.2 build of torch 1.7: cuDNN raises "
        "CUDNN_STATUS_EXECUTION_FAILED at the first convolution.",
    ),
)
def torch_cuda_older_than_gpu(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    built = _torch_cuda(torch)
    if built is None:
        return
    uncovered = {g.capability for g in uncovered_gpus(ctx)}
    arch = gpu_compute.parse_arch_list(torch.arch_list)
    for gpu in seen_gpus(ctx):
        first = first_cuda(gpu.capability)
        if first is None or built >= first or gpu.capability in uncovered:
            continue
        cc = gpu.capability
        if any(
            not e.ptx and e.capability[0] == cc[0] and cubin_runs_on(e.capability, cc, e.suffix) for e in arch
        ):
            continue  # a cubin of its own major runs there (binary compatibility): no claim made
        needed = f"{first[0]}.{first[1]}"
        started = (
            f"Its arch list ({_arch_list_text(torch)}) lets torch start on the GPU,"
            if torch.arch_list
            else "torch starts on the GPU,"
        )
        detail = (
            f"{gpu.name} ({sm(cc)}) is supported from CUDA {needed} on, and torch {torch.version} was "
            f"built with CUDA {torch.cuda}. {started} but the cuBLAS and cuDNN of that CUDA predate it: "
            "matrix products and convolutions "
            'fail with "CUBLAS_STATUS_EXECUTION_FAILED", "CUDNN_STATUS_EXECUTION_FAILED" or "the GPU '
            'program failed to execute" (sometimes only now and then), or the first call takes minutes '
            f"while the driver compiles PTX. {gpu_compute.support_for(cc, _platform(ctx)).summary()}."
        )
        evidence = [
            f"torch.version.cuda = {torch.cuda}",
            f"{sm(cc)} (from {gpu.source}) needs CUDA >= {needed}",
        ]
        failed = _smoke_failure(torch, cc)
        if failed is not None:
            detail += f" The smoke test confirmed it: on {failed[0]}, {failed[1]}."
            evidence.append(f"smoke {failed[0]}: {failed[1][:120]}")
        warning = _arch_warning(torch)
        if warning:
            detail += f' torch itself warned: "{_first_line(warning)}"'
        yield Hit(
            title=f"torch {torch.version} was built with CUDA {torch.cuda}, older than {gpu.name} "
            f"({sm(cc)}), which needs CUDA >= {needed}",
            detail=detail,
            evidence=tuple(evidence),
            fixes=arch_fixes(ctx, cc),
        )


def _ptx_only(ctx: RuleContext) -> list[tuple[SeenGpu, str]]:
    """GPUs the build serves only through PTX, with the PTX entry."""
    torch = ctx.need(TorchFacts)
    arch = gpu_compute.parse_arch_list(torch.arch_list)
    found = []
    for gpu in seen_gpus(ctx):
        entry = gpu_compute.serving_entry(arch, gpu.capability) if arch else None
        if entry is not None and entry.ptx:
            found.append((gpu, entry.text))
    return found


def _newest_toolkit(ctx: RuleContext) -> tuple[str, tuple[int, int]] | None:
    """The newest CUDA toolkit (nvcc) on this machine: what built a locally compiled extension."""
    toolkit = ctx.get(ToolkitFacts)
    best: tuple[str, tuple[int, int]] | None = None
    for kit in toolkit.toolkits if toolkit is not None else ():
        number = cuda_number(kit.version)
        if kit.exists and kit.has_nvcc and number is not None and (best is None or number > best[1]):
            best = (kit.version or "", number)
    return best


@rule(
    code="ED307",
    name="ptx-needs-newer-driver",
    severity=Severity.ERROR,
    summary="code needs its PTX compiled by the driver, and the driver is older than the CUDA that made it",
    needs=(TorchFacts, NvmlFacts),
    consequence_of=("ED101", "ED305"),
    doc=RuleDoc(
        what="A GPU that the installed torch serves only through PTX (compute_XY, no fitting cubin) while "
        "the driver runs CUDA older than torch's; or the error 'the provided PTX was compiled with an "
        "unsupported toolchain' with a driver older than torch's CUDA or than the local toolkit's.",
        why="The driver JIT-compiles PTX only from CUDA versions it knows. Minor-version compatibility "
        "lets an older driver of the same major run the build's cubins, but not its PTX: the first kernel "
        "fails with 'the provided PTX was compiled with an unsupported toolchain' "
        "(cudaErrorUnsupportedPtxVersion), and so does an extension compiled by a newer nvcc.",
        fix="Upgrade the driver to at least the minimum of the CUDA that made the PTX (shown), or install "
        "the build whose CUDA the driver runs natively.",
        example="A driver 450.80.02 (CUDA 11.0) host running an image built with CUDA 11.8: 'CUDA error: "
        "the provided PTX was compiled with an unsupported toolchain.'",
    ),
)
def ptx_needs_newer_driver(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    nvml = ctx.need(NvmlFacts)
    built = _torch_cuda(torch)
    if built is None or not nvml.working:
        return
    driver_cuda = nvml.driver_cuda or native_cuda(nvml.driver_version, ctx.platform.os)
    have = cuda_number(driver_cuda)
    if have is None:
        return
    evidence_texts = ctx.get(ErrorEvidence) or ErrorEvidence()
    said = evidence_texts.matching("ED307")
    ptx = _ptx_only(ctx) if have < built else []
    toolkit = _newest_toolkit(ctx)
    newer_toolkit = toolkit if toolkit is not None and toolkit[1] > have else None
    if not ptx and not (said and (have < built or newer_toolkit)):
        return
    makers = []
    if have < built:
        makers.append(f"torch's CUDA {torch.cuda}")
    if newer_toolkit is not None and said:
        makers.append(f"the local CUDA {newer_toolkit[0]} toolkit (which built any extension compiled here)")
    newest = max([built] + ([newer_toolkit[1]] if newer_toolkit and said else []))
    wanted = f"{newest[0]}.{newest[1]}"
    minimum = knowledge.driver_minimum(wanted, ctx.platform.os)
    floor = minimum.toolkit if minimum is not None and minimum.toolkit else None
    parts = []
    for gpu, entry in ptx:
        parts.append(
            f"{gpu.name} ({sm(gpu.capability)}) has no cubin in torch {torch.version}'s arch list "
            f"({_arch_list_text(torch)}), so every kernel runs from {entry} PTX, which the driver compiles "
            "when it is first used."
        )
    if said:
        where = "The pasted error" if said[0].source == "pasted" else f"The captured {said[0].source}"
        parts.append(f'{where} says: "{said[0].excerpt}".')
    detail = (
        " ".join(parts) + f" Driver {nvml.driver_version} runs CUDA {driver_cuda}, older than "
        f"{' and '.join(makers)}; it can run precompiled code of the same major version (minor-version "
        'compatibility) but cannot compile PTX made by a newer CUDA, so such kernels fail with "the '
        'provided PTX was compiled with an unsupported toolchain" (cudaErrorUnsupportedPtxVersion).'
    )
    fixes = [driver_fix(ctx, str(floor) if floor else None)]
    if have < built and knowledge.release(torch.public_version or "") is not None:
        same = torch.public_version  # a released build: its natively-run variant (not a source build's)
        native = planned_fix(
            ctx,
            "Install the build whose CUDA the driver runs natively",
            want_cuda=True,
            torch=same,
            native_only=True,
        )
        if native is not None:
            fixes.append(native)
    gpu_part = f" for {ptx[0][0].name}" if ptx else ""
    yield Hit(
        title=f"driver {nvml.driver_version} (CUDA {driver_cuda}) cannot compile PTX from CUDA {wanted}"
        f"{gpu_part}: kernels fail with 'unsupported toolchain'",
        detail=detail,
        evidence=(
            f"driver {nvml.driver_version} (CUDA {driver_cuda})",
            f"torch.version.cuda = {torch.cuda}",
            *(f"{sm(g.capability)} served by {e}" for g, e in ptx),
        ),
        fixes=tuple(fixes),
    )
