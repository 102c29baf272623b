"""The human report, flutter-doctor style: one line per area, then findings with fixes, then a summary."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from envdoctor.model.findings import Finding, Report, Severity
from envdoctor.render.plugin_words import plugins_line
from envdoctor.render.why_words import REPORT_LEAD, SUPPORT_WORDS, header
from envdoctor.util.redact import redact
from envdoctor.util.serde import to_data
from envdoctor.util.words import in_words

_MARKS = {
    Severity.OK: ("✓", "green"),
    Severity.INFO: ("i", "cyan"),  # something to know, not a check that passed
    Severity.WARNING: ("!", "yellow"),
    Severity.ERROR: ("✗", "red"),
}
_ASCII_MARKS = {"✓": "OK", "!": "!", "✗": "X", "·": "-", "—": "-", "$": "$"}
FINDING_MARKS = {
    Severity.INFO: ("i", "cyan"),
    Severity.WARNING: ("!", "yellow"),
    Severity.ERROR: ("✗", "red"),
    Severity.OK: ("✓", "green"),
}


def wraps(console: Console, environ: Mapping[str, str]) -> bool:
    """Whether the report is wrapped to the console's width: on a terminal, or where COLUMNS says
    how wide the reader is; a pipe or file gets whole lines (grep, diff and editors wrap them)."""
    return console.is_terminal or bool(environ.get("COLUMNS", "").strip())


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


class Glyphs:
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
_INDENT = "  "


def _fact_lines(facts: object) -> list[str]:
    """Facts as "name: value" lines in words and units: a nested record becomes a heading with its
    fields indented below it (never dotted keys), sizes read in GiB/MiB, times in ms/s, yes/no."""
    lines: list[str] = []
    _readable(to_data(facts), "", 0, lines)
    return lines


def _words(key: str) -> str:
    for suffix in ("_bytes", "_seconds"):
        if key.endswith(suffix) and key != suffix[1:]:
            key = key[: -len(suffix)]
    return key.replace("_", " ")


def _value(key: str, value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)) and (key.endswith("_bytes") or key == "bytes"):
        return _size(float(value))
    if isinstance(value, (int, float)) and (
        key.endswith(("_seconds", "seconds", "timeout")) or key in ("time_per_iter",)
    ):
        return _duration(float(value))
    if isinstance(value, float):
        return f"{value:.3g}"  # a measurement, not 15 digits of float noise
    return str(value)


def _size(count: float) -> str:
    for unit, scale in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(count) >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:.0f} bytes"


def _duration(seconds: float) -> str:
    if abs(seconds) >= 1:
        return f"{seconds:.2f} s"
    return f"{seconds * 1000:.3g} ms" if abs(seconds) >= 0.001 else f"{seconds * 1000:.2g} ms"


def _readable(value: object, key: str, depth: int, lines: list[str]) -> None:
    if value in (None, "", [], {}):
        return
    pad = _INDENT * depth
    if isinstance(value, dict):
        if key:
            lines.append(f"{pad}{_words(key)}:")
            depth += 1
        for name, item in value.items():
            _readable(item, str(name), depth, lines)
        return
    if isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value):
        for number, item in enumerate(value[:_MAX_ITEMS], start=1):
            _readable(item, f"{key} #{number}" if isinstance(item, dict) else key, depth, lines)
        if len(value) > _MAX_ITEMS:
            lines.append(f"{pad}{_words(key)}: ... {len(value) - _MAX_ITEMS} more")
        return
    text = ", ".join(_value(key, v) for v in value) if isinstance(value, list) else _value(key, value)
    text = text.replace("\n", " ")
    lines.append(f"{pad}{_words(key)}: {text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + '...'}")


class Printer:
    """Prints lines, wrapped to the console's width with a hanging indent when `wrap` is on (a
    terminal): words are never split, continuation lines start under the text, not the mark.
    Commands and links are never wrapped (`raw`): they must stay copy-pasteable."""

    def __init__(self, console: Console, wrap: bool) -> None:
        self.console = console
        self.wrap = wrap

    def line(self, text: Text, hang: int = 0) -> None:
        """`text`; its lines after the first (when wrapped) indented by `hang` cells."""
        width = self.console.width
        if not self.wrap or text.cell_len <= width:
            self.console.print(text)
            return
        hang = min(hang, width // 2)  # a very narrow console still shows some text per line
        lead = text[:hang]  # the mark or indentation, and what follows it up to the hang
        body = text[hang:]
        for number, piece in enumerate(body.divide(_breaks(body.plain, width - hang))):
            piece.rstrip()
            self.console.print(Text.assemble(lead if number == 0 else " " * hang, piece))

    def raw(self, text: Text) -> None:
        self.console.print(text)

    def blank(self) -> None:
        self.console.print()


_WORD = re.compile(r"\s*\S+\s*")


def _breaks(plain: str, width: int) -> list[int]:
    """Where to break `plain` into lines of at most `width` cells: before a word that would pass
    the width. A word wider than `width` (a long path) stays whole on its own line."""
    breaks: list[int] = []
    used = 0
    for match in _WORD.finditer(plain):
        start, word = match.start(), match.group(0)
        if used and used + cell_len(word.rstrip()) > width:
            breaks.append(start)
            used = 0
        used += cell_len(word)
    return breaks


def _hang(line: str, extra: int = 2) -> int:
    """The hanging indent of a preformatted line: its own indentation and `extra` more."""
    return len(line) - len(line.lstrip(" ")) + extra


def _consequence(out: Printer, glyph: Glyphs, finding: Finding, verbose: bool) -> None:
    """A finding folded under its root cause: one line, its details only with -v."""
    mark, style = FINDING_MARKS[finding.severity]
    out.line(
        Text.assemble(
            ("       ", ""),
            (glyph(mark), style),
            (f" {finding.code} ", "bold"),
            finding.title,
            (f"  [{finding.name}]", "dim"),
        ),
        hang=9,
    )
    if verbose:
        for line in finding.detail.splitlines():
            out.line(Text("         " + line, style="dim"), hang=_hang("         " + line))


def finding_block(out: Printer, glyph: Glyphs, finding: Finding, verbose: bool) -> None:
    mark, style = FINDING_MARKS[finding.severity]
    out.line(
        Text.assemble(
            (f" {glyph(mark)} ", style),
            (f"{finding.code} ", "bold"),
            (finding.title, "bold"),
            (f"  [{finding.name}]", "dim"),
        ),
        hang=5,
    )
    if finding.support is not None:
        out.line(Text(f"     ({SUPPORT_WORDS[finding.support.value]})", style="dim"), hang=6)
    for line in finding.detail.splitlines():  # paragraphs: continued under their first word
        out.line(Text("     " + line), hang=_hang("     " + line, 0))
    if verbose:
        for item in finding.evidence:
            out.line(Text(f"     evidence: {item}", style="dim"), hang=7)
    for number, fix in enumerate(finding.fixes):
        lead = "Fix" if number == 0 else "Or"
        out.line(Text.assemble(("     " + lead + ": ", "bold"), in_words(fix.summary)), hang=7)
        for command in fix.commands:
            out.raw(Text.assemble("       ", ("$ ", "dim"), (command, "cyan")))
        if fix.link:
            out.raw(Text(f"       see {fix.link}", style="dim"))


def render_console(report: Report, console: Console, verbose: bool = False, wrap: bool = False) -> None:
    """The report on `console`; `wrap`: fold long lines to its width (a terminal's)."""
    report = redact(report)
    glyph = Glyphs(console)
    out = Printer(console, wrap)
    source = "" if report.source == "live" else f" (from snapshot {report.source})"
    out.line(
        Text.assemble(
            (f"envdoctor {report.envdoctor_version}", "bold"),
            f" {glyph('·')} examined {report.interpreter.path} {glyph('—')} {report.interpreter.reason}",
            source,
        ),
        hang=2,
    )
    if report.plugins:
        told = plugins_line((p.package, p.version, p.rules, p.probes, p.error) for p in report.plugins)
        out.line(Text(f"  plugins: {told}", style="dim"), hang=4)
    out.blank()
    if report.explained is not None:
        for line in why_header(report):
            out.line(Text(line, style="bold"), hang=2)
        out.blank()
    facts_by_probe = {p.probe: p.facts for p in report.probes}
    for area in report.areas:
        mark, style = _MARKS[area.severity]
        if area.severity is Severity.OK and area.verdict.startswith("not applicable"):
            mark, style = "-", "dim"  # nothing was checked here: not a check that passed
        out.line(
            Text.assemble(
                ("[", "bold"),
                (glyph(mark), f"bold {style}"),
                ("] ", "bold"),
                (area.title, "bold"),
                f" {glyph('—')} {area.verdict}",
            ),
            hang=4,
        )
        for line in area.details:
            detail = Text("    " + glyph.line(line))
            detail.highlight_regex(r"✓|(?<= )OK(?= )", "green")
            detail.highlight_regex(r"✗|(?<= )X(?= )", "red")
            out.line(detail, hang=_hang(detail.plain))
        facts = facts_by_probe.get(area.area)
        if verbose and facts is not None:
            for line in _fact_lines(facts):
                nested = line.startswith(_INDENT)
                text = f"      {line}" if nested else f"    {glyph('·')} {line}"
                out.line(Text(glyph.line(text), style="dim"), hang=_hang(text, 4 if nested else 6))
    if report.findings:
        out.blank()
        out.line(Text("Findings", style="bold underline"))
        for finding in report.primary:
            finding_block(out, glyph, finding, verbose)
            consequences = report.consequences(finding)
            if consequences:
                out.line(Text("     Caused by this (fixed by the fix above):", style="bold"), hang=5)
                for consequence in consequences:
                    _consequence(out, glyph, consequence, verbose)
            out.blank()
    else:
        out.blank()
    if report.explained is not None and not report.explained.known:
        for line in unknown_error_block(report):
            out.line(Text(line), hang=4)
        out.blank()
    out.line(_summary(report, glyph), hang=2)


def why_header(report: Report) -> list[str]:
    """What `envdoctor why` read and what it recognised, in words."""
    told = report.explained
    assert told is not None
    return [header(told.known, told.signatures, told.read_bytes, told.truncated, told.input)]


def unknown_error_block(report: Report) -> list[str]:
    """The environment rows a bug report needs, for an error envdoctor does not know."""
    from envdoctor.render.json_report import report_to_data
    from envdoctor.render.markdown import environment_rows

    rows = environment_rows(report_to_data(report))
    lines = [REPORT_LEAD]
    lines += [f"    {key}: {value}" for key, value in rows]
    return lines


def _summary(report: Report, glyph: Glyphs) -> Text:
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
