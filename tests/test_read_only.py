"""`check` and `snapshot` write nothing into the examined environment: the torch child imports torch
with bytecode writing off, so a torch installed without .pyc files (uv's default) stays so.

The full `check` runs as a real process (envdoctor's own process must not import the examined
torch either); `check --only torch` and `snapshot` run in this process, their children real."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_support import run_cli

pytestmark = pytest.mark.slow

FAKE_TORCH = {
    "__init__.py": "from torch import version\n__version__ = '0.0.1+cpu'\n",
    "version.py": "cuda = None\nhip = None\n",
}


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    package = site / "torch"
    package.mkdir(parents=True)
    for name, text in FAKE_TORCH.items():
        (package / name).write_text(text, encoding="utf-8")
    return site


def _assert_no_bytecode(site: Path, command: str) -> None:
    written = sorted(
        p.relative_to(site) for p in site.rglob("*") if p.suffix == ".pyc" or p.name == "__pycache__"
    )
    assert not written, f"{command} wrote into the examined environment: {written}"


def test_a_check_process_writes_no_bytecode_into_the_examined_environment(tmp_path: Path) -> None:
    site = _site(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(site), "HOME": str(tmp_path)}
    # As a user's shell has it: bytecode writing on (a CI image may switch it off globally).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        env.pop(variable, None)
    done = subprocess.run(
        [sys.executable, "-m", "envdoctor", "check"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr
    assert "0.0.1+cpu" in done.stdout  # the fake torch was the one imported
    _assert_no_bytecode(site, "check")


@pytest.mark.parametrize("argv", [["check", "--only", "torch", "-f", "json"], ["snapshot", "--no-smoke"]])
def test_the_examined_environment_gains_no_bytecode(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    site = _site(tmp_path)
    # The children (this interpreter) see the fake torch first, with bytecode writing on.
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.setenv("HOME", str(tmp_path))
    for variable in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX", "VIRTUAL_ENV", "CONDA_PREFIX"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)
    run = run_cli(capsys, monkeypatch, *argv)
    assert run.code in (0, 1), run.err
    assert "0.0.1+cpu" in run.out  # the fake torch was the one imported
    _assert_no_bytecode(site, argv[0])
