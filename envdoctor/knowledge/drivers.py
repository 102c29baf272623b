"""The NVIDIA driver against a torch CUDA variant: runs it natively, through minor-version
compatibility (MVC), or not at all (cuda_drivers.json)."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

from envdoctor.knowledge import (
    DriverVersion,
    driver_minimum,
    load_table,
    parse_driver,
    variant_cuda,
)


@dataclass(frozen=True)
class DriverSupport:
    """How a driver relates to one CUDA variant."""

    variant: str  # "cu126"
    cuda: str  # "12.6"
    kind: str  # "native" | "compat" (MVC only) | "too_old" | "unknown" (not in the data)
    native: DriverVersion | None  # the toolkit's own minimum (on Windows 13.x: its driver branch)
    floor: DriverVersion | None  # the lowest driver that runs it at all
    caveat: str | None = None  # a note the planner passes on with this variant

    @property
    def runs(self) -> bool:
        return self.kind in ("native", "compat")


def driver_support(
    variant: str, driver: str | None, os_name: str, driver_cuda: str | None = None
) -> DriverSupport:
    """Judge `driver` ("535.104.05") for `variant` on linux/windows.

    `driver_cuda` ("12.2", NVML's CUDA version of the driver) decides "native" when known: it is
    what the driver itself reports, so it beats the table.
    """
    cuda = variant_cuda(variant) or ""
    minimum = driver_minimum(cuda, os_name) if cuda else None
    if minimum is None:
        return DriverSupport(variant, cuda, "unknown", None, None)
    native = minimum.toolkit or minimum.compat
    floor = minimum.compat or minimum.toolkit
    have = parse_driver(driver)
    if have is None or floor is None:
        return DriverSupport(variant, cuda, "unknown", native, floor)
    if have < floor:
        return DriverSupport(variant, cuda, "too_old", native, floor)
    if driver_cuda is not None:
        is_native = Version(cuda) <= Version(driver_cuda)
    else:
        is_native = native is not None and have >= native
    kind = "native" if is_native else "compat"
    return DriverSupport(variant, cuda, kind, native, floor)


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
