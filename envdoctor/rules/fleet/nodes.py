"""Nodes whose own check fails, and snapshot files that could not be read."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.fleet.facts import FleetFacts
from envdoctor.fleet.words import NAMED, count, names
from envdoctor.model.findings import Fix, Severity
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule


@rule(
    code="ED804",
    name="node-check-fails",
    severity=Severity.ERROR,
    summary="some nodes fail their own check (named, with their top finding)",
    needs=(FleetFacts,),
    doc=RuleDoc(
        what="Every node's own `envdoctor check` verdict, re-diagnosed from its snapshot: nodes that "
        "would exit 1 on their own are named, grouped by their most severe finding.",
        why="One broken node is enough to stop a distributed job: its rank fails at start, or minutes "
        "in, and the other ranks wait for it until they time out.",
        fix="Fix the named nodes as their top finding says (`envdoctor check` on the node, or "
        "`envdoctor check --from SNAPSHOT` anywhere, shows the full report), or drain them.",
        example="Three nodes of 512 still run driver 470 after an image roll-out, too old for the job's "
        "cu124 torch (ED101).",
    ),
)
def node_check_fails(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(FleetFacts)
    by_cause: dict[tuple[str, str], list[str]] = {}
    for group in facts.groups:
        if not group.check.fails:
            continue
        top = group.check.top
        if group.check.error is not None:
            cause = ("", f"its check could not run: {group.check.error}")
        elif top is not None:
            cause = (top.code, f"{top.code} {top.name}: {top.title}")
        else:  # exit 1 without findings cannot happen; say so rather than hide the node
            cause = ("", "its check failed without a finding")
        by_cause.setdefault(cause, []).extend(group.nodes)
    for (code, words), nodes in sorted(by_cause.items(), key=lambda item: -len(item[1])):
        where = "one of them" if len(nodes) > 1 else "the node"
        yield Hit(
            title=f"{count(len(nodes), 'node')} {'fails its' if len(nodes) == 1 else 'fail their'} own check "
            f"({names(nodes, 4)}): {words}",
            detail=f"Nodes: {names(nodes, NAMED * 4)}.",
            evidence=(f"top finding {code or 'none'}: {count(len(nodes), 'node')}",),
            fixes=(
                Fix(
                    summary=f"See the full report on {where}, and fix or drain the nodes",
                    commands=("envdoctor check", "envdoctor check --from SNAPSHOT.json"),
                ),
            ),
        )


@rule(
    code="ED805",
    name="snapshot-unreadable",
    severity=Severity.WARNING,
    summary="some files given to `envdoctor fleet` are not readable snapshots",
    needs=(FleetFacts,),
    doc=RuleDoc(
        what="Each file `envdoctor fleet` was given: one that cannot be read, is not JSON (damaged or "
        "cut short), or is JSON of another kind is named with the reason.",
        why="Its node was not diagnosed, so the fleet verdict says nothing about it; a node whose "
        "snapshot job died half-way often has a problem of its own.",
        fix="Write the snapshot again on that node (`envdoctor snapshot -o FILE`), and keep other JSON "
        "files out of the snapshot folder.",
        example="node0042.json is empty because the node ran out of disk while writing it, and "
        "report.json in the same folder is a `check --format json` report, not a snapshot.",
    ),
)
def snapshot_unreadable(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(FleetFacts)
    if not facts.unreadable:
        return
    files = [u.path for u in facts.unreadable]
    listed = "\n".join(f"{u.path}: {u.reason}" for u in facts.unreadable[: NAMED * 2])
    more = len(files) - NAMED * 2
    yield Hit(
        title=f"{count(len(files), 'file')} could not be used as snapshots: {names(files, 4)}",
        detail=f"{listed}{f'{chr(10)}... and {more:,} more' if more > 0 else ''}\nThe other "
        f"{count(facts.node_count, 'node')} were diagnosed.",
        evidence=tuple(f"{u.path}: {u.reason}" for u in facts.unreadable[:NAMED]),
        fixes=(
            Fix(
                summary="Write the snapshot again on each named node, and keep other files out of the folder",
                commands=("envdoctor snapshot -o SNAPSHOT.json",),
            ),
        ),
    )


RULES = (node_check_fails, snapshot_unreadable)
