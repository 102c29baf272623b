"""The NVIDIA kernel module on the host (Linux): loaded at another version than the libraries, not
built for the running kernel, refused by Secure Boot, beaten to the GPU by nouveau, or blacklisted.

Each rule names one cause the host's facts confirm (NvmlFacts.host); ED103 folds under it.
"""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.knowledge.linux_drivers import blocker_of, gpu_drivers, profile_blocker, unattended_upgrades
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.nvml import PRIME_PROFILE, DriverHostFacts, NvmlFacts, NvmlStatus
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.nvml.driver_causes import (
    distribution,
    driver_installed,
    elsewhere,
    kernel_of,
    nvidia_blocks,
    open_source_holders,
    prime_off,
)

RELOAD = ("sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia", "sudo modprobe nvidia", "nvidia-smi")


def _host_case(ctx: RuleContext, *statuses: NvmlStatus) -> tuple[NvmlFacts, DriverHostFacts] | None:
    """The NVML facts and the host's driver facts, when NVML's status is one of `statuses` on a
    machine whose kernel module is its own (not a container's host, not WSL's Windows driver)."""
    nvml = ctx.need(NvmlFacts)
    if nvml.status not in statuses or nvml.host is None or elsewhere(ctx) is not None:
        return None
    return nvml, nvml.host


def _driver_version(host: DriverHostFacts) -> str | None:
    """The installed driver's version: its libraries', else the one DKMS knows."""
    if host.library_versions:
        return host.library_versions[-1]
    return host.dkms[-1].version if host.dkms else None


def _unattended_fix(ctx: RuleContext) -> Fix | None:
    if not distribution(ctx).unattended:
        return None
    hold = unattended_upgrades()
    entries = ", ".join(f'"{e}"' for e in hold.entries)
    return Fix(
        summary=f"Keep unattended upgrades from doing it again: in {hold.file}, {hold.note} ({entries})",
        link=hold.provenance.source[0] if hold.provenance.source else None,
    )


@rule(
    code="ED130",
    name="driver-library-version-mismatch",
    severity=Severity.ERROR,
    summary="the loaded NVIDIA kernel module is older than the driver libraries: reboot, then hold upgrades",
    needs=(NvmlFacts,),
    consequence_of=("ED122",),  # inside a container the image's own driver is the cause
    doc=RuleDoc(
        what="NVML's 'Driver/library version mismatch' on the host itself (not in a container), with "
        "the loaded module's version (/proc/driver/nvidia/version), the user-space libraries' "
        "(libnvidia-ml.so.<version>) and the module DKMS built for the running kernel.",
        why="A package update (often unattended-upgrades overnight) replaced the driver's libraries "
        "while the old kernel module stayed loaded; every new CUDA or NVML program fails until the "
        "new module is loaded. Reinstalling the driver does not help: the old module is still in "
        "memory.",
        fix="Reboot (or unload and reload the nvidia modules where nothing uses the GPU), and keep "
        "unattended upgrades off the NVIDIA packages so it does not happen again. Where the module "
        "built for this kernel is still the old version, the upgrade itself is unfinished: complete "
        "it first.",
        example="unattended-upgrade moved libnvidia-compute-460 from 460.56 to 460.73.01 overnight; "
        "nvidia-smi: 'Failed to initialize NVML: Driver/library version mismatch'.",
    ),
)
def driver_library_version_mismatch(ctx: RuleContext) -> Iterator[Hit]:
    found = _host_case(ctx, NvmlStatus.VERSION_MISMATCH)
    if found is None:
        return
    nvml, host = found
    kernel = kernel_of(ctx, host)
    loaded = host.loaded_version
    libraries = host.library_versions
    evidence = ["nvml.status = version_mismatch"]
    versions = ""
    if loaded:
        evidence.append(f"loaded kernel module {loaded}")
    if libraries:
        evidence.append(f"driver libraries {', '.join(libraries)}")
    if loaded and libraries:
        versions = f" The loaded kernel module is {loaded}; the libraries are {', '.join(libraries)}."
    newest = libraries[-1] if libraries else None
    built = {b.version for b in host.dkms if kernel in b.kernels}
    unfinished = bool(newest and built and newest not in built)
    how = distribution(ctx)
    if unfinished:
        evidence.append(f"DKMS built {', '.join(sorted(built))} for {kernel}")
        detail = (
            f"The driver libraries were upgraded but the kernel module built for {kernel} is still "
            f"{', '.join(sorted(built))}: the upgrade stopped half-way (a failed module build or "
            f"held packages), so a reboot alone loads the old module again.{versions}"
        )
        commands = (*how.repair, *how.rebuild_for(kernel, newest), "sudo reboot")
        fixes = [
            Fix(
                summary="Finish the driver upgrade so the module for this kernel matches the libraries, "
                "then reboot",
                commands=commands,
            )
        ]
    else:
        detail = (
            "The driver's libraries were upgraded (often by an unattended upgrade) while the old "
            "kernel module stayed loaded: NVML and CUDA refuse to run until the new module is "
            f"loaded.{versions} Reinstalling the driver does not change the module in memory; a reboot does."
        )
        fixes = [
            Fix(summary="Reboot to load the new kernel module", commands=("sudo reboot",)),
            Fix(
                summary="Where no process uses the GPU (no desktop session on it), reload the modules "
                "without a reboot",
                commands=RELOAD,
            ),
        ]
    hold = _unattended_fix(ctx)
    if hold is not None:
        fixes.append(hold)
    yield Hit(
        title="the NVIDIA kernel module in memory does not match the driver libraries (a reboot is pending)",
        detail=f"{detail} NVML said: {nvml.error or 'Driver/library version mismatch'}.",
        evidence=tuple(evidence),
        fixes=tuple(fixes),
    )


