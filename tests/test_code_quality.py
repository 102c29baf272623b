"""The code stays as the guide asks: ruff clean and mypy --strict clean (config in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    argv = (sys.executable, "-m", *argv)
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_check() -> None:
    result = _run("ruff", "check", "envdoctor", "tests", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = _run("ruff", "format", "--check", "envdoctor", "tests")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict() -> None:
    pytest.importorskip("mypy", reason="mypy comes with the test extra")
    result = _run("mypy", "envdoctor")
    assert result.returncode == 0, result.stdout + result.stderr
