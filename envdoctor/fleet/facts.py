"""The typed facts the fleet rules read: node groups with their stacks and own verdicts, and, for a
distributed run, what every rank reported and how the all-reduce went.

Nothing here touches the OS or torch; offline.py and distributed.py fill these in.
"""

from __future__ import annotations

import enum

from envdoctor.model.findings import Severity
from envdoctor.util.records import record

NOT_INSTALLED = "not installed"  # Stack.torch of a node without torch


class FleetMode(str, enum.Enum):
    OFFLINE = "offline"  # `envdoctor fleet SNAPSHOT...`
    DISTRIBUTED = "distributed"  # `envdoctor cluster` under a launcher


@record
class GpuModel:
    name: str
    count: int


@record
class Component:
    """A package beside torch whose version nodes should agree on (torchvision, torchaudio)."""

    name: str
    version: str


@record
class Stack:
    """What the nodes of one job must agree on. None: absent (torch, CUDA) or unknown (NCCL offline)."""

    os: str  # "linux x86_64"
    python: str | None = None  # "3.11.9"
    torch: str | None = None  # "2.5.1+cu124", or "not installed"; None: the torch probe did not run
    cuda: str | None = None  # torch's CUDA, "12.4"; None: a CPU or ROCm build
    cudnn: str | None = None  # "9.1.0"
    nccl: str | None = None  # "2.21.5"; only a distributed run learns it
    driver: str | None = None  # "550.54.15"
    gpus: tuple[GpuModel, ...] = ()
    components: tuple[Component, ...] = ()

    @property
    def python_minor(self) -> str | None:
        return None if self.python is None else ".".join(self.python.split(".")[:2])

    @property
    def driver_branch(self) -> str | None:
        """ "550" from "550.54.15": drivers of one branch share their CUDA support."""
        return None if self.driver is None else self.driver.split(".")[0]

    @property
    def gpu_text(self) -> str:
        if not self.gpus:
            return "no GPU"
        return " + ".join(f"{g.count} × {g.name}" for g in self.gpus)

    def component(self, name: str) -> str | None:
        return next((c.version for c in self.components if c.name == name), None)

    def describe(self) -> str:
        parts = [self.os, f"Python {self.python or '?'}", f"torch {self.torch or '?'}"]
        if self.cuda:
            parts.append(f"CUDA {self.cuda}")
        if self.cudnn:
            parts.append(f"cuDNN {self.cudnn}")
        if self.nccl:
            parts.append(f"NCCL {self.nccl}")
        if self.driver:
            parts.append(f"driver {self.driver}")
        parts.append(self.gpu_text)
        parts += [f"{c.name} {c.version}" for c in self.components]
        return " · ".join(parts)


@record
class FindingBrief:
    """One finding of a node's own check, as the fleet report names it."""

    code: str
    name: str
    severity: Severity
    title: str


@record
class NodeCheck:
    """A node's own `check` verdict. Nodes whose snapshots hold the same facts share one."""

    exit_code: int  # 0 or 1, as `check` on that node would exit (--strict included)
    worst: Severity
    findings: tuple[FindingBrief, ...] = ()  # report order: the first is the top finding
    error: str | None = None  # the check could not run there at all

    @property
    def fails(self) -> bool:
        return self.exit_code != 0 or self.error is not None

    @property
    def top(self) -> FindingBrief | None:
        return self.findings[0] if self.findings else None


@record
class NodeGroup:
    """Nodes with one stack and one verdict; `stack` is None when the node's check gave no snapshot."""

    stack: Stack | None
    check: NodeCheck
    nodes: tuple[str, ...]


class Stage(str, enum.Enum):
    """How far a rank got, in order; each rank posts its stage to the store as it goes."""

    STARTED = "started"
    CHECKED = "checked"
    GROUP = "group"
    ALLREDUCE = "allreduce"
    VERIFIED = "verified"
    MEASURED = "measured"
    DONE = "done"

    @property
    def order(self) -> int:
        return list(Stage).index(self)

    @property
    def phrase(self) -> str:
        return _STAGE_PHRASES[self]


