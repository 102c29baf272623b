"""Windows runtime facts as typed queries: the VC++ redistributable, torch's DLL loading, path limits.

Data: windows.json beside this file (sources cited there, per table).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from packaging.version import Version

from envdoctor.knowledge import load_table, parse_version
from envdoctor.knowledge.provenance import Provenance, provenance

_TABLE = "windows.json"


@dataclass(frozen=True)
class VcRedist:
    registry_key: str
    registry_views: tuple[int, ...]
    download: str
    silent_install: str
    winget_id: str
    runtime_dlls: tuple[str, ...]


@dataclass(frozen=True)
class RuntimeMinimum:
    """From torch `torch` on, `dll` must be at least `minimum` (with the caveat to state)."""

    torch: Version
    dll: str
    minimum: Version
    error: str
    caveat: str
    provenance: Provenance

    @property
    def source(self) -> tuple[str, ...]:
        return self.provenance.source


@dataclass(frozen=True)
class PathLimits:
    max_path: int
    torch_longest_relative_path: int
    long_paths_key: str
    store_python_markers: tuple[str, ...]


@cache
def vc_redist() -> VcRedist:
    row = load_table(_TABLE)["vc_redist"]
    return VcRedist(
        registry_key=row["registry_key"],
        registry_views=tuple(int(v) for v in row["registry_views"]),
        download=row["download"],
        silent_install=row["silent_install"],
        winget_id=row["winget_id"],
        runtime_dlls=tuple(row["runtime_dlls"]),
    )


@cache
def _minimums() -> tuple[RuntimeMinimum, ...]:
    return tuple(
        RuntimeMinimum(
            torch=Version(row["torch"]),
            dll=row["dll"],
            minimum=Version(row["minimum"]),
            error=row["error"],
            caveat=row["caveat"],
            provenance=provenance(row),
        )
        for row in load_table(_TABLE)["runtime_minimums"]
    )


def runtime_minimum(torch_version: str | None, dll: str = "msvcp140.dll") -> RuntimeMinimum | None:
    """The floor `dll` must meet for this torch ("2.9.1+cu128"); None when none is known."""
    wanted = parse_version((torch_version or "").split("+", 1)[0])
    if wanted is None:
        return None
    found = [m for m in _minimums() if m.dll == dll and wanted >= m.torch]
    return max(found, key=lambda m: m.torch, default=None)


def winerror_meaning(code: int) -> str | None:
    meaning = load_table(_TABLE)["dll_loading"]["winerrors"].get(str(code))
    return str(meaning) if meaning is not None else None


def loads_before_system32(origin: str) -> bool:
    """Whether a DLL copy found in `origin` (torch_lib, app_dir, ...) is mapped before System32's."""
    return origin in load_table(_TABLE)["dll_loading"]["loads_before_system32"]


@cache
def path_limits() -> PathLimits:
    row = load_table(_TABLE)["paths"]
    return PathLimits(
        max_path=int(row["max_path"]),
        torch_longest_relative_path=int(row["torch_longest_relative_path"]),
        long_paths_key=row["long_paths_key"],
        store_python_markers=tuple(row["store_python_markers"]),
    )


def openmp_dll() -> str:
    return str(load_table(_TABLE)["openmp"]["dll"])


def file_version(text: str | None) -> Version | None:
    """A comparable version from "14.40.33810.0" or the registry's "v14.40.33810.00"."""
    if not text:
        return None
    return parse_version(text.strip().lstrip("vV"))


@dataclass(frozen=True)
class PagingFile:
    """[WinError 1455]: what it means and the commands that give Windows a bigger page file."""

    winerror: int
    settings_command: str
    system_managed_command: str
    link: str
    provenance: Provenance


@cache
def paging_file() -> PagingFile:
    row = load_table(_TABLE)["paging_file"]
    return PagingFile(
        winerror=int(row["winerror"]),
        settings_command=row["settings_command"],
        system_managed_command=row["system_managed_command"],
        link=row["link"],
        provenance=provenance(row),
    )


@dataclass(frozen=True)
class DllRegression:
    """A torch release whose own DLL needs something no redistributable installs."""

    torch: tuple[Version, ...]
    dll: str
    winerror: int
    missing: str
    fixed_in: Version
    why: str
    provenance: Provenance


@cache
def _regressions() -> tuple[DllRegression, ...]:
    return tuple(
        DllRegression(
            torch=tuple(Version(v) for v in row["torch"]),
            dll=row["dll"].lower(),
            winerror=int(row["winerror"]),
            missing=row["missing"],
            fixed_in=Version(row["fixed_in"]),
            why=row["why"],
            provenance=provenance(row),
        )
        for row in load_table(_TABLE)["dll_regressions"]
    )


def dll_regression(torch_version: str | None, dll: str) -> DllRegression | None:
    """The known regression of this torch ("2.4.0+cu121") behind a failure to load `dll`."""
    wanted = parse_version((torch_version or "").split("+", 1)[0])
    if wanted is None:
        return None
    return next((r for r in _regressions() if wanted in r.torch and r.dll == dll.lower()), None)
