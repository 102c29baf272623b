"""How a Linux distribution installs the NVIDIA driver, chosen from os-release's ID and ID_LIKE, and
the distribution's ways to build the kernel module, rebuild the initramfs, enrol a module-signing key
for Secure Boot and install the Fabric Manager; which tools blacklist the NVIDIA modules.

Data: linux_drivers.json beside this file (sources cited per family and per field).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from envdoctor.knowledge import load_table
from envdoctor.knowledge.provenance import Provenance, provenance
from envdoctor.util.records import record

_TABLE = "linux_drivers.json"


@record
class DriverInstall:
    family: str  # "Ubuntu", or "other distributions"
    commands: tuple[str, ...]  # empty where only NVIDIA's instructions apply
    note: str | None
    link: str
    provenance: Provenance
    # Build the nvidia module for a kernel ({kernel} is the release, as `uname -r` prints it).
    rebuild: tuple[str, ...] = ()
    rebuild_note: str | None = None
    initramfs: tuple[str, ...] = ()  # rebuild the initramfs after a modprobe.d change
    secure_boot: tuple[str, ...] = ()  # enrol the key the module is signed with (MOK)
    secure_boot_note: str | None = None
    fabric_manager: tuple[str, ...] = ()  # {branch}: the driver branch, "535"
    unattended: bool = False  # the family updates packages with unattended-upgrades
    repair: tuple[str, ...] = ()  # finish a half-done package upgrade

    def rebuild_for(self, kernel: str, version: str | None = None) -> tuple[str, ...]:
        """The commands for `kernel`; `version` is the driver's, which `dkms install` needs (without
        it, `dkms autoinstall` builds what DKMS already knows)."""
        found = []
        for command in self.rebuild:
            if "{version}" in command and not version:
                command = "sudo dkms autoinstall -k {kernel}"
            found.append(command.replace("{kernel}", kernel).replace("{version}", version or ""))
        return tuple(found)

    def rebuild_note_for(self, kernel: str) -> str | None:
        return None if self.rebuild_note is None else self.rebuild_note.replace("{kernel}", kernel)

    def secure_boot_for(self, kernel: str) -> tuple[str, ...]:
        return tuple(c.replace("{kernel}", kernel) for c in self.secure_boot)

    def fabric_manager_for(self, branch: str) -> tuple[str, ...]:
        return tuple(c.replace("{branch}", branch) for c in self.fabric_manager)


def _texts(row: Mapping[str, Any], key: str) -> tuple[str, ...]:
    return tuple(str(c) for c in row.get(key) or ())


def _text(row: Mapping[str, Any], key: str) -> str | None:
    value = row.get(key)
    return str(value) if value else None


def _install(row: Mapping[str, Any]) -> DriverInstall:
    return DriverInstall(
        family=str(row["name"]),
        commands=_texts(row, "commands"),
        note=_text(row, "note"),
        link=str(row["link"]),
        provenance=provenance(row),
        rebuild=_texts(row, "rebuild"),
        rebuild_note=_text(row, "rebuild_note"),
        initramfs=_texts(row, "initramfs"),
        secure_boot=_texts(row, "secure_boot"),
        secure_boot_note=_text(row, "secure_boot_note"),
        fabric_manager=_texts(row, "fabric_manager"),
        unattended=bool(row.get("unattended", False)),
        repair=_texts(row, "repair"),
    )


@cache
def _families() -> tuple[tuple[frozenset[str], DriverInstall], ...]:
    table = load_table(_TABLE)
    return tuple((frozenset(str(i) for i in row["ids"]), _install(row)) for row in table["families"])


@cache
def _fallback() -> DriverInstall:
    return _install(load_table(_TABLE)["fallback"])


def driver_install(distro: str | None, like: Sequence[str] = ()) -> DriverInstall:
    """The family for os-release's ID, else the first ID_LIKE entry known, else NVIDIA's repository."""
    for name in (distro, *like):
        for ids, install in _families():
            if name and name.lower() in ids:
                return install
    return _fallback()


@record
class UnattendedUpgrades:
    """Where Debian-family systems keep packages out of unattended upgrades."""

    file: str
    entries: tuple[str, ...]
    note: str
    provenance: Provenance


@cache
def unattended_upgrades() -> UnattendedUpgrades:
    row = load_table(_TABLE)["unattended_upgrades"]
    return UnattendedUpgrades(str(row["file"]), _texts(row, "entries"), str(row["note"]), provenance(row))


@record
class ModuleBlocker:
    """A tool known to blacklist the NVIDIA modules on purpose, and how to undo it with that tool."""

    tool: str
    files: tuple[str, ...]  # the files it writes, by full path
    file_names: tuple[str, ...]  # or by name, in any modprobe.d folder
    profile_file: str | None  # the file that holds its profile (nvidia-prime: /etc/prime-discrete)
    profile_off: str | None  # the profile value that means "NVIDIA off"
    summary: str
    commands: tuple[str, ...]
    provenance: Provenance

    def wrote(self, path: str) -> bool:
        return path in self.files or path.rsplit("/", 1)[-1] in self.file_names


@cache
def module_blockers() -> tuple[ModuleBlocker, ...]:
    return tuple(
        ModuleBlocker(
            tool=str(row["tool"]),
            files=_texts(row, "files"),
            file_names=_texts(row, "file_names"),
            profile_file=_text(row, "profile_file"),
            profile_off=_text(row, "profile_off"),
            summary=str(row["summary"]),
            commands=_texts(row, "commands"),
            provenance=provenance(row),
        )
        for row in load_table(_TABLE)["module_blockers"]
    )


def blocker_of(path: str) -> ModuleBlocker | None:
    """The tool that writes the modprobe.d file `path`, if it is one envdoctor knows."""
    return next((b for b in module_blockers() if b.wrote(path)), None)


def profile_blocker(profile_file: str, value: str) -> ModuleBlocker | None:
    """The tool whose profile file says "NVIDIA off" with `value`."""
    return next(
        (b for b in module_blockers() if b.profile_file == profile_file and b.profile_off == value.strip()),
        None,
    )


@record
class GpuDrivers:
    """The kernel drivers that bind NVIDIA GPUs: NVIDIA's own, and the open-source ones without CUDA."""

    nvidia: frozenset[str]
    open_source: frozenset[str]
    blacklist: tuple[str, ...]  # what to blacklist so the NVIDIA module gets the GPU
    blacklist_file: str
    provenance: Provenance


@cache
def gpu_drivers() -> GpuDrivers:
    row = load_table(_TABLE)["gpu_drivers"]
    return GpuDrivers(
        nvidia=frozenset(_texts(row, "nvidia")),
        open_source=frozenset(_texts(row, "open")),
        blacklist=_texts(row, "blacklist"),
        blacklist_file=str(row["blacklist_file"]),
        provenance=provenance(row),
    )