_STAGE_PHRASES = {
    Stage.STARTED: "joined the job",
    Stage.CHECKED: "finished its node's check",
    Stage.GROUP: "joined the process group",
    Stage.ALLREDUCE: "entered the all-reduce",
    Stage.VERIFIED: "verified the all-reduce",
    Stage.MEASURED: "measured bandwidth",
    Stage.DONE: "finished",
}


class RankState(str, enum.Enum):
    FINISHED = "finished"  # posted its results
    NEVER_ARRIVED = "never_arrived"  # never wrote to the store: not started, or could not reach it
    DIED = "died"  # arrived, then its heartbeat stopped
    HUNG = "hung"  # alive (heartbeat going) but never finished
    FAILED = "failed"  # its own flow raised; the error says what


@record
class EnvVar:
    name: str
    value: str


@record
class RankInfo:
    """What one rank says about itself when it joins."""

    rank: int
    local_rank: int
    node: str  # the node's display name: its host name, with its node rank where hosts repeat
    host: str
    node_rank: int | None = None
    device: str = "cpu"  # the device its collectives use: "cuda:0", or "cpu"
    gpu_count: int = 0  # CUDA devices this process sees
    torch: str | None = None
    nccl: str | None = None
    numpy_error: str | None = None  # why `import numpy` failed; None when it imported
    env: tuple[EnvVar, ...] = ()  # NCCL_*, GLOO_*, TORCH_NCCL_*, TORCH_DISTRIBUTED_* as set
    interfaces: tuple[str, ...] = ()  # network interface names on its host
    infiniband: tuple[str, ...] = ()  # InfiniBand / RoCE devices on its host

    def env_value(self, name: str) -> str | None:
        return next((v.value for v in self.env if v.name == name), None)


@record
class CollectiveResult:
    """One rank's all-reduce: the correctness check on known values, then a timed loop."""

    backend: str
    correct: bool | None = None  # None: the check did not run
    mismatch: str | None = None  # the first wrong element, in words
    error: str | None = None  # what the collective raised
    size_bytes: int = 0
    iterations: int = 0
    seconds: float = 0.0
    algbw: float | None = None  # bytes/s: size / time per all-reduce
    busbw: float | None = None  # bytes/s: algbw × 2(n-1)/n, as nccl-tests defines it


@record
class RankOutcome:
    rank: int
    state: RankState
    stage: Stage | None = None  # the last stage it posted; None: it never arrived
    info: RankInfo | None = None
    result: CollectiveResult | None = None
    error: str | None = None


@record
class Rendezvous:
    """How this rank reached the launcher's store (MASTER_ADDR:MASTER_PORT)."""

    launcher: str  # torchrun, slurm, openmpi, pmi, env
    address: str
    port: int
    role: str  # "server" (rank 0 hosts it), "client", or "agent" (torchrun's agent hosts it)
    reached: bool
    error: str | None = None
    seconds: float = 0.0


@record
class Collective:
    """The all-reduce as a whole, from rank 0's side."""

    attempted: bool
    backend: str | None = None
    skipped_reason: str | None = None
    waited_seconds: float = 0.0


@record
class Unreadable:
    """A file given to `envdoctor fleet` that is no usable snapshot."""

    path: str
    reason: str


@record
class FleetFacts:
    mode: FleetMode
    groups: tuple[NodeGroup, ...] = ()
    unreadable: tuple[Unreadable, ...] = ()
    world_size: int | None = None  # distributed: ranks the launcher announced
    ranks: tuple[RankOutcome, ...] = ()
    rendezvous: Rendezvous | None = None
    collective: Collective | None = None

    @property
    def node_count(self) -> int:
        return sum(len(g.nodes) for g in self.groups)

    def rank_infos(self) -> tuple[RankInfo, ...]:
        return tuple(r.info for r in self.ranks if r.info is not None)
