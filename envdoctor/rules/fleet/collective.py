"""The all-reduce every rank ran: wrong sums, ranks that hung in it, nodes that were slow."""

from __future__ import annotations

import statistics
from collections.abc import Iterator

from envdoctor.fleet.facts import FleetFacts, RankOutcome, RankState, Stage
from envdoctor.fleet.words import count, names, rate
from envdoctor.model.findings import Fix, Severity
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fleet.job import who

SLOW_FRACTION = 0.5  # a node below half the median bus bandwidth is an outlier


def _completed(outcome: RankOutcome) -> bool:
    result = outcome.result
    return result is not None and result.error is None and result.correct is not None


@rule(
    code="ED812",
    name="allreduce-wrong",
    severity=Severity.ERROR,
    summary="the all-reduce returned a wrong sum on some ranks",
    needs=(FleetFacts,),
    doc=RuleDoc(
        what="Each rank all-reduces tensors of known values (float32 and int64) and compares the result "
        "with the exact expected sum.",
        why="A collective that returns wrong numbers silently corrupts gradients: the job trains, the "
        "loss diverges, and nothing says why. Causes are faulty GPUs or links, broken P2P/PCIe "
        "settings (ACS, IOMMU) and mismatched NCCL builds.",
        fix="Run the job without the named nodes; on them, run NVIDIA's DCGM diagnostics "
        "(`dcgmi diag -r 3`) and nccl-tests, and check that PCIe ACS is off on bare metal.",
        example="Rank 6's sums are off by a constant because its GPU's P2P path through a PCIe switch "
        "with ACS enabled drops writes.",
    ),
)
def allreduce_wrong(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(FleetFacts)
    wrong = [r for r in facts.ranks if r.result is not None and r.result.correct is False]
    if not wrong:
        return
    yield Hit(
        title=f"the all-reduce returned wrong sums on {count(len(wrong), 'rank')}: "
        f"{', '.join(who(r) for r in wrong[:12])}",
        detail="\n".join(f"{who(r)}: {r.result.mismatch if r.result else ''}" for r in wrong[:12])
        + "\nEvery rank contributed known values; the sum is exact in both types, so any difference "
        "is corruption, not rounding.",
        evidence=tuple(f"rank {r.rank}: {r.result.mismatch if r.result else ''}" for r in wrong[:12]),
        fixes=(
            Fix(
                summary="Take the named nodes out of the job and run the GPU diagnostics there",
                commands=("dcgmi diag -r 3",),
            ),
        ),
    )


@rule(
    code="ED813",
    name="allreduce-hung",
    severity=Severity.ERROR,
    summary="the all-reduce did not finish in time (ranks that never arrived or never finished named)",
    needs=(FleetFacts,),
    doc=RuleDoc(
        what="Whether every rank that is alive entered the all-reduce and came out of it before the "
        "deadline; each rank posts its progress to the rendezvous store, so the ones stuck are named.",
        why="A hung collective is the most expensive failure of a distributed job: every rank waits, "
        "GPUs idle, and the default timeouts are 10 to 30 minutes.",
        fix="Look at the named ranks: a rank that never entered is stuck before it (its node check, a "
        "device, the process group); ranks that entered and never finished usually cannot open "
        "connections to each other (firewall, NCCL_SOCKET_IFNAME, InfiniBand). Rerun with "
        "NCCL_DEBUG=INFO to see where.",
        example="Rank 3 joined the process group but never entered the all-reduce because its GPU was "
        "stuck in a previous job's kernel; ranks 0-2 waited until the deadline.",
    ),
)
def allreduce_hung(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(FleetFacts)
    collective = facts.collective
    if collective is None:
        return
    if not collective.attempted:  # no all-reduce (ranks missing); still name the ranks stuck alive
        stuck = [r for r in facts.ranks if r.state is RankState.HUNG]
        if stuck:
            yield Hit(
                title=f"{count(len(stuck), 'rank')} alive but stuck: "
                + ", ".join(who(r) for r in stuck[:12]),
                detail="\n".join(
                    f"{who(r)} never finished: it last {r.stage.phrase if r.stage else 'did nothing'}"
                    for r in stuck[:24]
                ),
                evidence=tuple(
                    f"rank {r.rank}: stage {r.stage.value if r.stage else 'none'}" for r in stuck[:24]
                ),
                fixes=(
                    Fix(summary="Look at what the named ranks are doing (py-spy dump --pid PID shows it)"),
                ),
            )
        return
    if all(_completed(r) for r in facts.ranks):
        return
    dead = [r for r in facts.ranks if r.state in (RankState.NEVER_ARRIVED, RankState.DIED)]
    alive = [r for r in facts.ranks if r.state not in (RankState.NEVER_ARRIVED, RankState.DIED)]
    stuck_before = [
        r for r in alive if not _completed(r) and (r.stage is None or r.stage.order < Stage.ALLREDUCE.order)
    ]
    stuck_inside = [r for r in alive if not _completed(r) and r not in stuck_before]
    if dead and not stuck_before:
        return  # the dead ranks are the cause; ED811 names them

    def error(outcome: RankOutcome) -> str:
        found = outcome.result.error if outcome.result is not None else None
        return f": {found}" if found else ""

    lines = [
        f"{who(r)} never entered the all-reduce: it last {r.stage.phrase if r.stage else 'did nothing'}"
        + error(r)
        for r in stuck_before
    ]
    lines += [f"{who(r)} entered the all-reduce and never finished{error(r)}" for r in stuck_inside]
    culprits = stuck_before or stuck_inside
    yield Hit(
        title=f"the all-reduce did not finish within {collective.waited_seconds:.1f} s: "
        f"{', '.join(who(r) for r in culprits[:12])} "
        f"{'never entered it' if stuck_before else 'never finished it'}",
        detail="\n".join(lines[:24]),
        evidence=tuple(f"rank {r.rank}: stage {r.stage.value if r.stage else 'none'}" for r in alive[:24]),
        fixes=(
            Fix(
                summary="Rerun with the collective library's own logging to see where it waits",
                commands=(
                    "export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET TORCH_DISTRIBUTED_DEBUG=DETAIL",
                ),
            ),
        ),
    )


def _node_bandwidth(facts: FleetFacts) -> dict[str, float]:
    """Each node's bus bandwidth: the slowest of its ranks."""
    figures: dict[str, float] = {}
    for outcome in facts.ranks:
        result, info = outcome.result, outcome.info
        if info is None or result is None or result.busbw is None or not _completed(outcome):
            continue
        figures[info.node] = min(figures.get(info.node, result.busbw), result.busbw)
    return figures


@rule(
    code="ED814",
    name="allreduce-slow",
    severity=Severity.WARNING,
    summary="a node's all-reduce bus bandwidth is far below the fleet's median",
    needs=(FleetFacts,),
    doc=RuleDoc(
        what="Each rank times a short all-reduce loop and computes the bus bandwidth as nccl-tests "
        "defines it (algorithm bandwidth × 2(n-1)/n); a node below half of the median is named.",
        why="A collective runs at the pace of its slowest link: one node on a degraded link (a NIC at "
        "a lower speed, InfiniBand off, P2P disabled) slows the whole job.",
        fix="Check the named node's links (`ibstat`, `nvidia-smi topo -m`, `ethtool`), its NCCL "
        "settings (NCCL_IB_DISABLE, NCCL_P2P_DISABLE), and compare with nccl-tests.",
        example="Node 17 reaches 3 GB/s while the median is 180 GB/s: its InfiniBand port came up at "
        "a quarter of its width and NCCL fell back to TCP.",
    ),
)
def allreduce_slow(ctx: RuleContext) -> Iterator[Hit]:
    figures = _node_bandwidth(ctx.need(FleetFacts))
    if len(figures) < 2:
        return
    median = statistics.median(figures.values())
    slow = sorted(
        (node for node, busbw in figures.items() if busbw < SLOW_FRACTION * median),
        key=lambda node: figures[node],
    )
    if not slow or median <= 0:
        return
    yield Hit(
        title=f"{count(len(slow), 'node')} reached less than half the median all-reduce bandwidth: "
        f"{names(slow)}",
        detail="; ".join(f"{node}: {rate(figures[node])}" for node in slow[:12])
        + f" (median of {count(len(figures), 'node')}: {rate(median)}, bus bandwidth).",
        evidence=tuple(f"{node}: busbw {figures[node]:.0f} B/s" for node in slow[:12]),
        fixes=(
            Fix(
                summary="Inspect the named nodes' links and NCCL settings",
                commands=("nvidia-smi topo -m", "ibstat"),
            ),
        ),
    )


def _collective_trouble(facts: FleetFacts) -> bool:
    if facts.collective is None or not facts.collective.attempted:
        return False
    return any(not _completed(r) or (r.result is not None and r.result.correct is False) for r in facts.ranks)


@rule(
    code="ED815",
    name="nccl-debug-advice",
    severity=Severity.INFO,
    summary="a collective failed and NCCL_DEBUG is not set: how to see why",
    needs=(FleetFacts,),
    doc=RuleDoc(
        what="Whether a collective failed, hung or returned wrong sums while NCCL_DEBUG was unset on "
        "the ranks.",
        why="NCCL says nothing about its transport, interfaces and peers unless asked; with "
        "NCCL_DEBUG=INFO the next run's log shows which interface and transport each rank chose and "
        "where it waited.",
        fix="Set NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,NET to keep it short) for the job; for "
        "gloo, TORCH_DISTRIBUTED_DEBUG=DETAIL and TORCH_CPP_LOG_LEVEL=INFO.",
        example="The all-reduce hung on every rank; no NCCL_DEBUG was set, so the log is silent.",
    ),
)
def nccl_debug_advice(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(FleetFacts)
    if not _collective_trouble(facts):
        return
    infos = facts.rank_infos()
    if any(info.env_value("NCCL_DEBUG") for info in infos):
        return
    backend = facts.collective.backend if facts.collective else None
    extra = " TORCH_DISTRIBUTED_DEBUG=DETAIL TORCH_CPP_LOG_LEVEL=INFO" if backend == "gloo" else ""
    yield Hit(
        title="rerun with NCCL_DEBUG=INFO to see where the collective failed",
        detail=f"The collective ({backend or 'unknown backend'}) did not complete cleanly, and no rank "
        "had NCCL_DEBUG set, so the libraries logged nothing about their connections.",
        evidence=("NCCL_DEBUG: unset on every rank",),
        fixes=(
            Fix(
                summary="Export these for the job, then run it (or `envdoctor cluster`) again",
                commands=(f"export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET{extra}",),
            ),
        ),
    )


RULES = (allreduce_wrong, allreduce_hung, allreduce_slow, nccl_debug_advice)
