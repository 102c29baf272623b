"""SLOW, real: the fix `check` prints in a torch-less venv installs torch from the configured local
sources, without PyTorch's index (issue 10, done-when).

Runs only with ENVDOCTOR_SLOW_TESTS=1 (a venv, then pip installing a ~190 MB wheel: 30-200 s), and
only on a machine whose pip configuration has a find-links folder or file:// index holding this
Python's torch CPU wheel; elsewhere it skips and says why. pip runs with the machine's own
configuration (no PIP_NO_INDEX): the command itself must not need PyTorch's index.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("ENVDOCTOR_SLOW_TESTS") != "1", reason="slow: set ENVDOCTOR_SLOW_TESTS=1 to run"
    ),
]


def _run(
    argv: list[str], timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, check=False)


def test_printed_fix_installs_torch_offline_from_the_local_sources(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)], timeout=120)  # no system site packages
    assert made.returncode == 0, made.stderr
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "PIP_NO_INDEX")}
    checked = _run(
        [
            sys.executable,
            "-m",
            "envdoctor",
            "check",
            "--offline",
            "--no-smoke",
            "--format",
            "json",
            "--python",
            python,
        ],
        timeout=180,
        env=env,
    )
    report = json.loads(checked.stdout)
    (finding,) = [f for f in report["findings"] if f["code"] == "ED001"]
    fix = finding["fixes"][0]
    if "From the find-links folder" not in fix["summary"] and "From the index file:" not in fix["summary"]:
        pytest.skip(f"no local source here holds this Python's torch build: {fix['summary']}")
    (command,) = fix["commands"]
    assert "--index-url" not in command and "download.pytorch.org" not in command
    installed = _run(shlex.split(command), timeout=900, env=env)
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-2000:]
    imported = _run([python, "-c", "import torch; print(torch.__version__)"], timeout=300, env=env)
    assert imported.returncode == 0, imported.stderr[-2000:]
    assert imported.stdout.strip().startswith(report_version(fix["summary"]))


def report_version(summary: str) -> str:
    """ "torch 2.13.0 (cpu)" in the fix's reason -> "2.13.0"."""
    marker = "-> torch "
    return summary[summary.index(marker) + len(marker) :].split(" ", 1)[0]
