"""The fleet report in check's formats: console, json ("envdoctor.fleet/1"), markdown, github, junit.

Findings are rendered by the same helpers as `check`'s (render/json_report.py, markdown.py,
github.py, console.py); what is new is the node-group status table and the rank table.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

from rich.console import Console
from rich.text import Text

from envdoctor.fleet.facts import FleetMode, NodeGroup, RankOutcome, RankState
from envdoctor.fleet.report import FleetReport
from envdoctor.fleet.words import count, names, rate
from envdoctor.model.findings import Severity
from envdoctor.render.console import FINDING_MARKS, Glyphs, Printer, finding_block
from envdoctor.render.github import annotation, annotation_message
from envdoctor.render.json_report import finding_to_data
from envdoctor.render.junit import clean
from envdoctor.render.markdown import MARK, cell, finding_lines, headline
from envdoctor.util.serde import to_data

SCHEMA = "envdoctor.fleet/1"
GROUPS_SHOWN = 20  # console and Markdown; the JSON report has every group and node
RANKS_SHOWN = 32


def group_status(group: NodeGroup) -> str:
    if group.check.fails:
        return "error"
    return {Severity.WARNING: "warning", Severity.ERROR: "error"}.get(group.check.worst, "ok")


def _rank_result(outcome: RankOutcome) -> str:
    result = outcome.result
    if outcome.state is not RankState.FINISHED or result is None:
        return outcome.state.value.replace("_", " ")
    if result.error:
        return "failed"
    return {True: "correct", False: "WRONG", None: "not run"}[result.correct]


def report_to_data(report: FleetReport) -> dict[str, Any]:
    facts = report.facts
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "envdoctor_version": report.envdoctor_version,
        "mode": facts.mode.value,
        "source": report.source,
        "status": report.status,
        "exit_code": report.exit_code,
        "nodes": facts.node_count,
        "groups": [
            {
                "status": group_status(g),
                "nodes": list(g.nodes),
                "stack": None if g.stack is None else to_data(g.stack),
                "stack_text": None if g.stack is None else g.stack.describe(),
                "exit_code": g.check.exit_code,
                "worst": g.check.worst.value,
                "error": g.check.error,
                "findings": to_data(g.check.findings),
            }
            for g in facts.groups
        ],
        "unreadable": to_data(facts.unreadable),
        "findings": [finding_to_data(f) for f in report.findings],
    }
    if facts.mode is FleetMode.DISTRIBUTED:
        data["world_size"] = facts.world_size
        data["ranks"] = to_data(facts.ranks)
        data["rendezvous"] = to_data(facts.rendezvous)
        data["collective"] = to_data(facts.collective)
    if report.ignored:
        data["ignored"] = list(report.ignored)
    return data


def render_json(report: FleetReport) -> str:
    return json.dumps(report_to_data(report), indent=2) + "\n"


# --- console ------------------------------------------------------------------------------------


def _intro(report: FleetReport) -> str:
    facts = report.facts
    if facts.mode is FleetMode.DISTRIBUTED:
        return f"{report.source}: {count(facts.node_count, 'node')}, {count(facts.world_size or 0, 'rank')}"
    unreadable = f", {count(len(facts.unreadable), 'file')} unusable" if facts.unreadable else ""
    return f"{report.source}: {count(facts.node_count, 'node')}{unreadable}"


def _group_lines(report: FleetReport) -> list[tuple[Severity, str, list[str]]]:
    """(severity, head, lines under it) per group, for the console and Markdown."""
    out = []
    for number, group in enumerate(report.facts.groups[:GROUPS_SHOWN], 1):
        status = group_status(group)
        severity = {"error": Severity.ERROR, "warning": Severity.WARNING}.get(status, Severity.OK)
        stack = group.stack.describe() if group.stack is not None else "stack unknown (no snapshot)"
        head = f"#{number}  {count(len(group.nodes), 'node'):>12}  {status:<7}  {stack}"
        lines = []
        if group.check.error:
            lines.append(f"check could not run: {group.check.error}")
        elif group.check.top is not None and status != "ok":
            top = group.check.top
            lines.append(f"top finding: {top.code} {top.name}: {top.title}")
        lines.append(f"nodes: {names(group.nodes)}")
        out.append((severity, head, lines))
    return out


def _rank_rows(report: FleetReport) -> list[str]:
    ranks = report.facts.ranks
    rows = [f"{'rank':>5}  {'node':<20} {'device':<8} {'stage':<10} {'all-reduce':<14} bus bandwidth"]
    shown = [r for r in ranks if r.state is not RankState.FINISHED][:RANKS_SHOWN]
    shown += [r for r in ranks if r.state is RankState.FINISHED][: max(0, RANKS_SHOWN - len(shown))]
    for outcome in sorted(shown, key=lambda r: r.rank):
        info, result = outcome.info, outcome.result
        busbw = rate(result.busbw) if result is not None and result.busbw is not None else "-"
        rows.append(
            f"{outcome.rank:>5}  {(info.node if info else '?')[:20]:<20} {(info.device if info else '-'):<8} "
            f"{(outcome.stage.value if outcome.stage else '-'):<10} {_rank_result(outcome):<14} {busbw}"
        )
    if len(ranks) > len(shown):
        rows.append(f"... {count(len(ranks) - len(shown), 'more rank')} finished cleanly (see --format json)")
    return rows


def _collective_line(report: FleetReport) -> str | None:
    facts = report.facts
    collective = facts.collective
    if collective is None:
        return None
    if not collective.attempted:
        return f"all-reduce not run: {collective.skipped_reason or 'not attempted'}"
    results = [r.result for r in facts.ranks if r.result is not None and r.result.busbw is not None]
    correct = sum(1 for r in facts.ranks if r.result is not None and r.result.correct)
    line = f"all-reduce ({collective.backend}): correct on {correct} of {count(len(facts.ranks), 'rank')}"
    if results:
        sizes = results[0].size_bytes
        best = max(r.busbw or 0.0 for r in results)
        worst = min(r.busbw or 0.0 for r in results)
        line += f"; bus bandwidth {rate(worst)} to {rate(best)} ({sizes / 2**20:.0f} MiB messages)"
    return line


def render_console(report: FleetReport, console: Console, verbose: bool = False) -> None:
    glyph = Glyphs(console)
    console.print(
        Text.assemble((f"envdoctor {report.envdoctor_version}", "bold"), f" {glyph('·')} {_intro(report)}")
    )
    console.print()
    console.print(Text("Node groups (same stack, same verdict)", style="bold underline"))
    for severity, head, lines in _group_lines(report):
        mark, style = FINDING_MARKS[severity]
        console.print(Text.assemble((f" {glyph(mark)} ", style), (head, "bold")))
        for line in lines:
            console.print(Text(f"      {line}"))
    if len(report.facts.groups) > GROUPS_SHOWN:
        console.print(Text(f"   ... {count(len(report.facts.groups) - GROUPS_SHOWN, 'more group')}"))
    if report.facts.mode is FleetMode.DISTRIBUTED and report.facts.ranks:
        console.print()
        console.print(Text("Ranks", style="bold underline"))
        for row in _rank_rows(report):
            console.print(Text("  " + row))
        collective = _collective_line(report)
        if collective:
            console.print(Text("  " + collective))
    console.print()
    if report.findings:
        console.print(Text("Findings", style="bold underline"))
        for finding in report.findings:
            finding_block(Printer(console, wrap=False), glyph, finding, verbose)
            console.print()
    head, style = _summary(report)
    console.print(Text.assemble((glyph(head), style), f" {glyph('—')} exit {report.exit_code}"))


def _summary(report: FleetReport) -> tuple[str, str]:
    data = {
        "findings": [{"severity": f.severity.value} for f in report.findings],
        "exit_code": report.exit_code,
    }
    words = headline(data).rsplit(", exit", 1)[0]
    if report.exit_code != 0:
        return f"✗ Fleet: {words}", "bold red"
    if report.worst >= Severity.WARNING:
        return f"! Fleet: {words}", "bold yellow"
    return f"✓ Fleet: {words}", "bold green"


# --- markdown and github ------------------------------------------------------------------------


def render_markdown(report: FleetReport, verbose: bool = False) -> str:
    data = report_to_data(report)
    lines = [f"## envdoctor fleet: {headline(data)}", "", _intro(report), ""]
    lines += ["| | # | Nodes | Stack | Top finding | Node names |", "|---|---|---|---|---|---|"]
    for number, group in enumerate(report.facts.groups[:GROUPS_SHOWN], 1):
        status = group_status(group)
        top = group.check.top
        finding = (
            f"check could not run: {group.check.error}"
            if group.check.error
            else f"{top.code} {top.title}"
            if top is not None and status != "ok"
            else ""
        )
        stack = group.stack.describe() if group.stack is not None else "unknown"
        lines.append(
            f"| {MARK[status]} | {number} | {len(group.nodes):,} | {cell(stack)} | {cell(finding)} | "
            f"{cell(names(group.nodes))} |"
        )
    if len(report.facts.groups) > GROUPS_SHOWN:
        lines.append(f"\n{count(len(report.facts.groups) - GROUPS_SHOWN, 'more group')} in the JSON report.")
    lines.append("")
    if report.facts.mode is FleetMode.DISTRIBUTED and report.facts.ranks:
        lines += ["```text", *_rank_rows(report), "```", ""]
        collective = _collective_line(report)
        if collective:
            lines += [collective, ""]
    if data["findings"]:
        lines += ["### Findings", ""]
        for finding in data["findings"]:
            lines += finding_lines(finding, verbose)
    if report.ignored:
        lines += [f"Ignored rules: {', '.join(report.ignored)}", ""]
    return "\n".join(lines).rstrip() + "\n"


def render_github(report: FleetReport) -> str:
    data = report_to_data(report)
    lines = [annotation(f) for f in data["findings"]]
    lines.append(f"envdoctor fleet: {headline(data)}")
    return "\n".join(lines) + "\n"


# --- junit --------------------------------------------------------------------------------------


def _case(suite: ET.Element, classname: str, name: str) -> ET.Element:
    return ET.SubElement(suite, "testcase", classname=clean(classname), name=clean(name), time="0.000")


def _sub(case: ET.Element, tag: str, body: str | None = None, **attrs: str) -> None:
    element = ET.SubElement(case, tag, {k: clean(v) for k, v in attrs.items()})
    if body is not None:
        element.text = clean(body)


def render_junit(report: FleetReport) -> str:
    """One test case per node (failing nodes fail, with their top finding) and one per fleet rule."""
    from envdoctor.rules.fleet import RULES

    data = report_to_data(report)
    root = ET.Element("testsuites", name="envdoctor.fleet")
    nodes = ET.SubElement(root, "testsuite", name="envdoctor.fleet.nodes")
    for group in report.facts.groups:
        top = group.check.top
        why = group.check.error or (f"{top.code} {top.name}: {top.title}" if top else "failed")
        for node in group.nodes:
            case = _case(nodes, "envdoctor.fleet.nodes", node)
            if group.check.fails:
                _sub(case, "failure", why, message=why, type="error")
    for unreadable in report.facts.unreadable:
        case = _case(nodes, "envdoctor.fleet.nodes", unreadable.path)
        _sub(case, "error", unreadable.reason, message=unreadable.reason, type="unreadable")
    rules = ET.SubElement(root, "testsuite", name="envdoctor.fleet.rules")
    fails = {"error"} | ({"warning"} if report.strict else set())
    by_code: dict[str, list[dict[str, Any]]] = {}
    for finding in data["findings"]:
        by_code.setdefault(finding["code"], []).append(finding)
    for rule in RULES:
        found = by_code.get(rule.code, [])
        for finding in found:
            case = _case(
                rules, f"envdoctor.fleet.rules.{rule.area}", f"{rule.code} {rule.name}: {finding['title']}"
            )
            message = annotation_message(finding)
            if finding["severity"] in fails:
                _sub(case, "failure", message, message=finding["title"], type=finding["severity"])
            else:
                _sub(case, "system-out", f"[{finding['severity']}] {message}")
        if not found:
            case = _case(rules, f"envdoctor.fleet.rules.{rule.area}", f"{rule.code} {rule.name}")
            if rule.code in report.ignored:
                _sub(case, "skipped", message="ignored (--ignore)")
    for suite in (nodes, rules, root):
        cases = list(suite.iter("testcase"))
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
        suite.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
        suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
        suite.set("time", "0.000")
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render(report: FleetReport, fmt: str, verbose: bool = False) -> str:
    """The report as text in `fmt` (console: plain, no colour codes)."""
    if fmt == "json":
        return render_json(report)
    if fmt == "markdown":
        return render_markdown(report, verbose)
    if fmt == "github":
        return render_github(report)
    if fmt == "junit":
        return render_junit(report)
    import io

    from envdoctor.render.console import make_console

    buffer = io.StringIO()
    render_console(report, make_console(buffer, no_color=True, plain=True), verbose)
    return buffer.getvalue()
