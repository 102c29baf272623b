"""GPU architectures NVIDIA no longer serves with current drivers and toolkits (Fermi, Kepler): their
last driver branch, the newest CUDA it runs, and the newest torch package with kernels for them
when envdoctor's arch lists do not reach back that far. Data: retired_gpus.json (sources there)."""

from __future__ import annotations

from functools import cache

from envdoctor.knowledge import load_table
from envdoctor.knowledge.archs import Capability
from envdoctor.knowledge.provenance import Provenance, provenance
from envdoctor.util.records import record

_TABLE = "retired_gpus.json"


@record
class RetiredGpu:
    architecture: str
    capabilities: tuple[Capability, ...]
    examples: str
    last_cuda_toolkit: str
    last_driver_branch: str  # "R470"
    last_driver_cuda: str  # the newest CUDA that branch runs natively
    newest_torch: str | None  # None: take it from the arch lists (archs.json)
    newest_torch_build: str | None
    provenance: Provenance
    torch_provenance: Provenance


def _capability(text: str) -> Capability:
    major, minor = text.split(".")
    return int(major), int(minor)


@cache
def retired_gpus() -> tuple[RetiredGpu, ...]:
    return tuple(
        RetiredGpu(
            architecture=row["architecture"],
            capabilities=tuple(_capability(c) for c in row["capabilities"]),
            examples=row["examples"],
            last_cuda_toolkit=row["last_cuda_toolkit"],
            last_driver_branch=row["last_driver_branch"],
            last_driver_cuda=row["last_driver_cuda"],
            newest_torch=row.get("newest_torch"),
            newest_torch_build=row.get("newest_torch_build"),
            provenance=provenance(row),
            torch_provenance=provenance(row, "newest_torch"),
        )
        for row in load_table(_TABLE)["gpus"]
    )


def retired(capability: Capability) -> RetiredGpu | None:
    """The retired architecture a GPU of this compute capability belongs to, if any."""
    return next((g for g in retired_gpus() if capability in g.capabilities), None)
