"""Jetson (Tegra) boards: the JetPack release an L4T release belongs to, and NVIDIA's PyTorch wheel
(or package index) for it, with that release's CUDA, cuDNN and Python.

Data: jetson.json beside this file (sources cited per table and per row).
"""

from __future__ import annotations

from functools import cache

from envdoctor.knowledge import load_table
from envdoctor.knowledge.provenance import Provenance, provenance
from envdoctor.util.records import record

_TABLE = "jetson.json"


@record
class JetsonWheel:
    """NVIDIA's PyTorch for one group of L4T releases."""

    jetpack: str  # "5.1.2 to 5.1.4"
    cuda: str  # "11.4"
    cudnn: int | None  # the cuDNN major version JetPack ships
    python: str  # "3.8": the wheel's (and JetPack's system) Python
    torch: str | None  # the wheel's torch version; None for an index
    kind: str  # "wheel" (one file) or "index" (a package index with several releases)
    url: str
    file: str | None  # the wheel's file name where the URL does not end in it
    provenance: Provenance

    @property
    def is_index(self) -> bool:
        return self.kind == "index"


def release_file() -> str:
    return str(load_table(_TABLE)["release_file"])


def model_file() -> str:
    return str(load_table(_TABLE)["model_file"])


@cache
def _jetpack() -> dict[str, str]:
    return {str(row["l4t"]): str(row["jetpack"]) for row in load_table(_TABLE)["jetpack"]}


@cache
def _wheels() -> tuple[tuple[tuple[str, ...], JetsonWheel], ...]:
    rows = []
    for row in load_table(_TABLE)["wheels"]:
        cudnn = row.get("cudnn")
        wheel = JetsonWheel(
            jetpack=str(row["jetpack"]),
            cuda=str(row["cuda"]),
            cudnn=int(cudnn) if isinstance(cudnn, int) else None,
            python=str(row["python"]),
            torch=str(row["torch"]) if row.get("torch") else None,
            kind=str(row["kind"]),
            url=str(row["url"]),
            file=str(row["file"]) if row.get("file") else None,
            provenance=provenance(row),
        )
        rows.append((tuple(str(p) for p in row["l4t"]), wheel))
    return tuple(rows)


def _normal(l4t: str) -> str:
    """ "32.4.3" stays; "36.3" becomes "36.3.0", as the JetPack archive writes releases."""
    parts = l4t.split(".")
    return ".".join(parts + ["0"] * (3 - len(parts))) if len(parts) < 3 else l4t


def jetpack_of(l4t: str | None) -> str | None:
    """ "5.1.2" for L4T "35.4.1"; None for a release envdoctor does not know."""
    if not l4t:
        return None
    return _jetpack().get(_normal(l4t))


def wheel_for(l4t: str | None) -> JetsonWheel | None:
    """NVIDIA's PyTorch for this L4T release ("35.4.1"); None when envdoctor does not know it."""
    if not l4t:
        return None
    for prefixes, wheel in _wheels():
        if any(l4t == p or l4t.startswith(p + ".") for p in prefixes):
            return wheel
    return None
