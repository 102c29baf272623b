"""Which torch builds run with NumPy 2, and what breaks without NumPy (numpy.json, sources there)."""

from __future__ import annotations

from functools import cache

from packaging.version import Version

from envdoctor.knowledge import load_table, parse_version
from envdoctor.knowledge.provenance import Provenance, provenance
from envdoctor.util.records import record

_TABLE = "numpy.json"


@record
class Numpy2Floor:
    """From `torch` on, the wheels for `os` were built against NumPy 2 and run with 1.x and 2.x."""

    os: tuple[str, ...]
    torch: Version
    provenance: Provenance


@cache
def _floors() -> tuple[Numpy2Floor, ...]:
    return tuple(
        Numpy2Floor(tuple(row["os"]), Version(row["torch"]), provenance(row))
        for row in load_table(_TABLE)["numpy2_minimum_torch"]
    )


def numpy2_floor(os: str) -> Numpy2Floor | None:
    """The first torch whose wheels for `os` (linux, windows, macos) run with NumPy 2."""
    return next((floor for floor in _floors() if os in floor.os), None)


def built_for_numpy1(torch_version: str | None, os: str) -> bool | None:
    """Whether this torch ("2.2.1+cu121") predates NumPy 2 support on `os`; None when unknown."""
    wanted = parse_version((torch_version or "").split("+", 1)[0])
    floor = numpy2_floor(os)
    if wanted is None or floor is None:
        return None
    return wanted.release < floor.torch.release


def without_numpy_breaks() -> str:
    return str(load_table(_TABLE)["without_numpy"]["breaks"])
