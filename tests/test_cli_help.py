"""The root `--help` page drawn without typer is typer's page: every width, colour or not.

cli_help draws the page the launcher prints; typer's app (cli.py) is built from the same texts.
These tests hold the two equal byte for byte, in-process over a range of widths, and end to end in
real processes (a pipe, forced colour, a pseudo-terminal) against typer's own output.
"""

from __future__ import annotations

import functools
import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import typer.main
import typer.rich_utils

from envdoctor.cli.help import COMMAND_HELP, MIN_WIDTH, ROOT_HELP, Console, decide, page, program_name
from envdoctor.cli.root import app
from envdoctor.cli.root import main as cli_main
from tests.cli_support import run_entry


@functools.cache
def _typer_command() -> Any:
    """What `app(...)` builds on every call (typer.main.get_command), built once for the ~80 pages."""
    return typer.main.get_command(app)


def typer_page(prog: str, width: int, styled: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    """typer's page for this console: its width and terminal switches are read at import."""
    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", width)
    monkeypatch.setattr(typer.rich_utils, "FORCE_TERMINAL", styled)
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    _typer_command()(["--help"], prog_name=prog, standalone_mode=False)
    monkeypatch.undo()
    return out.getvalue()


def cases() -> Iterator[tuple[str, int, bool]]:
    for width in range(MIN_WIDTH, 121):
        yield "envdoctor", width, width % 3 == 0  # every width; colour on a third of them
    for width in (MIN_WIDTH, 54, 80, 157, 250):
        yield "python -m envdoctor", width, True  # a switch in the usage line, wrapped when narrow
        yield "python -m envdoctor", width, False


@pytest.mark.parametrize(("prog", "width", "styled"), list(cases()))
def test_the_page_is_typers_page(
    prog: str, width: int, styled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert page(prog, Console(width, styled)) == typer_page(prog, width, styled, monkeypatch)


def test_typer_draws_the_same_texts() -> None:
    """cli.py's app takes its help from cli_help: one source for both pages."""
    import typer.main

    group = typer.main.get_command(app)
    assert group.help == ROOT_HELP
    assert list(group.commands) == list(COMMAND_HELP)  # type: ignore[attr-defined]
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        assert command.help == COMMAND_HELP[name]


@pytest.mark.parametrize(
    ("environ", "isatty", "size", "expected"),
    [
        ({}, False, None, Console(80, False)),  # a pipe: rich's default width, no codes
        ({}, False, 132, Console(132, False)),  # piped, but stdin is a terminal: its width
        ({}, True, 100, Console(100, True)),
        ({"TERM": "xterm-256color", "COLORTERM": "truecolor"}, True, 100, Console(100, True)),
        ({"COLUMNS": "90"}, True, 100, Console(90, True)),
        ({"COLUMNS": "wide"}, False, None, Console(80, False)),  # rich ignores it
        ({"TERMINAL_WIDTH": "120", "COLUMNS": "90"}, False, None, Console(120, False)),  # typer's wins
        ({"FORCE_COLOR": "1"}, False, None, Console(80, True)),
        ({"FORCE_COLOR": ""}, True, 100, Console(100, False)),  # rich: set but empty turns colour off
        ({"PY_COLORS": "1"}, False, None, Console(80, True)),
        ({"GITHUB_ACTIONS": "true"}, False, None, Console(80, True)),
        ({"NO_COLOR": "1"}, False, None, Console(80, False)),  # nothing to strip without colour
        ({"NO_COLOR": "1"}, True, 100, None),  # rich keeps bold and dim: typer draws it
        ({"TERM": "dumb"}, True, 100, None),
        ({"TERMINAL_WIDTH": "x"}, False, None, None),
        ({"TTY_COMPATIBLE": "1"}, False, None, None),
        ({"COLUMNS": str(MIN_WIDTH - 1)}, False, None, None),
    ],
)
def test_decide_follows_typer_and_rich(
    environ: Mapping[str, str], isatty: bool, size: int | None, expected: Console | None
) -> None:
    if sys.platform == "win32":
        expected = None
    assert decide(environ, isatty, size) == expected


def test_program_name_is_clicks() -> None:
    assert program_name("/usr/local/bin/envdoctor", None) == "envdoctor"
    assert program_name("/x/envdoctor/__main__.py", "envdoctor") == "python -m envdoctor"


# --- end to end: the launcher's page next to typer's, in real processes ------------------------------

LEAN = "import sys; sys.argv[0] = 'envdoctor'; from envdoctor.cli.launch import main; main()"
TYPER = "import sys; sys.argv[0] = 'envdoctor'; from envdoctor.cli.root import main; main()"
DROPPED = ("COLUMNS", "LINES", "TERMINAL_WIDTH", "FORCE_COLOR", "PY_COLORS", "GITHUB_ACTIONS", "NO_COLOR")


def _env(extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED and not k.endswith("_COMPLETE")}
    return {**env, **extra}


def _piped(code: str, args: list[str], extra: Mapping[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        env=_env(extra),
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("extra", "args"),
    [
        ({}, ["--help"]),
        ({"FORCE_COLOR": "1", "COLUMNS": "90"}, ["--help"]),
        ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, ["--help"]),  # left to typer
    ],
    ids=["pipe", "forced-colour", "no-color"],
)
@pytest.mark.slow
def test_piped_page_equals_typers(extra: dict[str, str], args: list[str]) -> None:
    """Real processes: typer reads FORCE_COLOR and TERMINAL_WIDTH once, when it is imported."""
    lean, full = _piped(LEAN, args, extra), _piped(TYPER, args, extra)
    assert (lean.returncode, lean.stdout, lean.stderr) == (full.returncode, full.stdout, full.stderr)
    assert lean.returncode == 0 and b"Usage: " in lean.stdout and b"envdoctor [OPTIONS]" in lean.stdout


def test_no_arguments_page_equals_typers(monkeypatch: pytest.MonkeyPatch) -> None:
    """No arguments: the page as click's "no args" error, exit 0; both entry points in this process,
    stdout a pipe (COLUMNS is read per page, so no process is needed for it)."""
    for name in DROPPED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "100")
    lean = run_entry(monkeypatch)
    full = run_entry(monkeypatch, entry_point=cli_main)
    assert (lean.code, lean.out, lean.err) == (full.code, full.out, full.err)
    assert lean.code == 0 and b"Usage: " in lean.out and b"envdoctor [OPTIONS]" in lean.out
    assert not lean.out.endswith(b"\n\n")  # click prints it as an error's message: no last blank line


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
@pytest.mark.slow
def test_terminal_page_equals_typers() -> None:
    """In a 93-column pseudo-terminal: colour codes and the terminal's width, as typer draws them."""
    import fcntl
    import pty
    import struct
    import termios

    def in_terminal(code: str) -> bytes:
        leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 93, 0, 0))
        env = _env({"TERM": "xterm-256color"})
        with subprocess.Popen(
            [sys.executable, "-c", code, "--help"], stdin=follower, stdout=follower, stderr=follower, env=env
        ) as process:
            os.close(follower)
            chunks = []
            while True:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            assert process.wait(timeout=120) == 0
        os.close(leader)
        return b"".join(chunks)

    lean, full = in_terminal(LEAN), in_terminal(TYPER)
    assert b"\x1b[1;33mUsage: \x1b[0m" in lean
    assert lean == full


@pytest.mark.slow
def test_shell_completion_is_offered_on_every_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 13 item 26: typer's --install-completion/--show-completion are on, and the lean
    start-up page lists them as typer does."""
    text = page("envdoctor", Console(100, False))
    assert "--install-completion" in text and "--show-completion" in text
    env = {k: v for k, v in os.environ.items() if not k.endswith("_COMPLETE")}
    shown = subprocess.run(
        [str(Path(sys.executable).parent / "envdoctor"), "--show-completion", "bash"],
        capture_output=True,
        text=True,
        # typer guesses the shell from the process tree unless told not to; under CI runners and
        # pytest workers no shell may be an ancestor, so the test names it (typer's own switch).
        env={**env, "SHELL": "/bin/bash", "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"},
        timeout=60,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert "complete" in shown.stdout and "_ENVDOCTOR_COMPLETE=complete_bash" in shown.stdout
