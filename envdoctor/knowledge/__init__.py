"""Facts as data: typed, cached queries over the JSON tables beside this file.

Each table names its source in the file. Queries never crash on versions newer than the data: they
answer None and callers say "not in envdoctor's data yet (data as of ...)".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

DATA_DIR = Path(__file__).resolve().parent


@cache
def load_table(name: str) -> dict[str, Any]:
    with open(DATA_DIR / name, encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def parse_version(text: str | None) -> Version | None:
    if not text:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


@dataclass(frozen=True)
class Release:
    torch: str
    torchvision: str | None
    torchaudio: str | None
    cuda: tuple[str, ...]  # "12.4", ...
    rocm: tuple[str, ...]
    python: tuple[str, ...]  # "3.11", ...
    pypi_linux_x86_64_default: str  # the variant plain `pip install torch` gives on Linux x86_64

    @property
    def version(self) -> Version:
        return Version(self.torch)

    @property
    def cuda_variants(self) -> tuple[str, ...]:
        return tuple(cuda_variant(c) for c in self.cuda)


def cuda_variant(cuda: str) -> str:
    """ "cu124" from "12.4"."""
    major, _, minor = cuda.partition(".")
    return f"cu{major}{minor.split('.')[0] if minor else '0'}"


def variant_cuda(variant: str) -> str | None:
    """ "12.4" from "cu124", "11.8" from "cu118", None for cpu/rocm."""
    if not variant.startswith("cu") or not variant[2:].isdigit() or len(variant) < 4:
        return None
    digits = variant[2:]
    return f"{digits[:-1]}.{digits[-1]}"


@cache
def releases() -> tuple[Release, ...]:
    """Every torch release envdoctor knows, oldest first."""
    rows = load_table("releases.json")["releases"]
    found = [
        Release(
            torch=row["torch"],
            torchvision=row.get("torchvision"),
            torchaudio=row.get("torchaudio"),
            cuda=tuple(row["cuda"]),
            rocm=tuple(row["rocm"]),
            python=tuple(row["python"]),
            pypi_linux_x86_64_default=row["pypi_linux_x86_64_default"],
        )
        for row in rows
    ]
    return tuple(sorted(found, key=lambda r: r.version))


def releases_as_of() -> str:
    return str(load_table("releases.json")["as_of"])


def release(version: str) -> Release | None:
    """The release row for "2.5.1" (a local label like "+cu124" is ignored)."""
    wanted = parse_version(version.split("+", 1)[0])
    if wanted is None:
        return None
    for row in releases():
        if row.version == wanted:
            return row
    return None


def release_series(version: str) -> tuple[Release, ...]:
    """All known patch releases of the same minor series as `version`."""
    wanted = parse_version(version.split("+", 1)[0])
    if wanted is None:
        return ()
    return tuple(r for r in releases() if r.version.release[:2] == wanted.release[:2])


class DriverVersion(Version):
    """A driver version that compares numerically but prints as NVIDIA writes it ("450.80.02")."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text


def parse_driver(text: str | None) -> DriverVersion | None:
    if not text:
        return None
    try:
        return DriverVersion(text)
    except InvalidVersion:
        return None


@dataclass(frozen=True)
class DriverMinimum:
    """The smallest driver that runs a CUDA version: natively, and by minor-version compatibility."""

    cuda: str
    toolkit: DriverVersion | None  # the toolkit's own minimum ("Toolkit Driver Version")
    compat: DriverVersion | None  # the minor-version-compatibility minimum of its major family


def _system_key(os_name: str) -> str:
    return "windows" if os_name == "windows" else "linux"


def driver_minimum(cuda: str, os_name: str) -> DriverMinimum | None:
    """Minimum drivers for CUDA `cuda` ("12.4") on linux/windows; None when the data lacks it."""
    table = load_table("cuda_drivers.json")
    key = _system_key(os_name)
    wanted = ".".join(cuda.split(".")[:2])
    toolkit = None
    known = False
    for row in table["toolkit_minimum_driver"]:
        if row["cuda"] == wanted:
            known = True
            toolkit = parse_driver(row.get(key))
    major = wanted.split(".")[0]
    compat = None
    for row in table["minor_version_compatibility"]:
        if str(row["cuda_major"]) == major:
            known = True
            compat = parse_driver(row.get(key))
    if not known:
        return None
    return DriverMinimum(cuda=wanted, toolkit=toolkit, compat=compat)


def cuda_data_as_of() -> str:
    return str(load_table("cuda_drivers.json")["as_of"])
