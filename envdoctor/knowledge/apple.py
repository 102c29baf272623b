"""Apple GPUs (MPS): the macOS version each torch release's MPS backend needs, what single features
need beyond it (bfloat16), and the last torch with wheels for Intel Macs. Data: apple.json, and the
release table's macos-x86_64 builds (sources there)."""

from __future__ import annotations

from functools import cache

from packaging.version import Version

from envdoctor.knowledge import parse_version, releases
from envdoctor.knowledge.provenance import Provenance, provenance
from envdoctor.knowledge.tables import load_table
from envdoctor.util.records import record

MACOS_X86_64 = "macos-x86_64"


@record
class MpsMinimum:
    """The macOS an MPS release range (or one feature) needs."""

    macos: str  # "13.0"
    first: str  # the first torch release it holds for ("2.5"); for a feature, ""
    provenance: Provenance
    feature: str | None = None  # "bfloat16"; None: the backend itself
    words: str | None = None  # "bfloat16 tensors on MPS"


def _table() -> dict[str, object]:
    return load_table("apple.json")


def macos_tuple(text: str | None) -> tuple[int, ...] | None:
    """(14, 5) from "14.5"; None for anything that is not a dotted version."""
    if not text:
        return None
    parts = text.strip().split(".")
    if not all(p.isdigit() and len(p) <= 3 for p in parts) or len(parts) > 3:
        return None
    return tuple(int(p) for p in parts)


def older(version: str | None, minimum: str) -> bool | None:
    """Whether macOS `version` is older than `minimum`; None when `version` is unknown."""
    have, need = macos_tuple(version), macos_tuple(minimum)
    if have is None or need is None:
        return None
    width = max(len(have), len(need))
    return have + (0,) * (width - len(have)) < need + (0,) * (width - len(need))


@cache
def mps_minimums() -> tuple[MpsMinimum, ...]:
    rows = _table()["mps"]
    assert isinstance(rows, list)
    return tuple(MpsMinimum(str(r["macos"]), str(r["from"]), provenance(r)) for r in rows)


def mps_minimum(torch: str | None) -> MpsMinimum | None:
    """The macOS the MPS backend of torch `torch` needs; None for a torch without MPS (< 1.12)
    or a version that does not parse. A release newer than the data has the newest floor."""
    version = parse_version((torch or "").split("+", 1)[0])
    if version is None:
        return None
    release = Version(f"{version.major}.{version.minor}")
    rows = _table()["mps"]
    assert isinstance(rows, list)
    for row, known in zip(rows, mps_minimums()):
        first, last = parse_version(row["from"]), parse_version(row["to"])
        if first is not None and release >= first and (last is None or release <= last):
            return known
    return None


@cache
def feature_minimums() -> tuple[MpsMinimum, ...]:
    rows = _table()["features"]
    assert isinstance(rows, list)
    return tuple(
        MpsMinimum(str(r["macos"]), "", provenance(r), feature=str(r["feature"]), words=str(r["words"]))
        for r in rows
    )


def feature_minimum(feature: str) -> MpsMinimum | None:
    return next((f for f in feature_minimums() if f.feature == feature), None)


def macos_name(version: str | None) -> str:
    """ "macOS 13 (Ventura)" from "13.0"; the plain number where the name is not known."""
    parts = macos_tuple(version)
    if parts is None:
        return "macOS (version unknown)"
    names = _table()["names"]
    assert isinstance(names, dict)
    name = names.get(str(parts[0]))
    shown = ".".join(str(p) for p in parts) if len(parts) > 1 and parts[1:] != (0,) else str(parts[0])
    return f"macOS {shown} ({name})" if name else f"macOS {shown}"


def last_release_for(platform: str) -> str | None:
    """The newest torch release with wheels for `platform` ("macos-x86_64": 2.2.2)."""
    found = [r for r in releases() if r.builds(platform) is not None and not r.assumed]
    return found[-1].torch if found else None


def last_release_pythons(platform: str) -> tuple[str, ...]:
    """The Python versions the last release for `platform` has wheels for there."""
    found = [r for r in releases() if r.builds(platform) is not None and not r.assumed]
    return found[-1].python_for(platform) if found else ()


def platform_provenance() -> Provenance:
    from envdoctor.knowledge import platform_source

    found = platform_source(MACOS_X86_64)
    return found if found is not None else Provenance(source=())