@rule(
    code="ED131",
    name="nvidia-module-not-built-for-kernel",
    severity=Severity.ERROR,
    summary="the NVIDIA driver is installed but no nvidia module exists for the running kernel",
    needs=(NvmlFacts,),
    doc=RuleDoc(
        what="Whether the running kernel's modules.dep lists an nvidia module while the driver cannot "
        "be reached, which other installed kernels have one, and what DKMS built for which kernel.",
        why="The kernel module is built per kernel. A kernel update (or a custom kernel) without DKMS, "
        "without that kernel's headers, or with a failed build leaves the driver's libraries with no "
        "module to talk to: nvidia-smi 'couldn't communicate with the NVIDIA driver', modprobe "
        "'Module nvidia not found'.",
        fix="Build the module for the running kernel (the kernel's headers, then DKMS or akmods), or "
        "reinstall the driver with DKMS so the next kernel update builds it too; booting the older "
        "kernel that has it works meanwhile.",
        example="Ubuntu 14.04 upgraded from kernel 3.13.0-88 to 3.13.0-116; the .run-installed driver "
        "375.39 has a module only for -88: 'modprobe: FATAL: Module nvidia not found'.",
    ),
)
def nvidia_module_not_built_for_kernel(ctx: RuleContext) -> Iterator[Hit]:
    found = _host_case(ctx, NvmlStatus.DRIVER_NOT_LOADED, NvmlStatus.ERROR)
    if found is None:
        return
    _, host = found
    if not host.module_indexed or host.module_file is not None or host.nvidia_loaded:
        return
    kernel = kernel_of(ctx, host)
    evidence = [f"no nvidia module in /lib/modules/{kernel}/modules.dep"]
    detail = (
        f"The NVIDIA driver is installed, but no nvidia kernel module exists for the running kernel {kernel}"
    )
    if host.kernels_with_module:
        others = ", ".join(host.kernels_with_module[:3])
        evidence.append(f"kernels with an nvidia module: {others}")
        detail += (
            f" (kernel {others} has one): the kernel was updated and the module was not rebuilt for the "
            "new one"
        )
    built = host.dkms_kernels()
    if host.dkms:
        versions = ", ".join(sorted({b.version for b in host.dkms}))
        evidence.append(f"DKMS: nvidia {versions} built for {', '.join(built) or 'no kernel'}")
        detail += f". DKMS knows nvidia {versions} but has built it for {', '.join(built) or 'no kernel'}."
    elif host.module_sources:
        source = f"/usr/src/nvidia-{host.module_sources[-1]}"
        evidence.append(f"module source: {source}")
        detail += f". Its source is in {source}, but DKMS has not built it (is dkms installed?)."
    else:
        detail += ". DKMS has no nvidia module registered, so a kernel update does not rebuild it."
    detail += " nvidia-smi 'couldn't communicate with the NVIDIA driver' and CUDA finds no GPU."
    how = distribution(ctx)
    driver = _driver_version(host)
    # `dkms install` builds from the source in /usr/src: its version is the one to name.
    commands = how.rebuild_for(kernel, host.module_sources[-1] if host.module_sources else driver)
    note = how.rebuild_note_for(kernel)
    fixes: list[Fix] = []
    if commands:
        fixes.append(
            Fix(
                summary=f"Build the module for kernel {kernel} (on {how.family}: its headers, then DKMS or "
                "akmods), then load it" + (f"; {note}" if note else ""),
                commands=(*commands, "sudo modprobe nvidia", "nvidia-smi"),
                link=how.link,
            )
        )
    elif note:
        fixes.append(
            Fix(summary=f"Build the module for kernel {kernel}: on {how.family}, {note}", link=how.link)
        )
    if not host.dkms and not host.module_sources:
        version = driver or "<version>"
        arch = "aarch64" if ctx.platform.machine in ("aarch64", "arm64") else "x86_64"
        rerun = Fix(
            summary=f"The driver is not registered with DKMS (NVIDIA's .run installer without --dkms): "
            f"rerun the {version} installer with --dkms, this kernel's headers installed first, so "
            "this kernel and every later one get the module",
            commands=(f"sudo sh NVIDIA-Linux-{arch}-{version}.run --dkms", "nvidia-smi"),
            link="https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/index.html",
        )
        # DKMS cannot rebuild a module it does not know: the installer comes first there.
        dkms_based = any("dkms" in c for c in commands)
        fixes.insert(0 if dkms_based else len(fixes), rerun)
    if host.kernels_with_module:
        older = host.kernels_with_module[0]
        fixes.append(Fix(summary=f"Meanwhile, boot kernel {older} from the boot menu: it has the module"))
    yield Hit(
        title=f"no NVIDIA kernel module is built for the running kernel {kernel}",
        detail=detail,
        evidence=tuple(evidence),
        fixes=tuple(fixes),
    )


