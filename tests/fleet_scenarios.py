"""Fleet situations as typed facts, one per fleet rule (and its healthy counterpart): what a fixture
is for a single machine. tests/test_fixtures.py counts them when it asks that every rule fires."""

from __future__ import annotations

from dataclasses import replace

from envdoctor.fleet.facts import (
    NOT_INSTALLED,
    Collective,
    CollectiveResult,
    Component,
    EnvVar,
    FindingBrief,
    FleetFacts,
    FleetMode,
    GpuModel,
    NodeCheck,
    NodeGroup,
    RankInfo,
    RankOutcome,
    RankState,
    Rendezvous,
    Stack,
    Stage,
    Unreadable,
)
from envdoctor.fleet.report import FleetReport, build_report
from envdoctor.model.findings import Severity
from envdoctor.settings import Settings

STACK = Stack(
    os="linux x86_64",
    python="3.11.9",
    torch="2.5.1+cu124",
    cuda="12.4",
    cudnn="9.1.0",
    nccl="2.21.5",
    driver="550.54.15",
    gpus=(GpuModel("NVIDIA H100 80GB HBM3", 8),),
    components=(Component("torchvision", "0.20.1+cu124"),),
)
OK = NodeCheck(exit_code=0, worst=Severity.OK)
DRIVER_TOO_OLD = NodeCheck(
    exit_code=1,
    worst=Severity.ERROR,
    findings=(
        FindingBrief(
            "ED101", "driver-too-old-for-torch-cuda", Severity.ERROR, "the NVIDIA driver is too old"
        ),
    ),
)
GB = 1e9


def nodes(prefix: str, count: int, first: int = 0) -> tuple[str, ...]:
    return tuple(f"{prefix}{i:03d}" for i in range(first, first + count))


def offline(*groups: NodeGroup, unreadable: tuple[Unreadable, ...] = ()) -> FleetFacts:
    return FleetFacts(mode=FleetMode.OFFLINE, groups=groups, unreadable=unreadable)


def rank(
    number: int,
    node: str,
    *,
    state: RankState = RankState.FINISHED,
    stage: Stage | None = Stage.DONE,
    result: CollectiveResult | None = None,
    env: dict[str, str] | None = None,
    **info: object,
) -> RankOutcome:
    fields: dict[str, object] = {
        "local_rank": number % 8,
        "host": node,
        "device": f"cuda:{number % 8}",
        "gpu_count": 8,
        "torch": "2.5.1+cu124",
        "nccl": "2.21.5",
        "env": tuple(EnvVar(k, v) for k, v in sorted((env or {}).items())),
        "interfaces": ("eth0", "ib0", "lo"),
    }
    fields.update(info)
    details = RankInfo(rank=number, node=node, **fields)  # type: ignore[arg-type]
    if result is None and state is RankState.FINISHED:
        result = CollectiveResult(
            backend="nccl", correct=True, size_bytes=64 << 20, iterations=20, busbw=180 * GB
        )
    return RankOutcome(number, state, stage, details, result)


def job(*ranks: RankOutcome, attempted: bool = True, rendezvous: Rendezvous | None = None) -> FleetFacts:
    names = sorted({r.info.node for r in ranks if r.info is not None})
    return FleetFacts(
        mode=FleetMode.DISTRIBUTED,
        groups=(NodeGroup(STACK, OK, tuple(names)),) if names else (),
        world_size=len(ranks),
        ranks=ranks,
        rendezvous=rendezvous,
        collective=Collective(attempted=attempted, backend="nccl", waited_seconds=12.0),
    )


def healthy_job(count: int = 4) -> FleetFacts:
    return job(*(rank(i, f"gpu{i // 2:03d}") for i in range(count)))


def _slow(busbw: float) -> CollectiveResult:
    return CollectiveResult(backend="nccl", correct=True, size_bytes=64 << 20, iterations=20, busbw=busbw)


