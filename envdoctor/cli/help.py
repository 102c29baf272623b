"""The help texts of the command line, and the root `--help` page drawn without typer or rich.

`envdoctor --help` is the first thing a user runs, and importing typer and rich alone takes longer
than the whole page may (issue: start-up <= 100 ms). So the texts live here, typer's app in cli.py
is built from them, and `page` draws the root page exactly as typer's rich formatter does: the same
wrapping (rich's divide_line), boxes, columns, highlighting and escape codes. tests/test_cli_help.py
holds the two outputs equal at every width from MIN_WIDTH up, with and without colour. Where this
page cannot be sure to match (a narrow or Windows console, NO_COLOR, TERM=dumb, forced or unusual
terminal settings), `decide` says so and the launcher leaves the page to typer.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence

ROOT_HELP = (
    "Tells whether PyTorch will really work on this machine, why not, and the command that "
    "fixes it.\n\nExit codes: 0 healthy (warnings allowed unless --strict), 1 problems found, "
    "2 envdoctor could not run as asked."
)
VERSION_HELP = "Print the version."
HELP_HELP = "Show this message and exit."  # click's own text for --help
# typer's texts for its shell-completion options (add_completion=True).
INSTALL_COMPLETION_HELP = "Install completion for the current shell."
SHOW_COMPLETION_HELP = "Show completion for the current shell, to copy it or customize the installation."

# Each command's help as typer shows it under `envdoctor COMMAND --help`; the root page shows the
# first paragraph. The order is the order of the root page.
COMMAND_HELP: dict[str, str] = {
    "check": "Examine this machine (or a snapshot) and report what stops PyTorch from working.",
    "why": "Explain a pasted error, traceback or log with this machine's facts: the findings that "
    "explain it first, and what tells each cause apart.\n\nReads FILE, or standard input when FILE is - "
    "or absent (`pip install ... 2>&1 | envdoctor why`). Exit codes as `check`: 0 healthy, 1 problems "
    "found, 2 bad input (empty, binary, unreadable) or options.",
    "snapshot": "Record what the probes see here (credentials redacted), to diagnose elsewhere with --from.",
    "report": "Print a Markdown block to paste into a bug report: every probe's facts and the findings, "
    "with credentials, user names in paths and GPU UUIDs masked.",
    "rules": "List every rule: code, name, severity and what it checks.",
    "explain": "Print a rule's documentation: what it checks, why it matters, how to fix it.",
    "validate": "Check the project's expectations (envdoctor.toml, the tool.envdoctor table of "
    "pyproject.toml) without running the check: unknown keys and values that do not parse, one line "
    "each (the pre-commit hook).\n\nExit codes: 0 valid, 1 a file is not, 2 bad usage.",
    "install": "Print the pinned pip/uv/conda command that installs a working torch here (or on a "
    "described machine).\n\nExit codes: 0 a command was found, 1 no build fits (the output says what "
    "to change), 2 bad options.",
    "update": "Refresh envdoctor's release data from the package indexes into an overlay in your cache "
    "folder.\n\nReads PyTorch's per-variant wheel pages and the default index (pip's configured index, "
    "else pip's default); `check` and `install` then know the newer releases. What an index cannot tell "
    "(GPU arch lists, minimum drivers) is carried forward from the nearest known build, marked assumed."
    "\n\nExit codes: 0 every page read, 1 a partial update (some pages not read: what the overlay knew "
    "from them is kept), 2 nothing could be read, or bad options.",
    "fix": "Apply the install fixes of the current findings to the examined interpreter: show the "
    "commands and package changes, ask, record what is installed, run them, check again, and restore "
    "if it got worse.\n\nExit codes: 0 fixed, 1 not fixed (the output says why), 2 bad usage, "
    "130 interrupted.",
    "fleet": "Diagnose many nodes' snapshots at once: nodes grouped by stack, skew between them, failing "
    "nodes.\n\nSnapshots come from `envdoctor snapshot -o snaps/NODE.json` on each node (srun, a "
    "DaemonSet, ...). Exit codes as `check`: 0 healthy, 1 problems found, 2 bad options or no "
    "snapshot at all.",
    "cluster": "Check a whole multi-node job, started by its own launcher on every node.\n\n"
    "torchrun --nnodes N --nproc-per-node G -m envdoctor cluster; srun python -m envdoctor cluster;\n"
    "mpirun -x MASTER_ADDR -x MASTER_PORT python -m envdoctor cluster; or any launcher that sets "
    "RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT. One process per node runs the node's check; every "
    "rank joins a process group (NCCL, else gloo), exchanges its node's snapshot through the "
    "rendezvous store and runs an all-reduce. Rank 0 prints the fleet report; every rank exits with "
    "its code (0 healthy, 1 problems found, 2 envdoctor could not run as asked).",
}

# Below this width rich shrinks the option column (30 cells with --install-completion) and
# redistributes the rest; typer draws such pages.
MIN_WIDTH = 53


# --- styled text: the small part of rich this page needs ----------------------------------------

# (bold, dim, colour SGR code or 0). Rich writes the attributes before the colour: "1;2;36".
Style = tuple[bool, bool, int]
PLAIN: Style = (False, False, 0)
BOLD: Style = (True, False, 0)
DIM: Style = (False, True, 0)
_YELLOW, _GREEN, _CYAN = 33, 32, 36

# typer's OptionHighlighter: its patterns in order, and its theme's style for each group.
_HIGHLIGHTS = (
    re.compile(r"(^|\W)(?P<switch>\-\w+)(?![a-zA-Z0-9])"),
    re.compile(r"(^|\W)(?P<option>\-\-[\w\-]+)(?![a-zA-Z0-9])"),
    re.compile(r"(?P<types>\<[^\>]+\>)"),
    re.compile(r"(?P<usage>Usage: )"),
)
_THEME: dict[str, Style] = {
    "switch": (True, False, _GREEN),
    "option": (True, False, _CYAN),
    "types": (True, False, _YELLOW),
    "usage": (False, False, _YELLOW),
}


def _combine(under: Style, over: Style) -> Style:
    return (under[0] or over[0], under[1] or over[1], over[2] or under[2])


# Plain classes, not dataclasses: importing dataclasses (it imports inspect) would cost a quarter
# of what this whole page takes.
class _Span:
    __slots__ = ("end", "start", "style")

    def __init__(self, start: int, end: int, style: Style) -> None:
        self.start, self.end, self.style = start, end, style


class _Text:
    """Rich's Text: characters, a base style and styled spans (later spans win)."""

    __slots__ = ("base", "plain", "spans")

    def __init__(self, plain: str, base: Style = PLAIN, spans: tuple[_Span, ...] = ()) -> None:
        self.plain, self.base, self.spans = plain, base, spans

    def segments(self) -> Iterator[tuple[str, Style]]:
        """As rich renders it: one piece between any two span edges, even where styles agree."""
        edges = sorted({0, len(self.plain), *(s.start for s in self.spans), *(s.end for s in self.spans)})
        for start, end in zip(edges, edges[1:]):
            style = self.base
            for span in self.spans:
                if span.start <= start and end <= span.end:
                    style = _combine(style, span.style)
            yield self.plain[start:end], style

    def cut(self, start: int, end: int) -> _Text:
        spans = tuple(
            _Span(max(s.start, start) - start, min(s.end, end) - start, s.style)
            for s in self.spans
            if s.start < end and s.end > start
        )
        return _Text(self.plain[start:end], self.base, spans)


