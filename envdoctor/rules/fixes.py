"""Fix builders shared by rules: the planner's command for this machine, driver downloads."""

from __future__ import annotations

import dataclasses

from envdoctor.install import packages, sources
from envdoctor.install import plan as install
from envdoctor.install.commands import CommandKind, command_text
from envdoctor.knowledge.linux_drivers import driver_install
from envdoctor.model.findings import Fix, FixKind
from envdoctor.model.sources import MirrorFacts, SourcesFacts
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.system import SystemFacts
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
        sources=install_sources(ctx),
        asked=False,  # the variant and want_cuda a rule passes are its choice, not the user's
    )


def install_sources(ctx: RuleContext) -> sources.Sources | None:
    """What pip will really use here, from the mirrors and sources probes' facts; None when the
    sources probe did not run (a snapshot from before it): the fix is then the official command."""
    looked = ctx.get(SourcesFacts)
    configured = ctx.get(MirrorFacts)
    if looked is None or configured is None:
        return None
    from envdoctor.knowledge.mirrors import pypi_default_url

    return sources.from_facts(
        "pip", configured.pip, configured.uv, configured.conda, looked, pypi_default_url()
    )


def planned_fix(ctx: RuleContext, summary: str, **wanted: object) -> Fix | None:
    """A fix carrying the planner's command, or None when the planner finds no fitting build."""
    if ctx.interpreter.own_isolated:
        return project_environment_fix(ctx)
    return plan_fix(ctx, install.plan(install_target(ctx, **wanted)), summary)  # type: ignore[arg-type]


def package_fix(
    ctx: RuleContext, summary: str, request: packages.PackageRequest, link: str | None = None
) -> Fix:
    """A fix that installs packages other than a torch build, as the planner routes it on this
    machine's sources; where no command can work here, the fix says why instead of giving one."""
    if ctx.interpreter.own_isolated:
        return project_environment_fix(ctx)
    found = packages.plan_packages(install_target(ctx), request)
    if not found.possible:
        return Fix(summary=f"{summary}; no command for it works here: {found.reason}", link=link)
    return Fix(
        summary=summary,
        commands=tuple(command_text(c, ctx.platform.os) for c in found.commands),
        link=link,
        kind=FixKind.INSTALL,
    )


def with_uninstall(uninstall: str, install: Fix) -> Fix:
    """`install` preceded by the uninstall it repairs; where the planner has no install command
    here, no uninstall either (it would leave the environment worse than it found it)."""
    if not install.commands:
        return install
    return dataclasses.replace(install, commands=(uninstall, *install.commands))


def elsewhere_package_fix(summary: str, request: packages.PackageRequest, os_name: str = "linux") -> Fix:
    """Packages for another machine's environment (a fleet's node): its official sources, run with
    the `python` of that environment."""
    found = packages.plan_packages(
        install.InstallTarget(os=os_name, python_launcher=("python", "-m", "pip")), request
    )
    return Fix(
        summary=summary,
        commands=tuple(command_text(c, os_name) for c in found.commands),
        kind=FixKind.INSTALL,
    )


def conda_fix(ctx: RuleContext, summary: str, request: packages.CondaRequest, link: str | None = None) -> Fix:
    """A fix that installs conda packages into the examined conda environment, as the planner says."""
    found = packages.plan_conda(install_sources(ctx), request)
    return Fix(
        summary=summary if found.possible else f"{summary}; no command for it works here: {found.reason}",
        commands=tuple(command_text(c, ctx.platform.os) for c in found.commands),
        link=link,
    )


def project_environment_fix(ctx: RuleContext) -> Fix:
    """Where envdoctor examined its own isolated environment (nothing else was found), torch does
    not belong there: the fix is a project environment, examined next."""
    windows = ctx.platform.os == "windows"
    create = "py -m venv .venv" if windows else "python3 -m venv .venv"
    return Fix(
        summary="Create a project environment and examine it (torch does not belong in envdoctor's own "
        "environment); that check shows the command that installs torch there",
        commands=(create, "envdoctor check --python .venv"),
    )


def plan_fix(ctx: RuleContext, plan: install.InstallPlan, summary: str) -> Fix | None:
    """The fix that carries `plan`'s commands; None when the plan found no fitting build."""
    if not plan.possible:
        return None
    told = f". {plan.source}" if plan.source is not None and plan.route is not install.Route.INDEX else ""
    if plan.unverified:  # a release newer than the data: the sentence that says so comes first
        told += f". {plan.warnings[0]}"
    return Fix(
        summary=f"{summary}: {plan.reason}{told}",
        commands=plan_commands(ctx, plan),
        link=GET_STARTED,
        kind=FixKind.INSTALL if all(c.kind is CommandKind.SHELL for c in plan.commands) else FixKind.MANUAL,
    )


def plan_commands(ctx: RuleContext, plan: install.InstallPlan) -> tuple[str, ...]:
    """The plan's commands as text for this machine's shell: a Fix's commands are rendered here."""
    return tuple(command_text(c, ctx.platform.os) for c in plan.commands)


def driver_fix(ctx: RuleContext, minimum: str | None = None) -> Fix:
    """The driver install for this machine's distribution (os-release), else NVIDIA's instructions."""
    need = f" (at least {minimum})" if minimum else ""
    if ctx.platform.os == "linux":
        system = ctx.get(SystemFacts)
        if system is not None and system.wsl:  # WSL runs the Windows driver: never a Linux one
            from envdoctor.knowledge.gpu_access import windows_driver_fix

            return windows_driver_fix(minimum)
        how = driver_install(system.distro if system else None, system.distro_like if system else ())
        if not how.commands:
            return Fix(
                summary=f"Install or upgrade the NVIDIA driver{need} {how.note}, reboot, then check "
                "with nvidia-smi",
                link=how.link,
            )
        where = f"on {how.family}, {how.note}" if how.note else f"on {how.family}"
        return Fix(
            summary=f"Install or upgrade the NVIDIA driver{need}, reboot, then check with "
            f"nvidia-smi; {where}:",
            commands=(*how.commands, "sudo reboot"),
            link=how.link,
        )
    return Fix(summary=f"Install or upgrade the NVIDIA driver{need}", link=NVIDIA_DRIVERS)
