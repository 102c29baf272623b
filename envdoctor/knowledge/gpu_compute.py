"""An installed torch's arch list against a GPU, which official wheels carry kernels for a GPU, and what
a CUDA error text says about its cause.

The arch lists and the cubin/PTX compatibility rule come from archs.py (archs.json); the official
builds are releases.json's variants per platform. Error causes are kernel_errors.json (sources in it).
"""

from __future__ import annotations

import re
from functools import cache

from packaging.version import Version

from envdoctor import knowledge
from envdoctor.knowledge import load_table, overlay
from envdoctor.knowledge.archs import (
    ArchList,
    Capability,
    CoverageKind,
    arch_list,
    coverage,
    cubin_runs_on,
    dotted,
    ptx_runs_on,
    sm,
)
from envdoctor.util.records import record

LINUX_X86_64 = "linux-x86_64"
_ARCH = re.compile(r"^(sm|compute)_(\d+)(\d)([a-z]?)$")


@record
class ArchEntry:
    """One entry of torch.cuda.get_arch_list(): a cubin ("sm_86") or PTX ("compute_120")."""

    text: str
    ptx: bool
    capability: Capability
    suffix: str = ""  # "a": architecture-specific, "f": family-specific


def parse_arch(text: str) -> ArchEntry | None:
    match = _ARCH.match(text.strip())
    if not match:
        return None
    kind, major, minor, suffix = match.groups()
    return ArchEntry(text.strip(), kind == "compute", (int(major), int(minor)), suffix)


def parse_arch_list(entries: tuple[str, ...] | list[str]) -> tuple[ArchEntry, ...]:
    """The CUDA entries of an arch list; ROCm gfx names and anything unknown are left out."""
    parsed = (parse_arch(e) for e in entries)
    return tuple(e for e in parsed if e is not None)


def serving_entry(arch_list: tuple[ArchEntry, ...], device: Capability) -> ArchEntry | None:
    """The entry whose code runs on `device` (the newest cubin that fits, else the newest usable
    PTX, as the CUDA runtime picks); None when no entry does."""
    newest_first = sorted(arch_list, key=lambda e: e.capability, reverse=True)
    for entry in newest_first:
        if not entry.ptx and cubin_runs_on(entry.capability, device, entry.suffix):
            return entry
    for entry in newest_first:
        if entry.ptx and ptx_runs_on(entry.capability, device, entry.suffix):
            return entry
    return None


@record
class WheelBuild:
    """One official build (torch minor series x CUDA variant, for one platform) and its arch list."""

    series: str  # "2.7"
    variant: str  # "cu128"
    arch: ArchList

    @property
    def version(self) -> Version:
        return Version(self.series)

    @property
    def cuda_number(self) -> int:
        """128 for cu128: variants order by their CUDA version."""
        return int(self.variant[2:])

    def runs_on(self, device: Capability) -> bool:
        return coverage(self.arch, device).kind != CoverageKind.NONE


@cache
def wheel_builds(platform: str = LINUX_X86_64) -> tuple[WheelBuild, ...]:
    """Every (series, CUDA variant) with a known arch list on `platform`, oldest torch first."""
    found: dict[tuple[str, str], WheelBuild] = {}
    for release in knowledge.releases():
        builds = release.builds(platform)
        for variant in builds.variants if builds is not None else ():
            arch = arch_list(release, variant, platform)
            if arch is not None:
                found.setdefault((release.series, variant), WheelBuild(release.series, variant, arch))
    return tuple(sorted(found.values(), key=lambda b: (b.version, b.cuda_number)))


overlay.derived(wheel_builds.cache_clear)


def closest_build(series: str, variant: str, platform: str = LINUX_X86_64) -> WheelBuild | None:
    """The build itself, else the newest known build of `variant` up to `series`; None if none."""
    wanted = Version(series)
    same = [b for b in wheel_builds(platform) if b.variant == variant and b.version <= wanted]
    return same[-1] if same else None


def data_as_of() -> str:
    return str(load_table("archs.json")["as_of"])


@record
class ArchSupport:
    """Which official wheels for one platform run on a GPU of one compute capability."""

    capability: Capability
    builds: tuple[WheelBuild, ...]  # oldest first
    every: tuple[WheelBuild, ...]  # every build of the platform, to say what "newer" and "older" mean

    @property
    def newest_series(self) -> str | None:
        return self.builds[-1].series if self.builds else None

    @property
    def newest_variants(self) -> tuple[str, ...]:
        newest = self.newest_series
        return tuple(b.variant for b in self.builds if b.series == newest)

    def summary(self) -> str:
        """What it takes: "sm_120 needs torch >= 2.7 with cu128 or newer (newest: torch 2.12 cu132)"."""
        name = sm(self.capability)
        if not self.builds:
            return (
                f"no official wheel in envdoctor's data (as of {data_as_of()}) carries kernels for "
                f"{name}; it needs a build made for it (from source: TORCH_CUDA_ARCH_LIST="
                f'"{dotted(self.capability)}")'
            )
        every = self.every
        oldest, newest = self.builds[0], self.builds[-1]
        by_cuda = sorted(self.builds, key=lambda b: b.cuda_number)
        low, high = by_cuda[0], by_cuda[-1]
        needs = []
        if oldest.version > every[0].version:
            needs.append(f"torch >= {oldest.series}")
        if newest.version < every[-1].version:
            needs.append(f"torch <= {newest.series}")
        lowest_cuda = min(b.cuda_number for b in every)
        highest_cuda = max(b.cuda_number for b in every)
        if low.cuda_number > lowest_cuda and high.cuda_number < highest_cuda:
            needs.append(f"one of the {low.variant} to {high.variant} variants")
        elif low.cuda_number > lowest_cuda:
            needs.append(f"{low.variant} or newer")
        elif high.cuda_number < highest_cuda:
            needs.append(f"{high.variant} or older")
        what = " with ".join(needs) if needs else "any official CUDA wheel"
        return (
            f"{name} needs {what} (newest build with its kernels in envdoctor's data, as of "
            f"{data_as_of()}: torch {newest.series} {'/'.join(self.newest_variants)})"
        )


def support_for(device: Capability, platform: str = LINUX_X86_64) -> ArchSupport:
    every = wheel_builds(platform)
    return ArchSupport(device, tuple(b for b in every if b.runs_on(device)), every)


@cache
def _error_causes() -> tuple[tuple[str, tuple[str, ...]], ...]:
    rows = load_table("kernel_errors.json")["causes"]
    return tuple((str(r["cause"]), tuple(p.lower() for p in r["patterns"])) for r in rows)


def kernel_error_cause(message: str) -> str | None:
    """The likely cause of a CUDA error text: arch, memory, busy, ptx_toolchain, device_fault, library."""
    text = message.lower()
    for cause, patterns in _error_causes():
        if any(p in text for p in patterns):
            return cause
    return None