@rule(
    code="ED132",
    name="secure-boot-blocks-nvidia-module",
    severity=Severity.ERROR,
    summary="Secure Boot is on and the nvidia module, though built, is not loaded: its key is not enrolled",
    needs=(NvmlFacts,),
    consequence_of=("ED131",),  # no module at all comes first
    doc=RuleDoc(
        what="Secure Boot's state (the SecureBoot EFI variable) while the nvidia module exists for the "
        "running kernel but is not loaded and NVML cannot reach the driver.",
        why="With Secure Boot on, the kernel loads only modules signed with a key in its keyring. A "
        "DKMS or akmods build is signed with a local key (MOK) that has to be enrolled once at boot; "
        "until then modprobe says 'Key was rejected by service' and the driver never loads.",
        fix="Enrol the key the module is signed with (mokutil --import, then Enroll MOK at the next "
        "boot), or turn Secure Boot off in the firmware settings.",
        example="Fedora with akmod-nvidia after a firmware reset turned Secure Boot back on: 'NVIDIA "
        "kernel module missing', nvidia-smi works again with Secure Boot off.",
    ),
)
def secure_boot_blocks_nvidia_module(ctx: RuleContext) -> Iterator[Hit]:
    found = _host_case(ctx, NvmlStatus.DRIVER_NOT_LOADED, NvmlStatus.ERROR)
    if found is None:
        return
    _, host = found
    if not host.secure_boot or host.module_file is None or host.nvidia_loaded:
        return
    kernel = kernel_of(ctx, host)
    how = distribution(ctx)
    commands = how.secure_boot_for(kernel)
    fixes = []
    if commands:
        note = f" ({how.secure_boot_note})" if how.secure_boot_note else ""
        fixes.append(
            Fix(
                summary=f"Enrol the key the module is signed with, on {how.family}{note}",
                commands=commands,
                link=how.link,
            )
        )
    else:
        fixes.append(
            Fix(
                summary="Sign the nvidia module with a key enrolled through mokutil (your distribution's "
                "Secure Boot guide says how)",
                link=how.link,
            )
        )
    fixes.append(Fix(summary="Turn Secure Boot off in the firmware (UEFI) settings, then boot again"))
    yield Hit(
        title="Secure Boot keeps the nvidia kernel module from loading",
        detail=f"Secure Boot is on, and the nvidia module built for kernel {kernel} ({host.module_file}) "
        "is not loaded: the kernel refuses a module whose signing key is not enrolled, so "
        "NVIDIA-SMI 'couldn't communicate with the NVIDIA driver'. `sudo modprobe nvidia` says 'Key "
        "was rejected by service' when this is the cause.",
        evidence=("Secure Boot enabled", f"module on disk: {host.module_file}", "nvidia module not loaded"),
        fixes=tuple(fixes),
    )


