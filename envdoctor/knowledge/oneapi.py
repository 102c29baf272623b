"""Intel Extension for PyTorch and the oneAPI Base Toolkit: which basekit release each IPEX +xpu
wheel was built against, and which releases ship a runtime library an import may miss. Data:
xpu.json's "ipex" and "libraries" tables (sources there). Apart from gpu_vendors.py, which
`envdoctor install` loads: only the rules read these."""

from __future__ import annotations

from functools import cache

from envdoctor.knowledge.provenance import Provenance, provenance
from envdoctor.knowledge.tables import load_table
from envdoctor.util.records import record


@cache
def _xpu() -> dict[str, object]:
    return load_table("xpu.json")


@record
class OneApiNeed:
    """The oneAPI Base Toolkit release an Intel Extension for PyTorch wheel (or a library) needs."""

    oneapi: str  # "2024.0"; "2023" for a whole year's releases
    provenance: Provenance
    ipex: str | None = None  # "2.1.10"
    library: str | None = None  # "libmkl_sycl.so.3"


def ipex_oneapi(ipex: str) -> OneApiNeed | None:
    """The basekit an IPEX +xpu release was built against ("2.1.10+xpu" -> 2024.0); None for a
    release the data does not list, or a CPU build (+cpu needs no oneAPI)."""
    release, _, local = ipex.strip().partition("+")
    if local and "xpu" not in local and "gpu" not in local:
        return None
    rows = _xpu()["ipex"]
    assert isinstance(rows, list)
    row = next((r for r in rows if r["ipex"] == release), None)
    return OneApiNeed(str(row["oneapi"]), provenance(row), ipex=release) if row else None


def library_oneapi(library: str) -> OneApiNeed | None:
    """The basekit releases that ship a oneAPI runtime library ("libmkl_sycl.so.3" -> 2023)."""
    rows = _xpu()["libraries"]
    assert isinstance(rows, list)
    row = next((r for r in rows if r["library"] == library.strip()), None)
    return OneApiNeed(str(row["oneapi"]), provenance(row), library=row["library"]) if row else None


def oneapi_matches(installed: str, needed: str) -> bool:
    """Whether an installed basekit folder ("2023.2.0", "2024.0") is the release `needed`
    names ("2023.2", or "2023" for any of that year)."""
    have = installed.split(".")
    want = needed.split(".")
    return have[: len(want)] == want
