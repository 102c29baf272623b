"""`why`: explain a pasted error, traceback or log with this machine's facts (see envdoctor/why.py).

Input: FILE, or standard input when FILE is `-` or absent and stdin is not a terminal. What is read
is bounded: a log's beginning and its end (where the error usually is), never all of a huge file;
a binary or empty input is one clear line and exit 2; bytes that are not UTF-8 are replaced, and
the report says so. Every secret the text carries is masked in every output.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from typing import BinaryIO, Optional

import typer

from envdoctor.cli import shared
from envdoctor.util.records import record

HEAD_BYTES = 64 * 1024  # the start of a log: the command that ran, the versions it printed
TAIL_BYTES = 960 * 1024  # its end: where the traceback and the error are
STREAM_LIMIT = 256 * 1024 * 1024  # stdin read past this is not read at all (a runaway pipe)
_CHUNK = 1024 * 1024


class WhyFormat(str, Enum):
    console = "console"
    json = "json"
    markdown = "markdown"


@record
class Pasted:
    text: str
    read_bytes: int  # how much of the input there was (as far as it was read)
    truncated: bool  # parts of it were left out
    source: str  # "stdin" or the file's name
    not_utf8: bool = False


def _bounded(stream: BinaryIO, size: int | None) -> tuple[bytes, int, bool]:
    """(bytes kept, bytes seen, cut): the head and the tail of what `stream` holds."""
    if size is not None and size > HEAD_BYTES + TAIL_BYTES:  # a regular file: seek, do not read it all
        head = stream.read(HEAD_BYTES)
        stream.seek(size - TAIL_BYTES)
        return head + b"\n...\n" + stream.read(TAIL_BYTES), size, True
    head = stream.read(HEAD_BYTES)
    tail = b""
    seen = len(head)
    while seen < STREAM_LIMIT:
        chunk = stream.read(_CHUNK)
        if not chunk:
            return head + tail, seen, seen > len(head) + len(tail)
        seen += len(chunk)
        tail = (tail + chunk)[-TAIL_BYTES:]
    return head + b"\n...\n" + tail, seen, True


def read_pasted(file: str | None) -> Pasted:
    """The text to explain, or one line and exit 2."""
    if file is None or file == "-":
        if file is None and sys.stdin is not None and sys.stdin.isatty():
            shared.fail(
                "nothing to explain: paste the error on standard input (`envdoctor why -`) or name a FILE"
            )
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:
            shared.fail("nothing to explain: standard input is closed; name a FILE")
        data, seen, cut = _bounded(stream, None)
        source = "stdin"
    else:
        source = file
        try:
            if os.path.isdir(file):
                shared.fail(f"{file}: is a folder; expected a file with the error, traceback or log")
            with open(file, "rb") as handle:
                try:
                    size: int | None = os.fstat(handle.fileno()).st_size if handle.seekable() else None
                except OSError:
                    size = None
                data, seen, cut = _bounded(handle, size or None)
        except FileNotFoundError:
            shared.fail(f"{file}: no such file; expected a file with the error, traceback or log")
        except OSError as exc:
            shared.fail(f"{file}: cannot be read ({exc.strerror or exc})")
    if b"\x00" in data:
        shared.fail(f"{source}: not text (it holds NUL bytes); expected an error message, traceback or log")
    try:
        text, not_utf8 = data.decode("utf-8"), False
    except UnicodeDecodeError:
        text, not_utf8 = data.decode("utf-8", errors="replace"), True
    if not text.strip():
        shared.fail(f"{source}: nothing to explain: it is empty")
    return Pasted(text, seen, cut, source, not_utf8)


def why(
    file: Optional[str] = typer.Argument(
        None, metavar="[FILE]", help="The error, traceback or log to explain; - or nothing: standard input."
    ),
    fmt: WhyFormat = typer.Option(
        WhyFormat.console,
        "--format",
        "-f",
        metavar="FORMAT",
        help="console, json (check's schema, with what supports each finding) or markdown.",
        case_sensitive=False,
    ),
    python: Optional[str] = typer.Option(
        None, "--python", help="The interpreter to examine (see `check`).", metavar="PYTHON"
    ),
    from_snapshot: Optional[str] = typer.Option(
        None, "--from", metavar="SNAPSHOT", help="Explain with a snapshot's facts instead of this machine's."
    ),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds the check may take.", metavar="SECONDS"),
    no_smoke: bool = typer.Option(False, "--no-smoke", help="Skip the smoke test."),
    offline: bool = typer.Option(False, "--offline", help=shared.OFFLINE_HELP),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show the facts behind each area."),
    output: Optional[str] = typer.Option(
        None, "--output", "-o", help="Write the report to FILE.", metavar="FILE"
    ),
) -> None:
    from envdoctor.cli.options import ReportFormat, emit, settings_for
    from envdoctor.engine import judge, selected_probes
    from envdoctor.rules.evidence import gather
    from envdoctor.util.redact import learn
    from envdoctor.why import explain

    shared.check_timeout(timeout)
    if from_snapshot is not None and (python is not None or no_smoke):
        shared.fail("--from cannot be combined with --python or --no-smoke: a snapshot already holds them")
    pasted = read_pasted(file)
    learn(pasted.text)  # what the text's credentials are, so that no output shows them
    settings = settings_for({}, shared.fail)
    if from_snapshot is not None:
        from envdoctor.snapshot import SnapshotError, load

        try:
            snap = load(from_snapshot)
        except SnapshotError as exc:
            shared.fail(str(exc))
        platform, interpreter, probes = snap.platform, snap.interpreter, snap.probes
        source = from_snapshot
    else:
        platform, interpreter, probes = shared.live_report_inputs(
            python, timeout, fmt, selected_probes(settings), smoke=not no_smoke, offline=offline
        )
        source = "live"
    report = judge(platform, interpreter, probes, settings, source=source, pasted=pasted.text)
    report = explain(
        report,
        gather(probes, pasted.text),
        read_bytes=pasted.read_bytes,
        truncated=pasted.truncated,
        source=pasted.source,
    )
    if pasted.truncated or pasted.not_utf8:
        said = []
        if pasted.truncated:
            said.append(f"read the first {HEAD_BYTES // 1024} KiB and the last {TAIL_BYTES // 1024} KiB")
        if pasted.not_utf8:
            said.append("bytes that are not UTF-8 were replaced")
        sys.stderr.write(f"envdoctor: note: {pasted.source}: {'; '.join(said)}\n")
    emit(report, ReportFormat(fmt.value), verbose, output, shared.write)
    raise typer.Exit(report.exit_code)