def _blacklist_commands(ctx: RuleContext) -> tuple[str, ...]:
    drivers = gpu_drivers()
    lines = "\\n".join([*(f"blacklist {m}" for m in drivers.blacklist), "options nouveau modeset=0"])
    return (f"printf '{lines}\\n' | sudo tee {drivers.blacklist_file}", *distribution(ctx).initramfs)


@rule(
    code="ED133",
    name="nouveau-holds-nvidia-gpu",
    severity=Severity.ERROR,
    summary="nouveau (or nova_core) holds the NVIDIA GPU, so the NVIDIA driver cannot bind it",
    needs=(NvmlFacts,),
    consequence_of=("ED131",),
    doc=RuleDoc(
        what="The kernel driver each NVIDIA GPU is bound to (/sys/bus/pci/devices/*/driver) while the "
        "NVIDIA driver is installed, and whether nouveau and nova are already blacklisted.",
        why="nouveau, and nova_core on kernels from 6.15, claim every NVIDIA display device at boot; "
        "they have no CUDA, and the nvidia module cannot bind a GPU another driver holds ('NVRM: The "
        "NVIDIA probe routine was not called', 'already bound to NovaCore').",
        fix="Blacklist nouveau, nova_core and nova_drm in modprobe.d, rebuild the initramfs (which "
        "carries its own copy of the modules) and reboot.",
        example="CentOS 8 with cuda-drivers 384.81 from the CUDA repository: nouveau was not "
        "blacklisted, 'NVRM: nouveau, rivafb, nvidiafb or rivatv was loaded and obtained ownership "
        "of the NVIDIA device(s)'.",
    ),
)
def nouveau_holds_nvidia_gpu(ctx: RuleContext) -> Iterator[Hit]:
    found = _host_case(ctx, *(s for s in NvmlStatus if s != NvmlStatus.OK))
    if found is None:
        return
    nvml, host = found
    holders = open_source_holders(host)
    already = host.blocked("nouveau")
    nova = any("nova" in h.lower() for h in holders)
    # Without an NVIDIA driver, nouveau is simply the driver there is (ED103: install one). nova_core
    # and a nouveau already blacklisted are another matter: installing the driver would not help.
    if not holders or not (driver_installed(nvml, host) or nova or already):
        return
    how = distribution(ctx)
    if already:
        where = already[0].source
        fixes = (
            Fix(
                summary=f"nouveau is already blacklisted ({where}): rebuild the initramfs, which still "
                "carries it, and reboot",
                commands=(*how.initramfs, "sudo reboot"),
            ),
        )
        why = (
            f" nouveau is blacklisted in {where}, but that takes effect only at the next boot (from a "
            "rebuilt initramfs)."
        )
    else:
        fixes = (
            Fix(
                summary="Blacklist the open-source drivers so the nvidia module gets the GPU, rebuild the "
                "initramfs, and reboot",
                commands=(*_blacklist_commands(ctx), "sudo reboot"),
                link=how.link,
            ),
        )
        why = " Nothing blacklists it, so it takes the GPU again at every boot."
    names = "nova_core" if nova else "nouveau"
    if driver_installed(nvml, host):
        start = f"The NVIDIA driver is installed, but {', '.join(holders)} is driven by"
    else:
        start = f"{', '.join(holders)} is driven by"
    yield Hit(
        title=f"the open-source {names} driver holds the NVIDIA GPU, so the NVIDIA driver cannot use it",
        detail=f"{start} an open-source driver without CUDA, and the nvidia module cannot bind a GPU "
        "another driver holds ('NVRM: The NVIDIA probe routine was not called', 'already bound to "
        f"NovaCore'): installing or reinstalling the NVIDIA driver does not change that.{why}",
        evidence=tuple(f"GPU driver: {h}" for h in holders),
        fixes=fixes,
    )


