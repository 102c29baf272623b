"""How a Linux distribution installs the NVIDIA driver, chosen from os-release's ID and ID_LIKE.

Data: linux_drivers.json beside this file (sources cited per family).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from envdoctor.knowledge import load_table
from envdoctor.knowledge.provenance import Provenance, provenance

_TABLE = "linux_drivers.json"


@dataclass(frozen=True)
class DriverInstall:
    family: str  # "Ubuntu", or "other distributions"
    commands: tuple[str, ...]  # empty where only NVIDIA's instructions apply
    note: str | None
    link: str
    provenance: Provenance


@cache
def _families() -> tuple[tuple[frozenset[str], DriverInstall], ...]:
    table = load_table(_TABLE)
    return tuple(
        (
            frozenset(str(i) for i in row["ids"]),
            DriverInstall(
                family=str(row["name"]),
                commands=tuple(str(c) for c in row["commands"]),
                note=str(row["note"]) if row.get("note") else None,
                link=str(row["link"]),
                provenance=provenance(row),
            ),
        )
        for row in table["families"]
    )


@cache
def _fallback() -> DriverInstall:
    row = load_table(_TABLE)["fallback"]
    return DriverInstall(str(row["name"]), (), str(row["note"]), str(row["link"]), provenance(row))


def driver_install(distro: str | None, like: Sequence[str] = ()) -> DriverInstall:
    """The family for os-release's ID, else the first ID_LIKE entry known, else NVIDIA's repository."""
    for name in (distro, *like):
        for ids, install in _families():
            if name and name.lower() in ids:
                return install
    return _fallback()
