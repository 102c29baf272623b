"""ED7xx: what the project said it needs (--require-*, [tool.envdoctor], envdoctor.require) against
what this machine has. Every unmet expectation is an error naming the expectation, what was found,
and the way out; met expectations say nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor import knowledge
from envdoctor.install import plan as install
from envdoctor.knowledge.archs import CoverageKind, arch_list, coverage
from envdoctor.knowledge.drivers import DriverKind, driver_support
from envdoctor.model import AreaVerdict, Finding, Fix, ProbeStatus, Severity
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.nvml import describe as describe_nvml
from envdoctor.probes.system import SystemFacts
from envdoctor.probes.torch_build import TorchDevice, TorchFacts
from envdoctor.rules.base import Hit, Rule, RuleContext, RuleDoc
from envdoctor.rules.fixes import GET_STARTED, driver_fix, install_target, planned_fix
from envdoctor.settings import MEMORY_TOLERANCE, Expectations

AREA = "expectations"
AREA_TITLE = "Project expectations"


@dataclass(frozen=True)
class GpuView:
    """The GPUs torch can use here, or why it can use none, plus what NVML adds for context."""

    devices: tuple[TorchDevice, ...]
    why_none: str | None
    nvml_says: str

    @property
    def found(self) -> str:
        if self.devices:
            names = ", ".join(_device_name(d) for d in self.devices)
            return f"torch sees {len(self.devices)} GPU(s): {names}"
        return f"{self.why_none}; NVIDIA driver: {self.nvml_says}"


def _device_name(device: TorchDevice) -> str:
    cap = f" (sm_{device.capability[0]}{device.capability[1]})" if device.capability else ""
    return f"{device.index}: {device.name or 'GPU'}{cap}"


def _torch_missing_reason(ctx: RuleContext) -> str:
    result = next((p for p in ctx.probes if p.probe == "torch"), None)
    if result is None:
        return "the torch probe did not run (--only/--skip), so no GPU could be confirmed"
    if result.status is ProbeStatus.NOT_APPLICABLE:
        return f"the torch probe does not apply here ({result.error})"
    return f"the torch probe {result.status.value} ({result.error})"


def torch_problem(torch: TorchFacts | None, ctx: RuleContext) -> str | None:
    """Why torch cannot be asked about versions or GPUs at all; None when it imported."""
    if torch is None:
        return _torch_missing_reason(ctx)
    if torch.crash is not None:
        return "the torch check crashed or hung (see ED003)"
    if not torch.installed:
        return f"torch is not installed in {ctx.interpreter.path}"
    if torch.import_error is not None:
        return f"import torch fails ({torch.import_error.type})"
    return None


def gpu_view(ctx: RuleContext) -> GpuView:
    torch = ctx.get(TorchFacts)
    nvml = ctx.get(NvmlFacts)
    nvml_says = describe_nvml(nvml) if nvml is not None else "not examined"
    problem = torch_problem(torch, ctx)
    if problem is not None or torch is None:
        return GpuView((), problem, nvml_says)
    if not torch.cuda and not torch.hip:
        return GpuView((), f"torch {torch.version} is a CPU-only build", nvml_says)
    if not torch.cuda_available:
        no_gpu = nvml is not None and not nvml.working and not nvml.pci_nvidia_devices
        where = "there is no NVIDIA GPU or driver, so " if no_gpu else ""
        why = f"{where}torch {torch.version} cannot use a GPU (torch.cuda.is_available() is False)"
        return GpuView((), why, nvml_says)
    devices = torch.devices or tuple(TorchDevice(index=i) for i in range(torch.device_count or 0))
    if not devices:
        return GpuView((), "torch.cuda.device_count() is 0", nvml_says)
    return GpuView(devices, None, nvml_says)


def _title(key: str, wanted: object, found: str) -> str:
    shown = "true" if wanted is True else str(wanted)
    return f"expectation {key} = {shown} not met: {found}"


def _evidence(key: str, wanted: object, *more: str) -> tuple[str, ...]:
    shown = "true" if wanted is True else str(wanted)
    return (f"expected {key} = {shown}", *more)


# --- ED701: a GPU at all -------------------------------------------------------------------------


def _implied_by(expect: Expectations) -> list[str]:
    return [key for key, _ in expect.items() if key in GPU_KEYS]


def _no_gpu_fixes(ctx: RuleContext, view: GpuView) -> tuple[Fix, ...]:
    torch = ctx.get(TorchFacts)
    nvml = ctx.get(NvmlFacts)
    system = ctx.get(SystemFacts)
    gpu_here = nvml is not None and nvml.working and bool(nvml.gpus)
    if torch is not None and torch.imported and not torch.cuda and not torch.hip and gpu_here:
        planned = planned_fix(ctx, "Install the CUDA build of torch", want_cuda=True)
        return (planned,) if planned else ()
    if torch_problem(torch, ctx) is not None:
        return (Fix(summary="Make `import torch` work first: the torch findings above say how"),)
    if gpu_here:
        fixes = [
            Fix(
                summary="torch sees no GPU although the driver does: the driver and build findings "
                "above say why"
            )
        ]
        hidden = torch.cuda_visible_devices if torch is not None else None
        if hidden is not None:
            fixes.append(
                Fix(
                    summary=f"CUDA_VISIBLE_DEVICES={hidden!r} hides the GPUs from torch; unset it "
                    "where the job starts",
                    commands=(_unset_visible(ctx),),
                )
            )
        return tuple(fixes)
    if nvml is not None and nvml.pci_nvidia_devices:
        return (driver_fix(ctx),)
    where = (
        f"this {system.container} container was started without GPUs: start it with `--gpus all` "
        "(NVIDIA Container Toolkit)"
        if system is not None and system.container
        else "run the job on a machine with an NVIDIA GPU: a self-hosted GPU runner, a GPU node"
    )
    return (
        Fix(
            summary=f"There is no NVIDIA GPU here; {where}. On a Slurm cluster, ask for one",
            commands=("srun --gres=gpu:1 envdoctor check --require-gpu",),
        ),
    )


def _unset_visible(ctx: RuleContext) -> str:
    if ctx.platform.os == "windows":
        return "Remove-Item Env:CUDA_VISIBLE_DEVICES"
    return "unset CUDA_VISIBLE_DEVICES"


def _gpu_required(ctx: RuleContext) -> Iterator[Hit]:
    expect = ctx.need(Expectations)
    if not expect.needs_gpu:
        return
    view = gpu_view(ctx)
    if view.devices:
        return
    keys = _implied_by(expect)
    torch = ctx.get(TorchFacts)
    detail = f"The project needs a GPU ({', '.join(keys)}), and torch can use none: {view.why_none}."
    if torch is not None and torch.mps_available:
        detail += " Apple's MPS is available, but these expectations are about CUDA/ROCm GPUs."
    yield Hit(
        title=f"expectation {keys[0]} not met: {view.why_none}",
        detail=detail + f" NVIDIA driver: {view.nvml_says}.",
        evidence=_evidence(keys[0], dict(expect.items())[keys[0]], "torch.cuda_available", "nvml.status"),
        fixes=_no_gpu_fixes(ctx, view),
    )


# --- ED702: how many ------------------------------------------------------------------------------


def _gpu_count(ctx: RuleContext) -> Iterator[Hit]:
    expect = ctx.need(Expectations)
    wanted = expect.min_gpus
    view = gpu_view(ctx)
    if wanted is None or not view.devices or len(view.devices) >= wanted:
        return
    torch = ctx.need(TorchFacts)
    nvml = ctx.get(NvmlFacts)
    nvml_count = len(nvml.gpus) if nvml is not None and nvml.working else 0
    found = f"torch sees {len(view.devices)} GPU(s)"
    detail = f"{view.found}; NVML sees {nvml_count}."
    fixes = []
    hidden = torch.cuda_visible_devices
    if hidden is not None:
        detail += f" CUDA_VISIBLE_DEVICES={hidden!r} limits what torch sees."
    if hidden is not None and nvml_count >= wanted:
        indices = ",".join(str(i) for i in range(wanted))
        command = (
            f'$env:CUDA_VISIBLE_DEVICES="{indices}"'
            if ctx.platform.os == "windows"
            else f"export CUDA_VISIBLE_DEVICES={indices}"
        )
        fixes.append(Fix(summary=f"Let torch see {wanted} of the {nvml_count} GPUs", commands=(command,)))
    else:
        fixes.append(
            Fix(
                summary=f"Run where {wanted} GPUs are allocated to the job (Slurm shown; Docker: "
                "--gpus all; Kubernetes: a nvidia.com/gpu limit)",
                commands=(f"srun --gres=gpu:{wanted} envdoctor check --min-gpus {wanted}",),
            )
        )
    yield Hit(
        title=_title("min-gpus", wanted, found),
        detail=detail,
        evidence=_evidence("min-gpus", wanted, "torch.device_count", "nvml.gpus"),
        fixes=tuple(fixes),
    )


# --- ED703 / ED704: versions ------------------------------------------------------------------------


def _spec(text: str | None) -> SpecifierSet | None:
    return SpecifierSet(text) if text else None


def _cuda_build(
    ctx: RuleContext, release: knowledge.Release, cuda: str
) -> tuple[install.InstallPlan, str] | None:
    """`release` built for `cuda`, if this driver runs it and it serves every GPU: the plan and why."""
    variant = knowledge.cuda_variant(cuda)
    target = dataclasses.replace(install_target(ctx, want_cuda=True, torch=release.torch), variant=variant)
    plan = install.plan(target)
    if not plan.possible:
        return None
    support = driver_support(variant, target.driver_version, target.os, target.driver_cuda)
    if target.driver_version is None:
        # A build job may need the CUDA wheel on a machine without a GPU: say what runs it.
        need = f"; where it runs it needs an NVIDIA driver >= {support.native}" if support.native else ""
        return plan, f"torch {plan.torch} ({variant}){need}"
    if not support.runs:
        return None
    arch = arch_list(release, variant, target.platform)
    gpus = target.gpu_capabilities
    if arch is not None and any(coverage(arch, gpu).kind == CoverageKind.NONE for gpu in gpus):
        return None
    how = (
        "natively"
        if support.kind == DriverKind.NATIVE
        else f"through minor-version compatibility (>= {support.floor})"
    )
    return plan, f"driver {target.driver_version} runs {variant} {how} -> torch {plan.torch} ({variant})"


def matching_install(ctx: RuleContext, expect: Expectations) -> Fix | None:
    """The newest known torch that meets require-torch and require-cuda here, as a pinned command."""
    torch_spec, cuda_spec = _spec(expect.torch), _spec(expect.cuda)
    wanted = " and ".join(
        f"{key} {value}" for key, value in expect.items() if key in ("require-torch", "require-cuda")
    )
    for release in reversed(knowledge.releases()):
        if torch_spec is not None and not torch_spec.contains(release.torch, prereleases=True):
            continue
        found: tuple[install.InstallPlan, str] | None = None
        if cuda_spec is None:
            plan = install.plan(install_target(ctx, torch=release.torch))
            found = (plan, plan.reason) if plan.possible else None
        else:
            newest_first = sorted(release.cuda, key=Version, reverse=True)
            for cuda in (c for c in newest_first if cuda_spec.contains(c, prereleases=True)):
                found = _cuda_build(ctx, release, cuda)
                if found is not None:
                    break
        if found is not None:
            plan, why = found
            return Fix(
                summary=f"Install a torch that meets {wanted}: {why}",
                commands=tuple(c.command for c in plan.commands),
                link=GET_STARTED,
            )
    return None


def _no_match_fix(expect: Expectations) -> Fix:
    return Fix(
        summary="No torch release in envdoctor's data meets these expectations on this machine "
        f"(data as of {knowledge.releases_as_of()}); check the expectations or pick a build by hand",
        link=GET_STARTED,
    )


def _cuda_version(ctx: RuleContext) -> Iterator[Hit]:
    expect = ctx.need(Expectations)
    if expect.cuda is None:
        return
    torch = ctx.get(TorchFacts)
    problem = torch_problem(torch, ctx)
    if problem is None and torch is not None:
        if torch.cuda and SpecifierSet(expect.cuda).contains(torch.cuda, prereleases=True):
            return
        if torch.cuda:
            found = f"torch {torch.version} was built with CUDA {torch.cuda}"
        elif torch.hip:
            found = f"torch {torch.version} is a ROCm build (HIP {torch.hip}), not CUDA"
        else:
            found = f"torch {torch.version} is a CPU-only build"
    else:
        found = problem or "torch was not examined"
    yield Hit(
        title=_title("require-cuda", expect.cuda, found),
        detail=f"The project needs torch built with CUDA {expect.cuda} (torch.version.cuda); {found}. "
        "Whether the driver can run that CUDA is checked by ED101/ED102.",
        evidence=_evidence(
            "require-cuda", expect.cuda, f"torch.version.cuda = {torch.cuda if torch else None}"
        ),
        fixes=(matching_install(ctx, expect) or _no_match_fix(expect),),
    )


def _torch_version(ctx: RuleContext) -> Iterator[Hit]:
    expect = ctx.need(Expectations)
    if expect.torch is None:
        return
    torch = ctx.get(TorchFacts)
    version = torch.version or torch.dist_version if torch is not None else None
    if version and SpecifierSet(expect.torch).contains(version, prereleases=True):
        return
    if version:
        found = f"torch {version} is installed"
    elif torch is not None and torch.installed is False and torch.crash is None:
        found = "torch is not installed"
    else:
        found = torch_problem(torch, ctx) or "the torch version is unknown"
    yield Hit(
        title=_title("require-torch", expect.torch, found),
        detail=f"The project needs torch {expect.torch}; {found} in {ctx.interpreter.path}.",
        evidence=_evidence("require-torch", expect.torch, f"torch.__version__ = {version}"),
        fixes=(matching_install(ctx, expect) or _no_match_fix(expect),),
    )


# --- ED705 / ED706: each GPU ----------------------------------------------------------------------


def _select_hint(ctx: RuleContext, good: list[TorchDevice], what: str) -> Fix:
    if good:
        return Fix(
            summary=f"Use only the GPUs that meet {what} ({', '.join(_device_name(d) for d in good)}): "
            "list them in CUDA_VISIBLE_DEVICES, with CUDA_DEVICE_ORDER=PCI_BUS_ID so the indices "
            "are nvidia-smi's"
        )
    return Fix(summary=f"Run the job on GPUs that meet {what}")


def _capability(ctx: RuleContext) -> Iterator[Hit]:
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
        title=_title("require-capability", expect.capability, described),
        detail=f"Every GPU torch uses must have compute capability {expect.capability}; {described}. "
        "Kernels built for newer architectures (bf16, FlashAttention, FP8) do not run on older ones.",
        evidence=_evidence("require-capability", expect.capability, "torch.devices[].capability"),
        fixes=(_select_hint(ctx, good, f"compute capability {expect.capability}"),),
    )


def _gib(value: int) -> str:
    return f"{value / 2**30:.2f} GiB"


def _memory(ctx: RuleContext) -> Iterator[Hit]:
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
        title=_title("min-gpu-memory", expect.min_gpu_memory, described),
        detail=f"Every GPU torch uses must have at least {expect.min_gpu_memory} "
        f"({_gib(wanted)}; boards within {MEMORY_TOLERANCE:.0%} below count, as they report a little "
        f"less than their nominal size); {described}.",
        evidence=_evidence("min-gpu-memory", expect.min_gpu_memory, "torch.devices[].total_memory_bytes"),
        fixes=(_select_hint(ctx, good, f"{expect.min_gpu_memory} of memory"),),
    )


# --- ED707: the smoke test --------------------------------------------------------------------------


def _smoke_gaps(torch: TorchFacts | None, devices: tuple[TorchDevice, ...]) -> tuple[str, str]:
    """(what was found, evidence) when the smoke test does not vouch for every GPU; ("", "") else."""
    smoke = torch.smoke if torch is not None else None
    if smoke is None:
        return "the smoke test did not run (these facts hold no smoke results)", "torch.smoke: absent"
    if not smoke.ran:
        return f"the smoke test did not run ({smoke.skipped_reason or 'skipped'})", "torch.smoke.ran = false"
    gaps = []
    for device in devices:
        result = smoke.device(f"cuda:{device.index}")
        if result is None:
            gaps.append(f"{_device_name(device)}: no smoke result")
        elif not result.passed:
            failed = ", ".join(f"{step.label} {step.status}" for step in result.problems) or "incomplete"
            gaps.append(f"{_device_name(device)}: {failed}")
    if smoke.stopped and not gaps:
        gaps.append(f"the smoke test stopped early ({smoke.stopped})")
    return "; ".join(gaps), "torch.smoke.devices"


def _smoke(ctx: RuleContext) -> Iterator[Hit]:
    expect = ctx.need(Expectations)
    if not expect.smoke:
        return
    view = gpu_view(ctx)
    if not view.devices:
        return  # ED701 already says there is no GPU to test
    found, where = _smoke_gaps(ctx.get(TorchFacts), view.devices)
    if not found:
        return
    not_run = found.startswith("the smoke test did not run")
    yield Hit(
        title=_title("require-smoke", True, found),
        detail="The project needs a passed GPU smoke test (matmul, autograd, fp16/bf16 and a "
        f"convolution on each GPU torch uses); {found}."
        + ("" if not_run else " The smoke test's own finding (ED30x) gives the error and the fix."),
        evidence=_evidence("require-smoke", True, where),
        fixes=(
            Fix(
                summary="Run the check with the smoke test (leave out --no-smoke)",
                commands=("envdoctor check --require-smoke",),
            )
            if not_run
            else Fix(summary="Fix what the smoke test's finding names, then check again"),
        ),
    )


# --- the rules, and the summary line ----------------------------------------------------------------

# Which rule judges each key; GPU_KEYS also fall under ED701 when there is no GPU at all.
RULE_OF_KEY = {
    "require-gpu": "ED701",
    "min-gpus": "ED702",
    "require-cuda": "ED703",
    "require-torch": "ED704",
    "require-capability": "ED705",
    "min-gpu-memory": "ED706",
    "require-smoke": "ED707",
}
GPU_KEYS = ("require-gpu", "min-gpus", "require-capability", "min-gpu-memory", "require-smoke")


def key_status(
    expect: Expectations, findings: tuple[Finding, ...], ignored: tuple[str, ...] = ()
) -> dict[str, str]:
    """ "met", "not met" or "ignored" for each stated key."""
    codes = {f.code for f in findings}
    status = {}
    for key, _ in expect.items():
        code = RULE_OF_KEY[key]
        if code in ignored:
            status[key] = "ignored"
        elif code in codes or (key in GPU_KEYS and "ED701" in codes):
            status[key] = "not met"
        else:
            status[key] = "met"
    return status


def area_verdict(
    expect: Expectations, findings: tuple[Finding, ...], ignored: tuple[str, ...] = ()
) -> AreaVerdict:
    status = key_status(expect, findings, ignored)
    unmet = [k for k, s in status.items() if s == "not met"]
    worst = max((f.severity for f in findings if f.area == AREA), default=Severity.OK)
    shown = ", ".join(f"{k} {'true' if v is True else v}" for k, v in expect.items())
    if unmet:
        verdict = f"{len(unmet)} of {len(status)} not met ({', '.join(unmet)})"
    else:
        verdict = f"all {len(status)} met: {shown}"
    return AreaVerdict(AREA, AREA_TITLE, worst, verdict)


def _rule(code: str, name: str, summary: str, check, doc: RuleDoc) -> Rule:  # type: ignore[no-untyped-def]
    return Rule(code, name, Severity.ERROR, AREA, summary, (Expectations,), check, doc)


RULES = (
    _rule(
        "ED701",
        "gpu-requirement-unmet",
        "the project needs a GPU, and torch can use none",
        _gpu_required,
        RuleDoc(
            what="With require-gpu (or any GPU expectation: min-gpus, require-capability, "
            "min-gpu-memory, require-smoke), whether torch.cuda.is_available() is True with at "
            "least one device. Apple MPS does not count.",
            why="A training job that silently falls back to the CPU runs for hours before anyone "
            "notices; a CI job or batch script should stop at once instead.",
            fix="Depends on the cause shown: install the CUDA build, repair the driver, pass the "
            "GPU into the container, or run the job where a GPU is allocated.",
            example="`envdoctor check --require-gpu` on a CI runner without a GPU, or with torch "
            "2.5.1+cpu on a GPU machine.",
        ),
    ),
    _rule(
        "ED702",
        "gpu-count-unmet",
        "torch sees fewer GPUs than min-gpus",
        _gpu_count,
        RuleDoc(
            what="torch.cuda.device_count() against min-gpus, with NVML's count and "
            "CUDA_VISIBLE_DEVICES for context.",
            why="A multi-GPU job started with fewer GPUs fails late (NCCL, torchrun world size) or "
            "runs with the wrong batch size.",
            fix="Allocate more GPUs to the job (srun --gres=gpu:N, docker --gpus), or widen "
            "CUDA_VISIBLE_DEVICES when it hides GPUs that are there.",
            example="min-gpus = 2 in a Slurm job started with --gres=gpu:1.",
        ),
    ),
    _rule(
        "ED703",
        "cuda-requirement-unmet",
        "torch was built with a CUDA version outside require-cuda",
        _cuda_version,
        RuleDoc(
            what="torch.version.cuda (the CUDA torch was built with and bundles) against the "
            "require-cuda specifier; a CPU-only or ROCm build does not meet it.",
            why="Extensions and kernels built for a CUDA version (custom ops, FlashAttention "
            "wheels, TensorRT) need torch built with a matching CUDA.",
            fix="Install the torch build the fix names: the newest known release meeting "
            "require-cuda (and require-torch) whose CUDA this driver runs.",
            example='require-cuda = ">=12.1" with torch 2.1.2+cu118.',
        ),
    ),
    _rule(
        "ED704",
        "torch-requirement-unmet",
        "the installed torch version is outside require-torch",
        _torch_version,
        RuleDoc(
            what="torch.__version__ (pre-releases included, local labels such as +cu121 ignored "
            "unless the specifier has one) against the require-torch specifier.",
            why="A job tested on one torch range can break on another (removed APIs, changed "
            "defaults); failing before the job starts is cheaper than failing in it.",
            fix="Install the pinned torch the fix names, from the index matching the driver.",
            example='require-torch = ">=2.4,<2.6" with torch 2.1.2 installed.',
        ),
    ),
    _rule(
        "ED705",
        "capability-requirement-unmet",
        "a GPU torch uses has a compute capability outside require-capability",
        _capability,
        RuleDoc(
            what="Each device torch sees (its compute capability, e.g. 8.6) against the "
            "require-capability specifier.",
            why="bf16, FlashAttention 2 and FP8 kernels need Ampere (8.0), Ada (8.9) or Hopper "
            "(9.0) and newer; on older GPUs they fail or fall back slowly.",
            fix="Run on GPUs that qualify, or hide the others with CUDA_VISIBLE_DEVICES.",
            example='require-capability = ">=8.0" on a Tesla V100 (7.0).',
        ),
    ),
    _rule(
        "ED706",
        "gpu-memory-requirement-unmet",
        "a GPU torch uses has less memory than min-gpu-memory",
        _memory,
        RuleDoc(
            what="Each device's total memory (torch.cuda.get_device_properties) against "
            "min-gpu-memory; a board within 2% below the asked size counts, since boards report "
            "a little less than their nominal size (an RTX 4090 shows 23.99 GiB).",
            why="A model that does not fit fails with CUDA out of memory after the data loading "
            "and warm-up, not at the start.",
            fix="Run on GPUs with enough memory, or hide the smaller ones with CUDA_VISIBLE_DEVICES.",
            example='min-gpu-memory = "40GiB" on a 32 GiB V100.',
        ),
    ),
    _rule(
        "ED707",
        "smoke-requirement-unmet",
        "the project needs a passed GPU smoke test, and none passed",
        _smoke,
        RuleDoc(
            what="With require-smoke, whether the GPU smoke test ran and passed on every GPU; "
            "when no smoke results exist the expectation is unmet.",
            why="A GPU can be visible and still fail its first kernel (no kernel image for the "
            "architecture, a broken driver state); only running one proves it works.",
            fix="Follow the smoke test's finding; run a check that includes the smoke test.",
            example="require-smoke = true, and the smoke test was not run.",
        ),
    ),
)
