"""Fix builders shared by rules: the planner's command for this machine, driver downloads."""

from __future__ import annotations

from envdoctor.install import plan as install
from envdoctor.model import Fix
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import RuleContext

NVIDIA_DRIVERS = "https://www.nvidia.com/Download/index.aspx"
GET_STARTED = "https://pytorch.org/get-started/locally/"


def install_target(
    ctx: RuleContext,
    want_cuda: bool | None = None,
    torch: str | None = None,
    native_only: bool = False,
) -> install.InstallTarget:
    """This machine, as the planner sees it; pip runs through the examined interpreter."""
    nvml = ctx.get(NvmlFacts)
    python = ctx.get(PythonFacts)
    installed = ctx.get(TorchFacts)
    working = nvml is not None and nvml.working
    gpus = [g for g in nvml.gpus if g.capability] if nvml is not None and working else []
    return install.InstallTarget(
        os=ctx.platform.os,
        machine=ctx.platform.machine,
        python=python.minor if python else None,
        driver_version=nvml.driver_version if nvml is not None and working else None,
        driver_cuda=nvml.driver_cuda if nvml is not None and working else None,
        gpu_capabilities=tuple(g.capability for g in gpus if g.capability),
        gpu_names=tuple(g.name or f"GPU{g.index}" for g in gpus),
        torch=torch,
        want_cuda=want_cuda,
        python_launcher=(ctx.interpreter.path, "-m", "pip"),
        installed_torch=(installed.version or installed.dist_version) if installed else None,
        native_only=native_only,
    )


def planned_fix(ctx: RuleContext, summary: str, **wanted: object) -> Fix | None:
    """A fix carrying the planner's command, or None when the planner finds no fitting build."""
    return plan_fix(install.plan(install_target(ctx, **wanted)), summary)  # type: ignore[arg-type]


def plan_fix(plan: install.InstallPlan, summary: str) -> Fix | None:
    """The fix that carries `plan`'s commands; None when the plan found no fitting build."""
    if not plan.possible:
        return None
    return Fix(
        summary=f"{summary}: {plan.reason}",
        commands=tuple(c.command for c in plan.commands),
        link=GET_STARTED,
    )


def driver_fix(ctx: RuleContext, minimum: str | None = None) -> Fix:
    need = f" (at least {minimum})" if minimum else ""
    if ctx.platform.os == "linux":
        return Fix(
            summary=f"Install or upgrade the NVIDIA driver{need} (Ubuntu shown; other "
            "distributions: their NVIDIA driver package), reboot, then check with nvidia-smi",
            commands=("sudo ubuntu-drivers install", "sudo reboot"),
            link=NVIDIA_DRIVERS,
        )
    return Fix(summary=f"Install or upgrade the NVIDIA driver{need}", link=NVIDIA_DRIVERS)
