"""Running the real command line in-process: argv in, (exit code, stdout, stderr) out.

`run_cli` calls the typer app (cli.main) with pytest's captured streams. `run_entry` calls the
console entry point (launch.main: the lean dispatcher, then the typer app) with stdout and stderr
as a process started with PYTHONIOENCODING=<encoding> and its output piped has them, so that what
a narrow encoding does to every command can be checked without a process per command.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from envdoctor.cli.root import main


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def run_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str) -> Run:
    monkeypatch.setattr(sys, "argv", ["envdoctor", *argv])
    with pytest.raises(SystemExit) as caught:
        main()
    captured = capsys.readouterr()
    code = caught.value.code
    return Run(code if isinstance(code, int) else 0, captured.out, captured.err)


@dataclass(frozen=True)
class EncodedRun:
    """What the pipes of a real process would have received: bytes in the stream's encoding."""

    code: int
    out: bytes
    err: bytes


def piped_stream(encoding: str, errors: str) -> io.TextIOWrapper:
    """A text stream as Python builds sys.stdout/sys.stderr over a pipe: a TextIOWrapper over a
    buffered binary stream (click and rich look through `.buffer`), no terminal, not line-buffered."""
    return io.TextIOWrapper(io.BufferedWriter(io.BytesIO()), encoding=encoding, errors=errors)


def _bytes_of(stream: io.TextIOWrapper) -> bytes:
    stream.flush()
    raw = stream.buffer.raw  # type: ignore[attr-defined]
    assert isinstance(raw, io.BytesIO)
    return raw.getvalue()


def run_entry(
    monkeypatch: pytest.MonkeyPatch,
    *argv: str,
    encoding: str = "utf-8",
    entry_point: Callable[[], None] | None = None,
) -> EncodedRun:
    """`envdoctor ARGV...` through the console entry point in this process, its stdout and stderr
    in `encoding` as PYTHONIOENCODING=<encoding> gives them (stdout strict, stderr backslashreplace,
    both piped). Only the process-wide parts of lifecycle.install are left out (signal handlers
    and the start time); its stdout guard is kept, so the streams are wrapped as in a process.
    `entry_point`: another function to run in its place (cli.main: the typer app alone).
    Not for a live `check`: the entry point starts its torch child early, and only the end of the
    process ends that child (use run_cli, or a real process)."""
    from envdoctor.cli.launch import _NOT_EARLY
    from envdoctor.cli.launch import main as launch_main
    from envdoctor.util import lifecycle

    if entry_point is None and argv[:1] == ("check",):
        options = {a.split("=", 1)[0] for a in argv[1:]}
        assert options & {*_NOT_EARLY, "-h", "--help"}, "a live check would start an early torch child"

    out = piped_stream(encoding, "strict")
    err = piped_stream(encoding, "backslashreplace")
    # Undone on return (the environment the caller set stays): the test's own streams come back.
    with monkeypatch.context() as patch:
        patch.setattr(sys, "stdout", out)
        patch.setattr(sys, "stderr", err)
        patch.setattr(sys, "argv", ["envdoctor", *argv])
        # As the `envdoctor` script's __main__ has it: click names the program after __main__'s
        # package (under pytest: "python -m pytest.envdoctor").
        patch.setattr(sys.modules["__main__"], "__package__", None, raising=False)
        patch.setattr(lifecycle, "install", lifecycle.guard_stdout)
        patch.setattr(lifecycle, "closing", lambda: None)
        with pytest.raises(SystemExit) as caught:
            (entry_point or launch_main)()
    code = caught.value.code
    return EncodedRun(code if isinstance(code, int) else 0, _bytes_of(out), _bytes_of(err))
