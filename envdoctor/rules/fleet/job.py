"""The job as a whole: reaching the rendezvous, and ranks that never came or went away."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.fleet.facts import FleetFacts, RankOutcome, RankState
from envdoctor.fleet.words import count
from envdoctor.model.findings import Fix, Severity
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule


def who(outcome: RankOutcome) -> str:
    """ "rank 3 (gpu-node-2)", or "rank 3" when it never said where it runs."""
    return f"rank {outcome.rank} ({outcome.info.node})" if outcome.info else f"rank {outcome.rank}"


@rule(
    code="ED810",
    name="rendezvous-unreachable",
    severity=Severity.ERROR,
    summary="MASTER_ADDR:MASTER_PORT cannot be resolved, reached or served",
    needs=(FleetFacts,),
    doc=RuleDoc(
        what="Whether this rank could reach the job's rendezvous store at MASTER_ADDR:MASTER_PORT (or, "
        "on rank 0, open it): the name resolves, the port answers, the port is free.",
        why="Every rank meets the others there first; a rank that cannot reach it never joins, and the "
        "others wait for it until they time out.",
        fix="Make MASTER_ADDR a name or address every node resolves and reaches (the first node of the "
        "allocation), open MASTER_PORT between the nodes, and choose a port nothing else uses.",
        example="MASTER_ADDR is the login node's short name, which the compute nodes cannot resolve.",
    ),
)
def rendezvous_unreachable(ctx: RuleContext) -> Iterator[Hit]:
    rendezvous = ctx.need(FleetFacts).rendezvous
    if rendezvous is None or rendezvous.reached:
        return
    where = f"{rendezvous.address}:{rendezvous.port}"
    if rendezvous.role == "server":
        title = f"rank 0 could not open the rendezvous store on port {rendezvous.port}"
        fix = Fix(
            summary="Choose a MASTER_PORT that nothing else on the first node listens on",
            commands=(f"ss -ltnp 'sport = :{rendezvous.port}'",),
        )
    else:
        title = f"this rank could not reach the rendezvous store at {where} ({rendezvous.launcher})"
        fix = Fix(
            summary="Check from this node that MASTER_ADDR resolves and MASTER_PORT answers",
            commands=(
                f"getent hosts {rendezvous.address}",
                f"nc -zv -w 3 {rendezvous.address} {rendezvous.port}",
            ),
        )
    yield Hit(
        title=title,
        detail=f"{rendezvous.error or 'no answer'} (after {rendezvous.seconds:.1f} s). Without the store "
        "this rank cannot meet the others; they report it as missing.",
        evidence=(f"MASTER_ADDR={rendezvous.address}", f"MASTER_PORT={rendezvous.port}"),
        fixes=(fix,),
    )


@rule(
    code="ED811",
    name="ranks-missing",
    severity=Severity.ERROR,
    summary="ranks that never joined the job, died after joining, or could not take part (named)",
    needs=(FleetFacts,),
    doc=RuleDoc(
        what="Every rank the launcher announced (WORLD_SIZE): one that never wrote to the rendezvous "
        "store within the time, whose heartbeat stopped after it joined, or that could not take part "
        "(torch does not import in its process, say).",
        why="A collective needs every rank; one missing rank makes all the others wait until their "
        "timeout, which is how a 64-node job hangs for 30 minutes before it fails.",
        fix="Look at the named ranks' own output (the launcher's log for that node): a rank that never "
        "arrived usually could not start Python or reach MASTER_ADDR, one that died crashed.",
        example="rank 5 never arrived because its node's container lacked envdoctor; rank 9 died with "
        "a segmentation fault while importing torch.",
    ),
)
def ranks_missing(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(FleetFacts)
    never = [r for r in facts.ranks if r.state is RankState.NEVER_ARRIVED]
    died = [r for r in facts.ranks if r.state is RankState.DIED]
    failed = [r for r in facts.ranks if r.state is RankState.FAILED]
    if never:
        named = ", ".join(who(r) for r in never[:16])
        yield Hit(
            title=f"{count(len(never), 'rank')} never joined the job: {named}",
            detail=f"{count(len(facts.ranks), 'rank')} were expected (WORLD_SIZE); these never wrote to "
            "the rendezvous store within the time. They did not start, could not start Python or "
            "envdoctor, or could not reach MASTER_ADDR:MASTER_PORT (their own output says which).",
            evidence=tuple(f"rank {r.rank}: never arrived" for r in never[:16]),
            fixes=(Fix(summary="Read the launcher's log of the named ranks' nodes"),),
        )
    if died:
        lines = [
            f"{who(r)} stopped answering after it {r.stage.phrase if r.stage else 'joined'}" for r in died
        ]
        yield Hit(
            title=f"{count(len(died), 'rank')} died after joining: {', '.join(who(r) for r in died[:16])}",
            detail="\n".join(lines[:16]) + "\nIts heartbeat stopped: the process exited or was killed "
            "(a crash, the out-of-memory killer, a node failure).",
            evidence=tuple(
                f"rank {r.rank}: last stage {r.stage.value if r.stage else '?'}" for r in died[:16]
            ),
            fixes=(
                Fix(
                    summary="Read the named ranks' output and the node's kernel log",
                    commands=("dmesg -T | tail -n 50",),
                ),
            ),
        )

    if failed:
        yield Hit(
            title=f"{count(len(failed), 'rank')} could not take part: "
            + "; ".join(f"{who(r)}: {r.error}" for r in failed[:4]),
            detail="\n".join(f"{who(r)}: {r.error}" for r in failed[:16]),
            evidence=tuple(f"rank {r.rank}: {r.error}" for r in failed[:16]),
            fixes=(Fix(summary="Fix what the named ranks report, then run the check again"),),
        )


RULES = (rendezvous_unreachable, ranks_missing)
