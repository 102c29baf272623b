"""The probe's view of pip's configuration equals what the real pip reports (`pip config list`).

Runs the live host against files written to a temporary home and compares with the pip installed
next to the tests, so pip's real load order is the reference, not our reading of its source.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.host.live import LiveHost
from envdoctor.model.findings import Interpreter
from envdoctor.model.sources import MirrorFacts
from envdoctor.probes.base import ProbeContext
from envdoctor.probes.mirrors import collect
from envdoctor.target import PythonInfo, Target

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="compares Linux file locations"),
]


def _environ(home: Path, **extra: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "XDG_"))}
    keep.update(HOME=str(home), XDG_CONFIG_DIRS=str(home / "xdg"), PIP_DISABLE_PIP_VERSION_CHECK="1")
    keep.update(extra)
    return keep


def _pip_says(environ: dict[str, str]) -> dict[str, str]:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    found = {}
    for line in out.splitlines():
        name, _, value = line.partition("=")
        found[name] = ast.literal_eval(value)
    return found


def _probe_says(environ: dict[str, str]) -> MirrorFacts:
    info = PythonInfo(sys.executable, "3", "CPython", 64, sys.prefix, True, False)
    ctx = ProbeContext(host=LiveHost(environ), target=Target(Interpreter(sys.executable, "test"), info))
    return collect(ctx)


def _merged(facts: MirrorFacts) -> dict[str, str]:
    merged = {}
    for setting in facts.pip.settings:
        merged[f"{setting.section}.{setting.key}"] = setting.value
    return merged


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize("with_config_file", [False, True])
def test_probe_and_pip_agree(tmp_path: Path, with_config_file: bool) -> None:
    _write(tmp_path / "xdg/pip/pip.conf", "[global]\nindex-url = https://xdg.example/simple\ntimeout = 5\n")
    _write(
        tmp_path / ".pip/pip.conf",
        "[global]\nindex-url = https://legacy.example/simple\n[install]\nno-deps = yes\n",
    )
    _write(
        tmp_path / ".config/pip/pip.conf",
        "[global]\nextra-index-url =\n    https://a.example/simple\n    https://b.example/simple\n"
        "Trusted_Host = a.example\n",
    )
    _write(tmp_path / "ci.conf", "[global]\ntimeout = 30\n[download]\ndest = /home/user/dl\n")
    extra = {"PIP_FIND_LINKS": "/srv/wheels", "PIP_NO_INDEX": "0"}
    if with_config_file:
        extra["PIP_CONFIG_FILE"] = str(tmp_path / "ci.conf")
    environ = _environ(tmp_path, **extra)
    facts = _probe_says(environ)
    pip = _pip_says(environ)
    # pip lists PIP_CONFIG_FILE among the settings too; the probe reports it as the file it names.
    pip.pop(":env:.config-file", None)
    assert _merged(facts) == pip
    assert ("user" in {f.level for f in facts.pip.files if f.status == "skipped"}) is with_config_file
