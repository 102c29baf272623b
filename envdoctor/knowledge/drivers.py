"""The NVIDIA driver against a torch CUDA variant: runs it natively, through minor-version
compatibility (MVC), or not at all (cuda_drivers.json).

driver_support is envdoctor's one judgement of a driver: the planner, `check`'s driver rules
(ED101/ED102) and the fixes that pick a build all ask it, so they cannot disagree."""

from __future__ import annotations

from dataclasses import replace

from packaging.version import Version

from envdoctor.knowledge import (
    DriverVersion,
    driver_minimum,
    load_table,
    parse_driver,
    variant_cuda,
)
from envdoctor.model.types import TextEnum
from envdoctor.util.limits import small_int
from envdoctor.util.records import record


class DriverKind(TextEnum):
    NATIVE = "native"  # the driver meets the toolkit's own minimum (or reports that CUDA itself)
    COMPAT = "compat"  # only through minor-version compatibility: no PTX JIT, no newer-driver APIs
    TOO_OLD = "too_old"
    UNKNOWN = "unknown"  # no driver, or no minimum in the data


@record
class DriverSupport:
    """How a driver relates to one CUDA variant."""

    variant: str  # "cu126"
    cuda: str  # "12.6"
    kind: DriverKind
    native: DriverVersion | None  # the toolkit's own minimum (on Windows 13.x: its driver branch)
    floor: DriverVersion | None  # the lowest driver that runs it at all
    caveat: str | None = None  # a note the planner passes on with this variant
    toolkit: DriverVersion | None = None  # the toolkit's minimum in the data (Windows 13.x: its branch)
    assumed: str | None = None  # the minimum is carried forward by `envdoctor update` from this

    @property
    def assumed_note(self) -> str | None:
        """The plan's warning when the minimum is borrowed: no table in the data lists it."""
        if self.assumed is None:
            return None
        return (
            f"the minimum driver for CUDA {self.cuda} (>= {self.toolkit}) is assumed: `envdoctor "
            f"update` carried it forward from {self.assumed}, as NVIDIA's table in envdoctor's data "
            "does not list it yet"
        )

    @property
    def runs(self) -> bool:
        return self.kind in (DriverKind.NATIVE, DriverKind.COMPAT)


def driver_support(
    variant: str, driver: str | None, os_name: str, driver_cuda: str | None = None
) -> DriverSupport:
    """Judge `driver` ("535.104.05") for `variant` on linux/windows.

    `driver_cuda` ("12.2", NVML's CUDA version of the driver) decides "native" when known: it is
    what the driver itself reports, so it beats the table. It also settles "too_old" across CUDA
    majors, which minor-version compatibility never bridges, even where the table lacks the variant.
    """
    support = _driver_support(variant, driver, os_name, driver_cuda)
    minimum = driver_minimum(support.cuda, os_name) if support.cuda else None
    if minimum is not None and minimum.assumed is not None:
        return replace(support, assumed=minimum.assumed)
    return support


def _driver_support(variant: str, driver: str | None, os_name: str, driver_cuda: str | None) -> DriverSupport:
    cuda = variant_cuda(variant) or ""
    minimum = driver_minimum(cuda, os_name) if cuda else None
    toolkit = minimum.toolkit if minimum else None
    native = (toolkit or minimum.compat) if minimum else None
    floor = (minimum.compat or toolkit) if minimum else None
    have = parse_driver(driver)
    if have is not None and _older_major(driver_cuda, cuda):
        return DriverSupport(variant, cuda, DriverKind.TOO_OLD, native, floor, toolkit=toolkit)
    if have is None or floor is None:
        return DriverSupport(variant, cuda, DriverKind.UNKNOWN, native, floor, toolkit=toolkit)
    if have < floor:
        return DriverSupport(variant, cuda, DriverKind.TOO_OLD, native, floor, toolkit=toolkit)
    if driver_cuda is not None:
        is_native = Version(cuda) <= Version(driver_cuda)
    else:
        is_native = native is not None and have >= native
    kind = DriverKind.NATIVE if is_native else DriverKind.COMPAT
    return DriverSupport(variant, cuda, kind, native, floor, toolkit=toolkit)


def _older_major(driver_cuda: str | None, cuda: str) -> bool:
    """Whether the driver's own CUDA ("12.8") is of an older major version than `cuda` ("13.0")."""
    have, need = (driver_cuda or "").split(".")[0], cuda.split(".")[0]
    have_number, need_number = small_int(have), small_int(need)
    return have_number is not None and need_number is not None and have_number < need_number


def native_cuda(driver: str | None, os_name: str) -> str | None:
    """The newest CUDA toolkit whose own minimum `driver` meets ("12.2" for 535.104.05 on Linux)."""
    have = parse_driver(driver)
    if have is None:
        return None
    key = "windows" if os_name == "windows" else "linux"
    best: Version | None = None
    for row in load_table("cuda_drivers.json")["toolkit_minimum_driver"]:
        need = parse_driver(row.get(key))
        if need is None:
            # NVIDIA prints N/A for Windows from 13.0: its MVC minimum (580) applies there.
            found = driver_minimum(row["cuda"], os_name)
            need = found.compat if found else None
        if need is not None and have >= need and (best is None or Version(row["cuda"]) > best):
            best = Version(row["cuda"])
    return None if best is None else f"{best.major}.{best.minor}"


def usable_variants(
    driver: str | None, os_name: str, variants: tuple[str, ...], driver_cuda: str | None = None
) -> tuple[DriverSupport, ...]:
    """The CUDA variants among `variants` that `driver` runs, newest first (natively or by MVC).

    The driver side only: the planner (install.py) also checks each build's GPU architectures.
    """
    judged = [driver_support(v, driver, os_name, driver_cuda) for v in variants if v.startswith("cu")]
    found = [s for s in judged if s.runs]
    return tuple(sorted(found, key=lambda s: Version(s.cuda), reverse=True))
