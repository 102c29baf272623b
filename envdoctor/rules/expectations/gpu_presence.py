"""A GPU at all (ED701) and how many (ED702): require-gpu and min-gpus."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.system import SystemFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import set_command, unset_command
from envdoctor.rules.expectations.gpu_view import GpuView, evidence, gpu_view, title, torch_problem
from envdoctor.rules.expectations.requirements import GPU_KEYS
from envdoctor.rules.fixes import driver_fix, planned_fix
from envdoctor.settings import Expectations


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
                    commands=(unset_command(ctx.platform.os, None, "CUDA_VISIBLE_DEVICES"),),
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


@rule(
    code="ED701",
    name="gpu-requirement-unmet",
    severity=Severity.ERROR,
    summary="the project needs a GPU, and torch can use none",
    needs=(Expectations,),
    # An AMD or Intel GPU the installed build cannot use: that error names the build to install
    # (ED153, a warning, is milder than this error and so never its cause).
    consequence_of=("ED152", "ED154", "ED155"),
    doc=RuleDoc(
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
)
def gpu_requirement_unmet(ctx: RuleContext) -> Iterator[Hit]:
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
        evidence=evidence(keys[0], dict(expect.items())[keys[0]], "torch.cuda_available", "nvml.status"),
        fixes=_no_gpu_fixes(ctx, view),
    )


@rule(
    code="ED702",
    name="gpu-count-unmet",
    severity=Severity.ERROR,
    summary="torch sees fewer GPUs than min-gpus",
    needs=(Expectations,),
    doc=RuleDoc(
        what="torch.cuda.device_count() against min-gpus, with NVML's count and "
        "CUDA_VISIBLE_DEVICES for context.",
        why="A multi-GPU job started with fewer GPUs fails late (NCCL, torchrun world size) or "
        "runs with the wrong batch size.",
        fix="Allocate more GPUs to the job (srun --gres=gpu:N, docker --gpus), or widen "
        "CUDA_VISIBLE_DEVICES when it hides GPUs that are there.",
        example="min-gpus = 2 in a Slurm job started with --gres=gpu:1.",
    ),
)
def gpu_count_unmet(ctx: RuleContext) -> Iterator[Hit]:
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
        command = set_command(ctx.platform.os, None, "CUDA_VISIBLE_DEVICES", indices)
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
        title=title("min-gpus", wanted, found),
        detail=detail,
        evidence=evidence("min-gpus", wanted, "torch.device_count", "nvml.gpus"),
        fixes=tuple(fixes),
    )