@rule(
    code="ED134",
    name="nvidia-module-blacklisted",
    severity=Severity.ERROR,
    summary="the nvidia module is blacklisted (prime-select intel, modprobe.d or the kernel command line)",
    needs=(NvmlFacts,),
    consequence_of=("ED131",),
    doc=RuleDoc(
        what="Blacklist, 'install ... /bin/false' and 'alias ... off' lines for the nvidia module in "
        "modprobe.d, modprobe.blacklist= on the kernel command line, and nvidia-prime's profile "
        "(/etc/prime-discrete), while the module is not loaded.",
        why="On Optimus laptops `prime-select intel` blacklists the NVIDIA modules to save power, which "
        "takes CUDA away with the display; suse-prime's bbswitch setup and hand-written blacklists do "
        "the same. nvidia-smi then 'couldn't communicate with the NVIDIA driver'.",
        fix="With nvidia-prime, `prime-select on-demand` renders on the integrated GPU but keeps the "
        "NVIDIA driver loaded for CUDA; with suse-prime, `prime-select offload`; otherwise remove "
        "the blacklist line, rebuild the initramfs and reboot.",
        example="Ubuntu laptop switched to `prime-select intel` for battery life: torch.cuda.is_available() "
        "is False and `modprobe nvidia` fails on 'alias nvidia off'.",
    ),
)
def nvidia_module_blacklisted(ctx: RuleContext) -> Iterator[Hit]:
    found = _host_case(ctx, NvmlStatus.DRIVER_NOT_LOADED, NvmlStatus.ERROR)
    if found is None:
        return
    _, host = found
    if host.nvidia_loaded:
        return
    blocks = nvidia_blocks(host)
    off = prime_off(host)
    if not blocks and not off:
        return
    evidence = [f"{b.source}: {b.how} {b.module}" for b in blocks]
    tool = next((t for t in (blocker_of(b.source) for b in blocks) if t is not None), None)
    if off and host.prime_profile is not None:
        evidence.append(f"{PRIME_PROFILE}: {host.prime_profile}")
        tool = tool or profile_blocker(PRIME_PROFILE, host.prime_profile)
    if tool is not None:
        fixes: tuple[Fix, ...] = (
            Fix(
                summary=tool.summary,
                commands=tool.commands,
                link=tool.provenance.source[0] if tool.provenance.source else None,
            ),
        )
        said = f"{tool.tool} set it up this way"
    else:
        where = ", ".join(dict.fromkeys(b.source for b in blocks))
        initramfs = distribution(ctx).initramfs
        if all(b.source == "/proc/cmdline" for b in blocks):
            summary = (
                "Remove modprobe.blacklist=nvidia (or module_blacklist=) from the kernel command line "
                "(GRUB_CMDLINE_LINUX in /etc/default/grub, then update-grub or grub2-mkconfig), and reboot"
            )
            commands: tuple[str, ...] = ()
        else:
            summary = f"Remove the lines that block nvidia from {where}, rebuild the initramfs and reboot"
            commands = (*initramfs, "sudo reboot")
        fixes = (Fix(summary=summary, commands=commands),)
        said = f"{where} blocks it"
    yield Hit(
        title="the nvidia kernel module is blacklisted, so CUDA has no driver",
        detail=f"The NVIDIA driver is installed but its module is kept from loading ({said}), so "
        "NVIDIA-SMI 'couldn't communicate with the NVIDIA driver' and torch sees no GPU.",
        evidence=tuple(evidence),
        fixes=fixes,
    )
