"""Why an installed NVIDIA driver does not load: the causes "NVIDIA-SMI has failed because it
couldn't communicate with the NVIDIA driver" has, ranked most likely first from the host's facts,
each with the command that tells it apart. No rules here: the rules of driver_module.py name a
cause the facts confirm; ED103 lists the ones still open when none is confirmed.
"""

from __future__ import annotations

from dataclasses import dataclass

from envdoctor.knowledge.linux_drivers import DriverInstall, driver_install, gpu_drivers, profile_blocker
from envdoctor.model.types import TextEnum
from envdoctor.probes.gpu_access import GpuAccessFacts
from envdoctor.probes.nvml import PRIME_PROFILE, DriverHostFacts, ModuleBlock, NvmlFacts, NvmlStatus
from envdoctor.probes.system import SystemFacts
from envdoctor.rules.base import RuleContext

NVIDIA_MODULES = ("nvidia", "nvidia_current")


class Likelihood(TextEnum):
    CONFIRMED = "confirmed"  # the facts show it
    POSSIBLE = "possible"  # the facts neither show nor rule it out
    RULED_OUT = "ruled_out"


@dataclass(frozen=True)
class Cause:
    key: str
    code: str  # the rule that names this cause when the facts confirm it
    title: str
    check: str  # the command that tells this cause apart, and what it prints when it is the one
    likelihood: Likelihood


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


def _module_missing(host: DriverHostFacts | None, kernel: str) -> Cause:
    title = f"no nvidia kernel module is built for the running kernel {kernel}"
    likelihood = Likelihood.POSSIBLE
    if host is not None and host.module_indexed and host.module_file is None:
        likelihood = Likelihood.CONFIRMED
        if host.kernels_with_module:
            title += f" (kernel {host.kernels_with_module[0]} has one: a kernel update left it behind)"
    elif host is not None and host.module_file is not None:
        likelihood = Likelihood.RULED_OUT
    return Cause(
        "module-missing",
        "ED131",
        title,
        "`modinfo -F version nvidia` says 'Module nvidia not found', and `dkms status` lists no build "
        "for this kernel",
        likelihood,
    )


def _secure_boot(host: DriverHostFacts | None) -> Cause:
    likelihood = Likelihood.POSSIBLE
    if host is not None and host.secure_boot is False:
        likelihood = Likelihood.RULED_OUT
    elif host is not None and host.secure_boot and host.module_file is not None:
        likelihood = Likelihood.CONFIRMED
    return Cause(
        "secure-boot",
        "ED132",
        "Secure Boot refuses the nvidia module, which is not signed with an enrolled key",
        "`mokutil --sb-state` says 'SecureBoot enabled', and `sudo modprobe nvidia` says 'Key was "
        "rejected by service'",
        likelihood,
    )


def _open_source(host: DriverHostFacts | None) -> Cause:
    likelihood = Likelihood.POSSIBLE
    if host is not None:
        if open_source_holders(host):
            likelihood = Likelihood.CONFIRMED
        elif host.pci and host.loaded_modules is not None:
            likelihood = Likelihood.RULED_OUT
    return Cause(
        "nouveau",
        "ED133",
        "nouveau (or nova_core) holds the GPU, so the nvidia module cannot bind it",
        "`lspci -nnk -d 10de:` says 'Kernel driver in use: nouveau' (or nova_core)",
        likelihood,
    )


def _blacklisted(host: DriverHostFacts | None) -> Cause:
    likelihood = Likelihood.POSSIBLE
    if host is not None:
        if nvidia_blocks(host) or prime_off(host):
            likelihood = Likelihood.CONFIRMED
        elif host.blocks is not None:
            likelihood = Likelihood.RULED_OUT
    return Cause(
        "blacklisted",
        "ED134",
        "the nvidia module is blacklisted (prime-select's intel profile, a modprobe.d file or the "
        "kernel command line)",
        "`prime-select query` says 'intel', or `grep -rs nvidia /etc/modprobe.d /lib/modprobe.d "
        "/usr/lib/modprobe.d /proc/cmdline` shows a blacklist line",
        likelihood,
    )


def _not_loaded_yet(host: DriverHostFacts | None) -> Cause:
    likelihood = Likelihood.POSSIBLE
    if host is not None and host.module_indexed and host.module_file is None:
        likelihood = Likelihood.RULED_OUT
    return Cause(
        "not-loaded-yet",
        "ED103",
        "the driver was installed or updated and the machine has not been rebooted since, so its "
        "module was never loaded",
        "`sudo modprobe nvidia && nvidia-smi` works, and a reboot keeps it working",
        likelihood,
    )


def not_loaded_causes(host: DriverHostFacts | None, kernel: str) -> tuple[Cause, ...]:
    """Why the installed driver's module is not loaded, most likely first: what the facts confirm,
    then what they leave open in the order threads report them (a kernel update, Secure Boot,
    nouveau, a blacklist, a pending reboot); what they rule out is left out."""
    prior = (
        _module_missing(host, kernel),
        _secure_boot(host),
        _open_source(host),
        _blacklisted(host),
        _not_loaded_yet(host),
    )
    rank = {Likelihood.CONFIRMED: 0, Likelihood.POSSIBLE: 1}
    kept = [c for c in prior if c.likelihood is not Likelihood.RULED_OUT]
    return tuple(sorted(kept, key=lambda c: rank[c.likelihood]))


def numbered(causes: tuple[Cause, ...]) -> str:
    def said(cause: Cause) -> str:
        shown = " (the facts show this)" if cause.likelihood is Likelihood.CONFIRMED else ""
        return f"{cause.title}{shown}: {cause.check}."

    return " ".join(f"{i}) {said(c)}" for i, c in enumerate(causes, 1))
