"""The human report, flutter-doctor style: one line per area, then findings with fixes, then a summary."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from envdoctor.model import Finding, Report, Severity
from envdoctor.redact import redact
from envdoctor.serde import to_data

_MARKS = {
    Severity.OK: ("✓", "green"),
    Severity.INFO: ("✓", "green"),
    Severity.WARNING: ("!", "yellow"),
    Severity.ERROR: ("✗", "red"),
}
_ASCII_MARKS = {"✓": "OK", "!": "!", "✗": "X", "·": "-", "—": "-", "$": "$"}
_FINDING_MARKS = {
    Severity.INFO: ("i", "cyan"),
    Severity.WARNING: ("!", "yellow"),
    Severity.ERROR: ("✗", "red"),
    Severity.OK: ("✓", "green"),
}


def make_console(
    file: Any = None, *, width: int | None = None, no_color: bool = False, plain: bool = False
) -> Console:
    """`plain`: no control codes at all, even where FORCE_COLOR asks for them (files, CI logs)."""
    # soft_wrap: commands must stay on one line to be copy-pasteable.
    return Console(
        file=file,
        soft_wrap=True,
        width=width,
        no_color=no_color or None,
        highlight=False,
        force_terminal=False if plain else None,
    )


class _Glyphs:
    def __init__(self, console: Console) -> None:
        encoding = (console.encoding or "utf-8").lower()
        try:
            "✓✗—·".encode(encoding)
            self.unicode = True
        except (UnicodeEncodeError, LookupError):
            self.unicode = False

    def __call__(self, glyph: str) -> str:
        return glyph if self.unicode else _ASCII_MARKS.get(glyph, glyph)

    def line(self, text: str) -> str:
        """`text` with every mark this console cannot print replaced by its ASCII form."""
        if self.unicode:
            return text
        for mark, plain in _ASCII_MARKS.items():
            text = text.replace(mark, plain)
        return text


_MAX_ITEMS = 12  # entries of one list shown under -v; the JSON report has them all
_MAX_TEXT = 160


def _fact_lines(facts: object) -> list[str]:
    """Facts as "key: value" lines; nested records become dotted keys, so -v stays readable."""
    lines: list[str] = []
    _flatten(to_data(facts), "", lines)
    return lines


def _flatten(value: object, key: str, lines: list[str]) -> None:
    if value in (None, "", [], {}):
        return
    if isinstance(value, dict):
        for name, item in value.items():
            _flatten(item, f"{key}.{name}" if key else str(name), lines)
        return
    if isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value):
        for index, item in enumerate(value[:_MAX_ITEMS]):
            _flatten(item, f"{key}[{index}]", lines)
        if len(value) > _MAX_ITEMS:
            lines.append(f"{key}: ... {len(value) - _MAX_ITEMS} more")
        return
    text = ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)
    text = text.replace("\n", " ")
    lines.append(f"{key}: {text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + '...'}")


def _consequence(console: Console, glyph: _Glyphs, finding: Finding, verbose: bool) -> None:
    """A finding folded under its root cause: one line, its details only with -v."""
    mark, style = _FINDING_MARKS[finding.severity]
    console.print(
        Text.assemble(
            ("       ", ""),
            (glyph(mark), style),
            (f" {finding.code} ", "bold"),
            finding.title,
            (f"  [{finding.name}]", "dim"),
        )
    )
    if verbose:
        for line in finding.detail.splitlines():
            console.print(Text("         " + line, style="dim"))


def _finding(console: Console, glyph: _Glyphs, finding: Finding, verbose: bool) -> None:
    mark, style = _FINDING_MARKS[finding.severity]
    console.print(
        Text.assemble(
            (f" {glyph(mark)} ", style),
            (f"{finding.code} ", "bold"),
            (finding.title, "bold"),
            (f"  [{finding.name}]", "dim"),
        )
    )
    for line in finding.detail.splitlines():
        console.print(Text("     " + line))
    if verbose:
        for item in finding.evidence:
            console.print(Text(f"     evidence: {item}", style="dim"))
    for number, fix in enumerate(finding.fixes):
        lead = "Fix" if number == 0 else "Or"
        console.print(Text.assemble(("     " + lead + ": ", "bold"), fix.summary))
        for command in fix.commands:
            console.print(Text.assemble("       ", ("$ ", "dim"), (command, "cyan")))
        if fix.link:
            console.print(Text(f"       see {fix.link}", style="dim"))


def render_console(report: Report, console: Console, verbose: bool = False) -> None:
    report = redact(report)
    glyph = _Glyphs(console)
    source = "" if report.source == "live" else f" (from snapshot {report.source})"
    console.print(
        Text.assemble(
            (f"envdoctor {report.envdoctor_version}", "bold"),
            f" {glyph('·')} examined {report.interpreter.path} {glyph('—')} {report.interpreter.reason}",
            source,
        )
    )
    console.print()
    facts_by_probe = {p.probe: p.facts for p in report.probes}
    for area in report.areas:
        mark, style = _MARKS[area.severity]
        console.print(
            Text.assemble(
                ("[", "bold"),
                (glyph(mark), f"bold {style}"),
                ("] ", "bold"),
                (area.title, "bold"),
                f" {glyph('—')} {area.verdict}",
            )
        )
        for line in area.details:
            detail = Text("    " + glyph.line(line))
            detail.highlight_regex(r"✓|(?<= )OK(?= )", "green")
            detail.highlight_regex(r"✗|(?<= )X(?= )", "red")
            console.print(detail)
        facts = facts_by_probe.get(area.area)
        if verbose and facts is not None:
            for line in _fact_lines(facts):
                console.print(Text(f"    {glyph('·')} {line}", style="dim"))
    if report.findings:
        console.print()
        console.print(Text("Findings", style="bold underline"))
        for finding in report.primary:
            _finding(console, glyph, finding, verbose)
            consequences = report.consequences(finding)
            if consequences:
                console.print(Text("     Caused by this (fixed by the fix above):", style="bold"))
                for consequence in consequences:
                    _consequence(console, glyph, consequence, verbose)
            console.print()
    else:
        console.print()
    console.print(_summary(report, glyph))


def _summary(report: Report, glyph: _Glyphs) -> Text:
    counts = {s: sum(1 for f in report.primary if f.severity is s) for s in Severity}
    folded = len(report.findings) - len(report.primary)
    parts = []
    for severity, word in ((Severity.ERROR, "error"), (Severity.WARNING, "warning")):
        if counts[severity]:
            parts.append(f"{counts[severity]} {word}{'s' if counts[severity] != 1 else ''}")
    if counts[Severity.INFO]:
        parts.append(f"{counts[Severity.INFO]} note{'s' if counts[Severity.INFO] != 1 else ''}")
    code = report.exit_code
    if code == 0 and not (counts[Severity.ERROR] or counts[Severity.WARNING]):
        head, style = f"{glyph('✓')} No problems found", "bold green"
    elif code == 0:
        head, style = f"{glyph('!')} Works, with warnings", "bold yellow"
    else:
        head, style = f"{glyph('✗')} Problems found", "bold red"
    if folded:
        parts.append(f"{folded} consequence{'s' if folded != 1 else ''} folded in")
    tail = f" ({', '.join(parts)})" if parts else ""
    return Text.assemble((head, style), tail, f" {glyph('—')} exit {code}")
