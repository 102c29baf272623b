"""`check` and `snapshot` write nothing into the examined environment: the torch child imports torch
with bytecode writing off, so a torch installed without .pyc files (uv's default) stays so."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

FAKE_TORCH = {
    "__init__.py": "from torch import version\n__version__ = '0.0.1+cpu'\n",
    "version.py": "cuda = None\nhip = None\n",
}


@pytest.mark.parametrize(
    "argv", [["check", "--only", "torch", "-f", "json"], ["snapshot", "--no-smoke"], ["check"]]
)
def test_the_examined_environment_gains_no_bytecode(tmp_path: Path, argv: list[str]) -> None:
    site = tmp_path / "site"
    package = site / "torch"
    package.mkdir(parents=True)
    for name, text in FAKE_TORCH.items():
        (package / name).write_text(text, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(site), "HOME": str(tmp_path)}
    # As a user's shell has it: bytecode writing on (a CI image may switch it off globally).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        env.pop(variable, None)
    done = subprocess.run(
        [sys.executable, "-m", "envdoctor", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr
    assert "0.0.1+cpu" in done.stdout  # the fake torch was the one imported
    written = sorted(
        p.relative_to(site) for p in site.rglob("*") if p.suffix == ".pyc" or p.name == "__pycache__"
    )
    assert not written, f"{argv[0]} wrote into the examined environment: {written}"
