"""The code stays as the guide asks: ruff clean and mypy --strict clean (config in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.early import Job

ROOT = Path(__file__).resolve().parent.parent


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    argv = (sys.executable, "-m", *argv)
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)


# Each tool is a process of its own: started in the background after collection (tests/early.py),
# mypy above all (most of a minute on a fresh clone), so the rest of the suite runs meanwhile.
RUFF_CHECK = Job("ruff check", lambda: _run("ruff", "check", "envdoctor", "tests", "bench"))
RUFF_FORMAT = Job("ruff format --check", lambda: _run("ruff", "format", "--check", "envdoctor", "tests"))
MYPY = Job("mypy --strict", lambda: _run("mypy", "envdoctor"))


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
