"""Why an installed NVIDIA driver does not load: the causes "NVIDIA-SMI has failed because it
couldn't communicate with the NVIDIA driver" has, ranked most likely first from the host's facts,
each with the command that tells it apart. No rules here: the rules of driver_module.py name a
cause the facts confirm; ED103 lists the ones still open when none is confirmed.
"""

from __future__ import annotations

from envdoctor.knowledge.linux_drivers import DriverInstall, driver_install, gpu_drivers, profile_blocker
from envdoctor.probes.gpu_access import GpuAccessFacts
from envdoctor.probes.nvml import PRIME_PROFILE, DriverHostFacts, ModuleBlock, NvmlFacts, NvmlStatus
from envdoctor.probes.system import SystemFacts
from envdoctor.rules.base import RuleContext
from envdoctor.rules.symptoms import POSSIBLE, RULED_OUT, Likelihood, RankedCause, Reading, ranked, reads

NVIDIA_MODULES = ("nvidia", "nvidia_current")
SYMPTOM = "ED103"


def host_of(ctx: RuleContext) -> DriverHostFacts | None:
    nvml = ctx.get(NvmlFacts)
    return nvml.host if nvml is not None else None


def elsewhere(ctx: RuleContext) -> str | None:
    """ "a docker container" or "WSL" where the kernel module is not this system's to fix."""
    system = ctx.get(SystemFacts)
    access = ctx.get(GpuAccessFacts)
    container = (access.container if access else None) or (system.container if system else None)
    if container:
        return f"a {container} container"
    if (system is not None and system.wsl) or (access is not None and access.wsl):
        return "WSL"
    return None


def distribution(ctx: RuleContext) -> DriverInstall:
    system = ctx.get(SystemFacts)
    return driver_install(system.distro if system else None, system.distro_like if system else ())


def kernel_of(ctx: RuleContext, host: DriverHostFacts | None) -> str:
    return (host.kernel if host is not None else None) or ctx.platform.release or "$(uname -r)"


def nvidia_blocks(host: DriverHostFacts) -> tuple[ModuleBlock, ...]:
    return host.blocked(*NVIDIA_MODULES)


def prime_off(host: DriverHostFacts) -> bool:
    return host.prime_profile is not None and profile_blocker(PRIME_PROFILE, host.prime_profile) is not None


def open_source_holders(host: DriverHostFacts) -> tuple[str, ...]:
    """ "0000:01:00.0 (nouveau)" for each NVIDIA GPU an open-source driver holds; where the bindings
    are unknown, the open-source modules that are loaded."""
    drivers = gpu_drivers().open_source
    bound = [f"{p.address} ({p.driver})" for p in host.pci if p.driver in drivers]
    if bound or any(p.driver for p in host.pci):
        return tuple(bound)
    return tuple(m for m in host.loaded_modules or () if m in {d.replace("-", "_") for d in drivers})


def driver_installed(nvml: NvmlFacts, host: DriverHostFacts) -> bool:
    """Whether an NVIDIA driver is installed at all (its libraries, a module or a DKMS build)."""
    installed = bool(host.library_versions or host.module_file or host.dkms)
    return installed or nvml.status != NvmlStatus.LIBRARY_NOT_FOUND


# The readers of ED103's causes (knowledge/symptoms.json): what the host's facts make of each.


def _host(ctx: RuleContext) -> DriverHostFacts | None:
    return host_of(ctx)


@reads(SYMPTOM, "module-missing")
def _module_missing(ctx: RuleContext) -> Reading:
    host = _host(ctx)
    kernel = kernel_of(ctx, host)
    title = f"no nvidia kernel module is built for the running kernel {kernel}"
    if host is not None and host.module_indexed and host.module_file is None:
        if host.kernels_with_module:
            title += f" (kernel {host.kernels_with_module[0]} has one: a kernel update left it behind)"
        return Reading(Likelihood.CONFIRMED, title=title)
    if host is not None and host.module_file is not None:
        return RULED_OUT
    return Reading(Likelihood.POSSIBLE, title=title)


@reads(SYMPTOM, "secure-boot")
def _secure_boot(ctx: RuleContext) -> Reading:
    host = _host(ctx)
    if host is not None and host.secure_boot is False:
        return RULED_OUT
    if host is not None and host.secure_boot and host.module_file is not None:
        return Reading(Likelihood.CONFIRMED)
    return POSSIBLE


@reads(SYMPTOM, "nouveau")
def _open_source(ctx: RuleContext) -> Reading:
    host = _host(ctx)
    if host is not None:
        if open_source_holders(host):
            return Reading(Likelihood.CONFIRMED)
        if host.pci and host.loaded_modules is not None:
            return RULED_OUT
    return POSSIBLE


@reads(SYMPTOM, "blacklisted")
def _blacklisted(ctx: RuleContext) -> Reading:
    host = _host(ctx)
    if host is not None:
        if nvidia_blocks(host) or prime_off(host):
            return Reading(Likelihood.CONFIRMED)
        if host.blocks is not None:
            return RULED_OUT
    return POSSIBLE


@reads(SYMPTOM, "not-loaded-yet")
def _not_loaded_yet(ctx: RuleContext) -> Reading:
    host = _host(ctx)
    if host is not None and host.module_indexed and host.module_file is None:
        return RULED_OUT  # no module to load: a reboot would not load one
    return POSSIBLE


def not_loaded_causes(ctx: RuleContext) -> tuple[RankedCause, ...]:
    """Why the installed driver's module is not loaded, most likely first: what the facts confirm,
    then what they leave open in the order threads report them (a kernel update, Secure Boot,
    nouveau, a blacklist, a pending reboot); what they rule out is left out."""
    return ranked(ctx, SYMPTOM)
