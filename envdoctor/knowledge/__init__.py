"""Facts as data: typed, cached queries over the JSON tables beside this file.

Each table names its sources in the file as public references (knowledge/provenance.py). Queries
never crash on versions newer than the data: they answer None and callers say "not in envdoctor's
data yet (data as of ...)".
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import Any

from packaging.version import Version

from envdoctor.knowledge import overlay
from envdoctor.knowledge.provenance import Provenance, provenance
from envdoctor.knowledge.tables import (
    DATA_DIR,
    PlatformBuilds,
    Release,
    cuda_variant,
    load_table,
    parse_version,
    release_from_row,
    variant_cuda,
)
from envdoctor.util.records import record

__all__ = [
    "DATA_DIR",
    "PlatformBuilds",
    "Release",
    "cuda_variant",
    "load_table",
    "parse_version",
    "release_from_row",
    "variant_cuda",
]


def builtin_releases() -> tuple[Release, ...]:
    """The releases of envdoctor's own table, oldest first."""
    found = [release_from_row(row) for row in load_table("releases.json")["releases"]]
    return tuple(sorted(found, key=lambda r: r.version))


@cache
def releases() -> tuple[Release, ...]:
    """Every torch release envdoctor knows, oldest first: the built-in table, then the releases
    `envdoctor update` added in the user's overlay (knowledge/overlay.py; read here, once)."""
    builtin = builtin_releases()
    return tuple(sorted(builtin + overlay.added_releases(builtin), key=lambda r: r.version))


overlay.derived(releases.cache_clear)


def releases_as_of() -> str:
    return str(load_table("releases.json")["as_of"])


def known_releases() -> tuple[Release, ...]:
    """Every release envdoctor may plan with, oldest first: the one query planners and rules ask.

    Today the built-in table; a refreshed overlay (`envdoctor update`) adds its releases here, so
    nothing else needs to know where a release came from.
    """
    return releases()


def newest_release() -> Release:
    return known_releases()[-1]


def newer_than_data(version: str | None) -> bool:
    """Whether `version` ("2.15.0+cpu") is a release past the newest envdoctor knows."""
    wanted = parse_version((version or "").split("+", 1)[0])
    return wanted is not None and wanted > newest_release().version


def data_horizon() -> str:
    """ "up to 2.13.0, 2026-08-21": how far the release data reaches, for "newer than" sentences."""
    return f"up to {newest_release().torch}, {releases_as_of()}"


def assumed_release(version: str) -> Release | None:
    """A best-effort stand-in for a release newer than the data: its builds, Python versions and
    companions unknown, carried forward from the newest known release (companions left unpinned,
    so the resolver pairs them). None unless `version` is newer than the data within the same major
    version: a new major version may change every build, so nothing is carried across it."""
    if not newer_than_data(version):
        return None
    newest = newest_release()
    wanted = Version(version.split("+", 1)[0])
    if wanted.major != newest.version.major:
        return None
    return _stand_in(str(wanted), newest, series_stand_in=len(wanted.release) == 2)


def stand_in_base(version: str) -> Release:
    """The known release an unlisted `version`'s stand-in carries forward: the newest one older
    than it (the newest of all for a release newer than the data)."""
    wanted = parse_version(version.split("+", 1)[0])
    older = [r for r in known_releases() if wanted is not None and r.version < wanted]
    return older[-1] if older else newest_release()


def unlisted_release(version: str) -> Release | None:
    """A best-effort stand-in for a release the data does not list: newer than the data
    (assumed_release), or one it skips (an overlay from `envdoctor update` holds 2.16.0, not 2.15.0),
    carried forward from the nearest older known release of the same major version. None for a
    listed release, a version older than the data, or across a major version."""
    found = assumed_release(version)
    wanted = parse_version(version.split("+", 1)[0])
    if found is not None or wanted is None or release(version) is not None:
        return found
    base = stand_in_base(version)
    if base.version > wanted or base.version.major != wanted.major:
        return None
    return _stand_in(str(wanted), base, series_stand_in=len(wanted.release) == 2)


def _stand_in(public: str, base: Release, series_stand_in: bool = False) -> Release:
    return Release(
        torch=public,
        torchvision=None,
        torchaudio=None,
        cuda=base.cuda,
        rocm=base.rocm,
        python=base.python,
        pypi_linux_x86_64_default="",
        # Which build PyPI carries for a new release is not known: commands name the variant's index.
        platforms=tuple((name, replace(builds, pypi="")) for name, builds in base.platforms),
        assumed=True,
        series_stand_in=series_stand_in,
    )


def wheel_platform_tag(torch: str, platform: str) -> str | None:
    """The platform tag of PyTorch's index wheels of `torch` for `platform`, when the data knows it."""
    version = parse_version(torch.split("+", 1)[0])
    if version is None:
        return None
    for row in load_table("releases.json").get("wheel_platform_tags", ()):
        if row["platform"] == platform and _in_range(version, row):
            return str(row["tag"])
    return None


