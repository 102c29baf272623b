"""The code stays as the guide asks: ruff clean and mypy --strict clean (config in pyproject.toml)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.early import Job

ROOT = Path(__file__).resolve().parent.parent


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    argv = (sys.executable, "-m", *argv)
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)


def _git_common_dir() -> Path | None:
    """The clone's git folder, which all its worktrees share (read from .git, no git process)."""
    dot_git = ROOT / ".git"
    if dot_git.is_dir():
        return dot_git
    try:
        text = dot_git.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None  # no git checkout (an unpacked sdist)
    if not text.startswith("gitdir:"):
        return None
    gitdir = ROOT / text.removeprefix("gitdir:").strip()  # a worktree's own folder in the clone's .git
    commondir = gitdir / "commondir"
    return gitdir / commondir.read_text(encoding="utf-8").strip() if commondir.is_file() else gitdir


def _mypy_cache_args() -> tuple[str, ...]:
    """mypy's cache in the clone's git folder, shared by its worktrees and kept between runs: a new
    worktree otherwise starts with no .mypy_cache and mypy spends half a minute of CPU on the
    standard library and the dependencies again. mypy checks every cached module against its
    source (size, time, hash), so one tree's entries never stand for another's changed file.
    MYPY_CACHE_DIR, where set, wins."""
    common = _git_common_dir()
    if common is None or os.environ.get("MYPY_CACHE_DIR"):
        return ()
    return ("--cache-dir", str((common / "envdoctor-tests" / "mypy").resolve()))


# Each tool is a process of its own: started in the background after collection (tests/early.py),
# mypy above all (most of a minute on a fresh clone), so the rest of the suite runs meanwhile.
RUFF_CHECK = Job("ruff check", lambda: _run("ruff", "check", "envdoctor", "tests", "bench"))
RUFF_FORMAT = Job("ruff format --check", lambda: _run("ruff", "format", "--check", "envdoctor", "tests"))
MYPY = Job("mypy --strict", lambda: _run("mypy", *_mypy_cache_args(), "envdoctor"))


@pytest.mark.early(RUFF_CHECK)
def test_ruff_check() -> None:
    result = RUFF_CHECK.result()
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.early(RUFF_FORMAT)
def test_ruff_format() -> None:
    result = RUFF_FORMAT.result()
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.early(MYPY)
def test_mypy_strict() -> None:
    pytest.importorskip("mypy", reason="mypy comes with the test extra")
    result = MYPY.result()
    assert result.returncode == 0, result.stdout + result.stderr