def _highlight(text: str, base: Style = PLAIN) -> _Text:
    spans = []
    for pattern in _HIGHLIGHTS:
        for match in pattern.finditer(text):
            for name, value in match.groupdict().items():
                start, end = match.span(name)
                if name in _THEME and value and end > start:
                    spans.append(_Span(start, end, _THEME[name]))
    return _Text(text, base, tuple(spans))


_WORD = re.compile(r"\s*\S+\s*")


def _wrap(text: _Text, width: int) -> list[_Text]:
    """rich's Text.wrap for left-justified text without folding needs (words fit the width)."""
    lines: list[_Text] = []
    offset = 0
    for part in text.plain.split("\n"):
        line = text.cut(offset, offset + len(part))
        offset += len(part) + 1
        breaks: list[int] = []
        used = 0
        for match in _WORD.finditer(part):
            start, word = match.start(), match.group(0)
            if width - used >= len(word.rstrip()):
                used += len(word)
            elif start:  # callers keep every word narrower than the width
                breaks.append(start)
                used = len(word)
        for start, end in zip([0, *breaks], [*breaks, len(part)]):
            piece = line.cut(start, end)
            excess = len(piece.plain) - width  # rich drops trailing spaces beyond the width only
            if excess > 0:
                spaces = len(piece.plain) - len(piece.plain.rstrip())
                piece = piece.cut(0, len(piece.plain) - min(spaces, excess))
            lines.append(piece)
    return lines


