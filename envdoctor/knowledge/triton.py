"""Triton's own CUDA toolchain: where its ptxas lives, which CUDA each release's bundled ptxas comes
from, and where torch keeps a ptxas of its own. Data: triton.json (sources there)."""

from __future__ import annotations

from functools import cache

from packaging.version import InvalidVersion, Version

from envdoctor.knowledge.provenance import Provenance, provenance
from envdoctor.knowledge.tables import load_table
from envdoctor.util.records import record

_TABLE = "triton.json"


@record
class BundledPtxas:
    """From `triton` on (until the next row), the ptxas Triton ships comes from CUDA `cuda`."""

    triton: str
    cuda: str  # "12.3"
    provenance: Provenance


@cache
def _rows() -> tuple[BundledPtxas, ...]:
    rows = load_table(_TABLE)["bundled_ptxas"]
    found = tuple(BundledPtxas(str(r["triton"]), str(r["cuda"]), provenance(r)) for r in rows)
    return tuple(sorted(found, key=lambda r: Version(r.triton)))


def bundled_ptxas(version: str | None) -> BundledPtxas | None:
    """The CUDA of the ptxas a Triton release ships (at least that; the row of the newest release
    not after it); None for a version older than the table or one that does not parse."""
    if not version:
        return None
    try:
        wanted = Version(version).release
    except InvalidVersion:
        return None
    # A local or pre-release build (3.1.0+cf34004b8a, 2.1.0.dev20231014) ships what its release does.
    base = Version(".".join(str(p) for p in wanted[:3]))
    found = [r for r in _rows() if Version(r.triton) <= base]
    return found[-1] if found else None


def ptxas_in_package() -> tuple[str, ...]:
    """Where a Triton package keeps its ptxas, newest layout first, relative to the package folder."""
    return tuple(str(p) for p in load_table(_TABLE)["ptxas_in_package"])


def torch_ptxas() -> str:
    """Where a torch package keeps a ptxas of its own (relative to the torch folder), if it has one."""
    return str(load_table(_TABLE)["torch_ptxas"])