def release(version: str) -> Release | None:
    """The release row for "2.5.1" (a local label like "+cu124" is ignored)."""
    wanted = parse_version(version.split("+", 1)[0])
    if wanted is None:
        return None
    for row in known_releases():
        if row.version == wanted:
            return row
    return None


def release_series(version: str) -> tuple[Release, ...]:
    """All known patch releases of the same minor series as `version`."""
    wanted = parse_version(version.split("+", 1)[0])
    if wanted is None:
        return ()
    return tuple(r for r in known_releases() if r.version.release[:2] == wanted.release[:2])


def resolve_release(text: str) -> Release | None:
    """ "2.5.1" exactly, or "2.5" as the newest known patch release of that series."""
    wanted = parse_version(text.split("+", 1)[0])
    if wanted is None:
        return None
    if len(wanted.release) != 2:
        return release(text)
    series = [r for r in known_releases() if r.version.release[:2] == wanted.release[:2]]
    return series[-1] if series else None


# Machine names as platform.machine() spells them, per OS, to the knowledge base's platform keys.
_MACHINES = {
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "x64": "x86_64",
    "aarch64": "aarch64",
    "arm64": "arm64",
    "armv8": "aarch64",
}


def platform_key(os_name: str, machine: str) -> str:
    """ "linux-x86_64", "linux-aarch64", "windows-x86_64", "macos-arm64" from an OS and a machine name."""
    arch = _MACHINES.get(machine.lower(), machine.lower())
    if os_name == "linux" and arch == "arm64":
        arch = "aarch64"
    if os_name == "macos" and arch == "aarch64":
        arch = "arm64"
    return f"{os_name}-{arch}"


def known_platforms() -> tuple[str, ...]:
    found: dict[str, None] = {}
    for row in known_releases():
        found.update(dict.fromkeys(name for name, _ in row.platforms))
    return tuple(found)


def platform_source(platform: str) -> Provenance | None:
    """Where the data's builds for `platform` come from (public references and what they show)."""
    record = load_table("releases.json").get("platform_sources", {}).get(platform)
    return provenance(record) if isinstance(record, dict) else None


@record
class PipForm:
    """How the official pip command of a release names its index and pins (previous-versions page)."""

    index_option: str  # "--index-url" (2.0+) or "--extra-index-url" (1.12-1.13)
    local_label_pins: tuple[str, ...]  # packages pinned with "+cu117" in that form


def _in_range(version: Version, row: dict[str, Any]) -> bool:
    low = Version(row["from"])
    high = Version(row["to"]) if row.get("to") else None
    return version >= low and (high is None or version <= high)


def pip_form(row: Release) -> PipForm:
    for form in load_table("releases.json")["pip_command_forms"]:
        if _in_range(row.version, form):
            return PipForm(form["index_option"], tuple(form["local_label_pins"]))
    return PipForm("--index-url", ())  # newer than the data: the current form


def command_packages(row: Release) -> tuple[str, ...]:
    """The packages the official command installs for this release (torchaudio left out from 2.8)."""
    for entry in load_table("releases.json")["command_packages"]:
        if _in_range(row.version, entry):
            return tuple(entry["packages"])
    return ("torch", "torchvision")


def pypi_plain(row: Release, platform: str, variant: str) -> bool:
    """Whether the official command for `variant` is a plain PyPI install (no index named).

    That is where PyPI's wheel is that variant, except CUDA on the platforms where the selector
    names the index anyway (Linux aarch64).
    """
    builds = row.builds(platform)
    if builds is None or builds.pypi != variant:
        return False
    always = load_table("releases.json").get("cuda_index_always_named", {}).get("platforms", ())
    return not (variant.startswith("cu") and platform in always)


def python_versions() -> tuple[str, ...]:
    """Every Python minor version some known release has wheels for, oldest first."""
    found = {p for row in known_releases() for p in row.platform_pythons()}
    return tuple(sorted(found, key=Version))


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
    except ValueError:  # InvalidVersion, or a part of 4,300+ digits
        return None


@record
class DriverMinimum:
    """The smallest driver that runs a CUDA version: natively, and by minor-version compatibility."""

    cuda: str
    toolkit: DriverVersion | None  # the toolkit's own minimum ("Toolkit Driver Version")
    compat: DriverVersion | None  # the minor-version-compatibility minimum of its major family
    assumed: str | None = None  # carried forward by `envdoctor update` from this ("CUDA 13.2")


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
    if not any(row["cuda"] == wanted for row in table["toolkit_minimum_driver"]):
        # A CUDA version newer than the table: `envdoctor update` may have carried a neighbour's
        # minimum forward (assumed); without an overlay the MVC minimum alone stands.
        assumed = overlay.driver(wanted)
        if assumed is not None:
            known = True
            toolkit = parse_driver(assumed.windows if key == "windows" else assumed.linux)
            if toolkit is not None:
                return DriverMinimum(wanted, toolkit, compat, assumed=assumed.origin)
    if not known:
        return None
    return DriverMinimum(cuda=wanted, toolkit=toolkit, compat=compat)


def cuda_data_as_of() -> str:
    return str(load_table("cuda_drivers.json")["as_of"])
