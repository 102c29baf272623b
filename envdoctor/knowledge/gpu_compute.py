"""GPU architectures against torch builds: which kernels run on which GPU, which wheels carry them.

Typed queries over gpu_compute.json (sources in the file). The compatibility rule follows NVIDIA's
binary-compatibility rule with torch's exceptions for the integrated (Tegra/Jetson) parts; the wheel
table says which official builds carry kernels for a compute capability.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from packaging.version import Version

from envdoctor.knowledge import load_table

_TABLE = "gpu_compute.json"
_ARCH = re.compile(r"^(sm|compute)_(\d+)(\d)([a-z]?)$")


@dataclass(frozen=True, order=True)
class Capability:
    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> Capability:
        """ "8.6" -> Capability(8, 6)."""
        major, _, minor = text.partition(".")
        return cls(int(major), int(minor or 0))

    @property
    def dotted(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def sm(self) -> str:
        return f"sm_{self.major}{self.minor}"


@dataclass(frozen=True)
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
    return ArchEntry(text.strip(), kind == "compute", Capability(int(major), int(minor)), suffix)


def parse_arch_list(entries: tuple[str, ...] | list[str]) -> tuple[ArchEntry, ...]:
    """The CUDA entries of an arch list; ROCm gfx names and anything unknown are left out."""
    parsed = (parse_arch(e) for e in entries)
    return tuple(e for e in parsed if e is not None)


@dataclass(frozen=True)
class _Rules:
    own_only: frozenset[Capability]
    also_runs_on: dict[Capability, frozenset[Capability]]
    exact_suffixes: frozenset[str]


@cache
def _rules() -> _Rules:
    raw = load_table(_TABLE)["cubin_compatibility"]
    suffixes = raw["suffixes"]
    return _Rules(
        own_only=frozenset(Capability.parse(c) for c in raw["own_only"]),
        also_runs_on={
            Capability.parse(k): frozenset(Capability.parse(c) for c in v)
            for k, v in raw["also_runs_on"].items()
        },
        exact_suffixes=frozenset(k for k, v in suffixes.items() if v == "exact"),
    )


def cubin_runs_on(cubin: Capability, device: Capability, suffix: str = "") -> bool:
    """Whether a cubin built for `cubin` executes on a GPU of capability `device`."""
    rules = _rules()
    if cubin == device:
        return True
    if suffix in rules.exact_suffixes:
        return False
    if cubin in rules.own_only:
        return device in rules.also_runs_on.get(cubin, frozenset())
    if device in rules.own_only:
        return False
    return cubin.major == device.major and device.minor >= cubin.minor


def ptx_runs_on(ptx: Capability, device: Capability, suffix: str = "") -> bool:
    """Whether PTX for `ptx` can be JIT-compiled for `device` (given a driver new enough for it)."""
    if suffix in _rules().exact_suffixes:
        return ptx == device
    return device >= ptx


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


@dataclass(frozen=True)
class WheelBuild:
    """One official wheel build (torch minor series x CUDA variant) and the architectures it carries."""

    series: str  # "2.7"
    variant: str  # "cu128"
    sm: tuple[Capability, ...]
    ptx: tuple[Capability, ...]
    source: str

    @property
    def version(self) -> Version:
        return Version(self.series)

    @property
    def cuda_number(self) -> int:
        """128 for cu128: variants order by their CUDA version."""
        return int(self.variant[2:])

    def runs_on(self, device: Capability) -> bool:
        return any(cubin_runs_on(c, device) for c in self.sm) or any(ptx_runs_on(p, device) for p in self.ptx)


@cache
def wheel_builds() -> tuple[WheelBuild, ...]:
    """Every (series, variant) in the table, oldest torch first."""
    rows: list[dict[str, Any]] = load_table(_TABLE)["wheel_arch_lists"]["rows"]
    builds = [
        WheelBuild(
            series=series,
            variant=variant,
            sm=tuple(Capability.parse(c) for c in row["sm"]),
            ptx=tuple(Capability.parse(c) for c in row["ptx"]),
            source=row["source"],
        )
        for row in rows
        for series in row["torch"]
        for variant in row["variants"]
    ]
    return tuple(sorted(builds, key=lambda b: (b.version, b.cuda_number)))


def wheel_build(series: str, variant: str) -> WheelBuild | None:
    for build in wheel_builds():
        if build.series == series and build.variant == variant:
            return build
    return None


def closest_build(series: str, variant: str) -> WheelBuild | None:
    """The build itself, else the newest known build of `variant` up to `series`; None if none."""
    wanted = Version(series)
    same = [b for b in wheel_builds() if b.variant == variant and b.version <= wanted]
    return same[-1] if same else None


def data_as_of() -> str:
    return str(load_table(_TABLE)["as_of"])


@dataclass(frozen=True)
class ArchSupport:
    """Which official wheels run on a GPU of one compute capability."""

    capability: Capability
    builds: tuple[WheelBuild, ...]  # oldest first

    @property
    def newest_series(self) -> str | None:
        return self.builds[-1].series if self.builds else None

    @property
    def newest_variants(self) -> tuple[str, ...]:
        newest = self.newest_series
        return tuple(b.variant for b in self.builds if b.series == newest)

    def summary(self) -> str:
        """What it takes: "sm_120 needs torch >= 2.7 with cu128 or newer (newest: torch 2.12 cu132)"."""
        sm = self.capability.sm
        if not self.builds:
            return (
                f"no official wheel in envdoctor's data (as of {data_as_of()}) carries kernels for "
                f"{sm}; it needs a build made for it (from source: TORCH_CUDA_ARCH_LIST="
                f'"{self.capability.dotted}")'
            )
        every = wheel_builds()
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
            f"{sm} needs {what} (newest build with its kernels in envdoctor's data, as of "
            f"{data_as_of()}: torch {newest.series} {'/'.join(self.newest_variants)})"
        )


def support_for(device: Capability) -> ArchSupport:
    return ArchSupport(device, tuple(b for b in wheel_builds() if b.runs_on(device)))


@cache
def _error_causes() -> tuple[tuple[str, tuple[str, ...]], ...]:
    rows = load_table(_TABLE)["kernel_errors"]["causes"]
    return tuple((str(r["cause"]), tuple(p.lower() for p in r["patterns"])) for r in rows)


def kernel_error_cause(message: str) -> str | None:
    """The likely cause of a CUDA error text: arch, memory, busy, ptx_toolchain, device_fault, library."""
    text = message.lower()
    for cause, patterns in _error_causes():
        if any(p in text for p in patterns):
            return cause
    return None