# rule code -> a situation that fires it
SCENARIOS: dict[str, FleetFacts] = {
    "ED801": offline(
        NodeGroup(STACK, OK, nodes("gpu", 60)),
        NodeGroup(replace(STACK, torch="2.6.0+cu126", cuda="12.6"), OK, nodes("gpu", 2, 60)),
    ),
    "ED802": offline(
        NodeGroup(STACK, OK, nodes("gpu", 10)),
        NodeGroup(replace(STACK, driver="535.104.05"), OK, nodes("gpu", 1, 10)),
    ),
    "ED803": offline(
        NodeGroup(STACK, OK, nodes("gpu", 999)),
        NodeGroup(replace(STACK, gpus=(GpuModel("NVIDIA H100 80GB HBM3", 7),)), OK, nodes("gpu", 1, 999)),
    ),
    "ED804": offline(
        NodeGroup(STACK, OK, nodes("gpu", 5)), NodeGroup(STACK, DRIVER_TOO_OLD, nodes("gpu", 3, 5))
    ),
    "ED805": offline(
        NodeGroup(STACK, OK, nodes("gpu", 5)),
        unreadable=(Unreadable("snaps/gpu042.json", "not valid JSON (Expecting value)"),),
    ),
    "ED810": FleetFacts(
        mode=FleetMode.DISTRIBUTED,
        world_size=16,
        ranks=(RankOutcome(5, RankState.NEVER_ARRIVED),),
        rendezvous=Rendezvous(
            "slurm", "login1", 29500, "client", False, "MASTER_ADDR login1 does not resolve", 3.0
        ),
    ),
    "ED811": job(
        rank(0, "gpu000"),
        RankOutcome(1, RankState.NEVER_ARRIVED),
        rank(2, "gpu001", state=RankState.DIED, stage=Stage.STARTED),
        attempted=False,
    ),
    "ED812": job(
        rank(0, "gpu000"),
        rank(
            1,
            "gpu001",
            result=CollectiveResult(backend="nccl", correct=False, mismatch="float32: 3 of 9 wrong"),
        ),
    ),
    "ED813": job(
        rank(0, "gpu000", result=CollectiveResult("nccl", error="timed out")),
        rank(1, "gpu001", state=RankState.HUNG, stage=Stage.GROUP),
    ),
    "ED814": job(
        rank(0, "gpu000"), rank(1, "gpu001"), rank(2, "gpu002"), rank(3, "gpu003", result=_slow(3 * GB))
    ),
    "ED815": job(
        rank(0, "gpu000", result=CollectiveResult("nccl", error="timed out")),
        rank(1, "gpu001", state=RankState.HUNG, stage=Stage.GROUP),
    ),
    "ED820": job(rank(0, "gpu000", env={"NCCL_SOCKET_IFNAME": "eth1"}), rank(1, "gpu001")),
    "ED821": job(
        rank(0, "gpu000", env={"NCCL_P2P_DISABLE": "1"}), rank(1, "gpu001", env={"NCCL_P2P_DISABLE": "1"})
    ),
    "ED822": job(
        rank(0, "gpu000", env={"NCCL_IB_DISABLE": "1"}, infiniband=("mlx5_0",)),
        rank(1, "gpu001", env={"NCCL_IB_DISABLE": "1"}, infiniband=("mlx5_0",)),
    ),
    "ED823": job(rank(0, "gpu000"), rank(1, "gpu001", env={"NCCL_ALGO": "Tree"}), rank(2, "gpu002")),
    "ED830": job(
        rank(0, "gpu000"), rank(1, "gpu001", numpy_error="ModuleNotFoundError: No module named 'numpy'")
    ),
}
HEALTHY = {"offline": offline(NodeGroup(STACK, OK, nodes("gpu", 64))), "job": healthy_job()}
# A node without torch fails its own check; it is not a torch version of its own.
NO_TORCH = offline(
    NodeGroup(STACK, OK, nodes("gpu", 3)),
    NodeGroup(replace(STACK, torch=NOT_INSTALLED), DRIVER_TOO_OLD, ("x",)),
)


def report(facts: FleetFacts, settings: Settings | None = None) -> FleetReport:
    return build_report(facts, settings or Settings(), "test")


def codes(facts: FleetFacts) -> list[str]:
    return [f.code for f in report(facts).findings]


def triggered_codes() -> set[str]:
    return {code for facts in SCENARIOS.values() for code in codes(facts)}