# --- the page ---------------------------------------------------------------------------------


class Console:
    """What the page is drawn for: the width in cells and whether escape codes are written."""

    __slots__ = ("styled", "width")

    def __init__(self, width: int, styled: bool) -> None:
        self.width, self.styled = width, styled

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Console) and (self.width, self.styled) == (other.width, other.styled)

    def __hash__(self) -> int:
        return hash((self.width, self.styled))

    def __repr__(self) -> str:
        return f"Console(width={self.width}, styled={self.styled})"


_Line = list[tuple[str, Style]]


def _emit(line: _Line, styled: bool) -> str:
    if not styled:
        return "".join(text for text, _ in line)
    out = []
    for text, (bold, dim, colour) in line:
        codes = [c for c, on in (("1", bold), ("2", dim), (str(colour), bool(colour))) if on]
        out.append(f"\x1b[{';'.join(codes)}m{text}\x1b[0m" if codes else text)
    return "".join(out)


def _padded(text: _Text, width: int, under: Style = PLAIN) -> _Line:
    """A wrapped line as its segments, padded to `width` with one more segment."""
    line: _Line = [(piece, _combine(under, style)) for piece, style in text.segments() if piece]
    pad = width - len(text.plain)
    return [*line, (" " * pad, under)] if pad > 0 else line


def _panel(title: str, rows: Sequence[_Line], width: int) -> list[_Line]:
    top = [("╭─", DIM), (f" {title} ", DIM), ("─" * (width - len(title) - 6), DIM), ("─╮", DIM)]
    body = [[("│", DIM), (" ", PLAIN), *row, (" ", PLAIN), ("│", DIM)] for row in rows]
    return [top, *body, [("╰" + "─" * (width - 2) + "╯", DIM)]]


def _help_lines(text: _Text, width: int) -> list[_Line]:
    return [_padded(line, width) for line in _wrap(text, width)]


def first_paragraph(text: str) -> str:
    return text.split("\n\n")[0].strip()


def _usage(prog: str, width: int) -> list[_Line]:
    """click's usage line in a bold block with a blank line above and below."""
    usage = _highlight(f"Usage: {prog} [OPTIONS] COMMAND [ARGS]...")
    blank: _Line = [(" " * width, BOLD)]
    lines = [[(" ", BOLD), *_padded(line, width - 2, BOLD), (" ", BOLD)] for line in _wrap(usage, width - 2)]
    return [blank, *lines, blank]


def _description(width: int) -> list[_Line]:
    """The app's help: the first paragraph as is, the others dim, and a blank line."""
    first, rest = ROOT_HELP.split("\n\n", 1)
    lines: list[_Line] = []
    for text in (_highlight(first.replace("\n", " ")), _Text(""), _highlight(rest, DIM)):
        lines += [[(" ", PLAIN), *_padded(line, width - 2), (" ", PLAIN)] for line in _wrap(text, width - 2)]
    return [*lines, [(" " * width, PLAIN)]]


