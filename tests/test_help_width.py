"""Help at 80 and at 50 columns (issue 23): no line wider than the terminal, no list of values split
over two lines, no panel title cut; real processes, as a terminal of that width runs them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

pytestmark = pytest.mark.slow

COMMANDS = (
    "",
    "check",
    "why",
    "snapshot",
    "report",
    "rules",
    "explain",
    "install",
    "update",
    "fix",
    "fleet",
    "cluster",
)


def _help(command: str, width: int) -> str:
    env = dict(os.environ, COLUMNS=str(width), TERM="xterm")
    env.pop("TERMINAL_WIDTH", None)
    argv = [sys.executable, "-m", "envdoctor", *([command] if command else []), "--help"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("width", [80, 50])
def test_every_help_page_fits_its_terminal(width: int) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        pages = dict(zip(COMMANDS, pool.map(lambda c: _help(c, width), COMMANDS)))
    for command, page in pages.items():
        where = f"`envdoctor {command} --help` at {width} columns"
        lines = page.splitlines()
        assert all(len(line) <= width for line in lines), (where, [x for x in lines if len(x) > width])
        split = [x for x in lines if "<" in x and "|" in x and ">" not in x]
        assert not split, f"{where}: a list of values is split: {split}"
        # A panel title that fits is followed by a space and the border: "╭─ Options ───╮"; a cut
        # one runs into it: "╭─ Expectations (also in ... ta─╮".
        titles = [line for line in lines if line.startswith("╭─")]
        assert all(re.fullmatch(r"╭─ .+? ─+╮", t) for t in titles), (where, titles)


def test_every_option_that_takes_a_value_names_it() -> None:
    """`--python PYTHON`, `--timeout SECONDS`: a word for what goes there, never typer's `<str>`."""
    import typer.main

    from envdoctor.cli.root import app

    unnamed = []

    def walk(command: object, path: list[str]) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands:
            for name, sub in subcommands.items():
                walk(sub, [*path, name])
            return
        for param in getattr(command, "params", ()):
            if param.metavar is None and not getattr(param, "is_flag", False) and param.name != "help":
                unnamed.append(f"{' '.join(path)} {'/'.join(param.opts)}")

    walk(typer.main.get_command(app), [])
    assert unnamed == []