def _options(width: int) -> list[_Line]:
    options = (
        ("--version", VERSION_HELP),
        ("--install-completion", INSTALL_COMPLETION_HELP),
        ("--show-completion", SHOW_COMPLETION_HELP),
        ("--help", HELP_HELP),
    )
    name_width = max(len(name) for name, _ in options)
    # typer's option table keeps four empty columns (short names, negations, types) after the
    # names: with the columns' padding, the help starts 10 cells after the longest name.
    column = name_width + 10
    rows: list[_Line] = []
    for name, text in options:
        for index, help_line in enumerate(_help_lines(_highlight(text), width - 4 - column)):
            cell = _padded(_highlight(name), column) if index == 0 else [(" " * column, PLAIN)]
            rows.append([*cell, *help_line])
    return _panel("Options", rows, width)


def _commands(width: int) -> list[_Line]:
    name_width = max(len(name) for name in COMMAND_HELP)
    cyan: Style = (True, False, _CYAN)
    rows: list[_Line] = []
    for name, text in COMMAND_HELP.items():
        help_text = _highlight(first_paragraph(text))
        for index, help_line in enumerate(_help_lines(help_text, width - 4 - name_width - 2)):
            # The first column is bold cyan, its padding too; a continuation line is one blank piece.
            cell: _Line = [(name.ljust(name_width), cyan), (" ", cyan)]
            if index:
                cell = [(" " * (name_width + 1), cyan)]
            rows.append([*cell, (" ", PLAIN), *help_line])
    return _panel("Commands", rows, width)


def page(prog: str, console: Console) -> str:
    """The root `--help` page, as typer's rich formatter draws it (typer 0.28, rich 15)."""
    width = console.width
    lines = [*_usage(prog, width), *_description(width), *_options(width), *_commands(width)]
    return "".join(_emit(line, console.styled) + "\n" for line in lines) + "\n"


# --- when this page is the one typer would draw ----------------------------------------------

# Variables that change how typer or rich draw, beyond what `decide` handles: with any of them set,
# typer draws the page.
_UNUSUAL = ("TTY_COMPATIBLE", "TTY_INTERACTIVE", "_TYPER_FORCE_DISABLE_TERMINAL", "JUPYTER_COLUMNS")


def decide(environ: Mapping[str, str], isatty: bool, terminal_width: int | None) -> Console | None:
    """The console typer's rich formatter would draw for, or None where this page may differ.

    `terminal_width` is what the standard streams report (rich asks stdin, stdout, stderr in turn).
    """
    if sys.platform == "win32" or any(name in environ for name in _UNUSUAL):
        return None
    # typer forces a terminal (colour) for these; rich decides from the stream otherwise.
    forced = any(environ.get(name) for name in ("GITHUB_ACTIONS", "FORCE_COLOR", "PY_COLORS"))
    styled = forced or ("FORCE_COLOR" not in environ and isatty)
    term = environ.get("TERM", "")
    if styled and (term.lower() in ("dumb", "unknown") or environ.get("NO_COLOR", "")):
        return None
    width: int | None = None
    for name in ("TERMINAL_WIDTH", "COLUMNS"):  # typer's, then rich's
        value = environ.get(name)
        if value is not None and width is None:
            # ASCII digits only: int() refuses "²" (which isdigit() accepts) and 5,000 digits.
            if not (value.isascii() and value.isdigit() and len(value) <= 6):
                # typer fails on a TERMINAL_WIDTH that is not a number
                if name == "TERMINAL_WIDTH":
                    return None
                continue
            width = int(value)
    if width is None:
        width = terminal_width or 80
    if width < MIN_WIDTH:
        return None
    return Console(width, styled)


def terminal_width() -> int | None:
    for fd in (0, 1, 2):
        try:
            return os.get_terminal_size(fd).columns
        except (AttributeError, ValueError, OSError):
            continue
    return None


def program_name(argv0: str, main_package: str | None) -> str:
    """What click shows after "Usage:": the script's name, or "python -m envdoctor"."""
    if not main_package:
        return os.path.basename(argv0)
    name = os.path.splitext(os.path.basename(argv0))[0]
    module = main_package if name == "__main__" else f"{main_package}.{name}"
    return f"python -m {module.lstrip('.')}"
