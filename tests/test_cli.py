"""The command line as a user meets it: real processes, real exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor import __version__
from envdoctor.rules import RULES
from tests.fixture_support import FIXTURES, fixture_check_args, fixture_names, fixture_report


def run(
    *args: str, env: dict[str, str | None] | None = None, cwd: str | None = None
) -> subprocess.CompletedProcess[str]:
    """envdoctor in a subprocess; a variable given as None is removed from its environment."""
    full_env = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}
    full_env.pop("VIRTUAL_ENV", None)
    full_env.pop("CONDA_PREFIX", None)
    return subprocess.run(
        [sys.executable, "-m", "envdoctor", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=full_env,
        cwd=cwd,
    )


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("bad")
    (base / "notjson.json").write_text("this is not json")
    (base / "list.json").write_text("[1, 2]")
    (base / "other.json").write_text('{"schema": "something/1"}')
    (base / "badfacts.json").write_text(
        json.dumps(
            {
                "schema": "envdoctor.snapshot/1",
                "platform": {"system": "Linux", "release": "1", "version": "1", "machine": "x"},
                "interpreter": {"path": "/p", "reason": "r"},
                "probes": [{"probe": "nvml", "status": "ok", "facts": {"status": 5}}],
            }
        )
    )
    (base / "badstatus.json").write_text(
        json.dumps(
            {
                "schema": "envdoctor.snapshot/1",
                "platform": {"system": "Linux", "release": "1", "version": "1", "machine": "x"},
                "interpreter": {"path": "/p", "reason": "r"},
                "probes": [{"probe": "nvml", "status": "sleeping"}],
            }
        )
    )
    (base / "binary.json").write_bytes(b"\xff\xfe\x00garbage")
    (base / "adir").mkdir()
    return {p.name: str(p) for p in base.iterdir()}


BAD_INPUTS = [
    (("check", "--python", "/no/such/python"), "no such file"),
    (("check", "--python", "{adir}"), "is a folder"),
    (("check", "--python", "/bin/sh"), "not a runnable Python interpreter"),
    (("check", "--format", "yaml"), "'yaml' is not one of"),
    (("check", "--timeout", "0"), "--timeout 0"),
    (("check", "--timeout", "soon"), "'soon' is not a valid"),
    (("check", "--from", "{notjson.json}"), "not JSON"),
    (("check", "--from", "{list.json}"), "not an envdoctor snapshot"),
    (("check", "--from", "{other.json}"), "not an envdoctor snapshot"),
    (("check", "--from", "{badfacts.json}"), "$.probes[0].facts.status: 5 is not one of ok"),
    (("check", "--from", "{badstatus.json}"), "'sleeping' is not one of"),
    (("check", "--from", "{binary.json}"), "binary.json"),
    (("check", "--from", "{adir}"), "is a folder"),
    (("check", "--from", "/no/such/snapshot.json"), "no such file"),
    (("check", "--from", "{list.json}", "--python", "/usr/bin/python3"), "cannot be combined"),
    (
        ("check", "--output", "{adir}", "--from", str(FIXTURES / "linux-rtx3090-no-torch.json")),
        "cannot be written",
    ),
    (("explain", "ED000"), "unknown rule 'ED000'"),
    (("explain",), "Missing argument"),
    (("frobnicate",), "No such command"),
    (("check", "--frobnicate"), "No such option"),
]


@pytest.mark.parametrize(("args", "message"), BAD_INPUTS, ids=[" ".join(a) for a, _ in BAD_INPUTS])
def test_bad_input_is_one_line_and_exit_2(
    args: tuple[str, ...], message: str, bad_files: dict[str, str]
) -> None:
    argv = list(args)
    for name, path in bad_files.items():
        argv = [a.replace("{" + name + "}", path) for a in argv]
    result = run(*argv)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("envdoctor: error:"), result.stderr
    assert message in lines[0]
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.parametrize("name", fixture_names())
def test_check_from_fixture_exit_code(name: str) -> None:
    result = run("check", *fixture_check_args(name), "--format", "json")
    expected = fixture_report(name)
    data = json.loads(result.stdout)
    assert result.returncode == expected.exit_code == data["exit_code"]
    assert [f["code"] for f in data["findings"]] == [f.code for f in expected.findings]


def test_json_contract() -> None:
    result = run("check", "--from", str(FIXTURES / "linux-driver470-cu124-too-old.json"), "--format", "json")
    data = json.loads(result.stdout)
    assert data["schema"] == "envdoctor.report/1" and data["envdoctor_version"] == __version__
    assert set(data["interpreter"]) == {"path", "reason"}
    assert data["status"] == "error" and data["exit_code"] == 1
    assert {p["name"] for p in data["probes"]} == {"system", "python", "nvml", "torch"}
    assert all(set(p) == {"name", "status", "seconds", "error"} for p in data["probes"])
    assert data["facts"]["nvml"]["driver_version"] == "470.182.03"
    finding = data["findings"][0]
    assert set(finding) >= {"code", "name", "severity", "title", "detail", "evidence", "fixes"}
    assert finding["fixes"][0]["commands"] and set(finding["fixes"][0]) == {"summary", "commands", "link"}


def test_live_check_tells_the_truth_about_this_machine(tmp_path: Path) -> None:
    """Here: CPU torch, no NVIDIA driver. Snapshot, then re-diagnose it: same findings."""
    import torch

    live = run("check", "--format", "json")
    assert live.returncode in (0, 1), live.stderr
    data = json.loads(live.stdout)
    assert data["interpreter"]["path"] == sys.executable
    assert data["facts"]["torch"]["version"] == torch.__version__
    snap = tmp_path / "machine.json"
    written = run("snapshot", "-o", str(snap))
    assert written.returncode == 0 and snap.exists()
    again = json.loads(run("check", "--from", str(snap), "--format", "json").stdout)
    assert [(f["code"], f["severity"]) for f in again["findings"]] == [
        (f["code"], f["severity"]) for f in data["findings"]
    ]
    if torch.version.cuda is None and data["facts"]["nvml"]["status"] == "library_not_found":
        assert data["exit_code"] == 0
        # ED401 (info) when a CUDA toolkit is installed here without a driver, as on the dev machine.
        toolkit = data["facts"].get("toolkit") or {}
        expected = ["ED104", "ED401"] if any(t["exists"] for t in toolkit.get("toolkits", ())) else ["ED104"]
        # ED211 (info) when NumPy is not installed beside torch, as in the test venv.
        if data["facts"]["torch"]["numpy"]["version"] is None:
            expected = sorted([*expected, "ED211"])
        assert [f["code"] for f in data["findings"]] == expected


def test_piped_console_has_no_colour_codes() -> None:
    result = run(
        "check", "--from", str(FIXTURES / "win11-rtx4070-pypi-cpu-torch.json"), env={"NO_COLOR": "1"}
    )
    assert result.returncode == 1
    assert "\x1b[" not in result.stdout
    assert "[✗] PyTorch build" in result.stdout and "ED201" in result.stdout


def test_forced_terminal_colour_respects_no_color() -> None:
    path = str(FIXTURES / "win11-rtx4070-pypi-cpu-torch.json")
    terminal: dict[str, str | None] = {"FORCE_COLOR": "1", "TERM": "xterm-256color", "CI": None}
    coloured = run("check", "--from", path, env=terminal)
    plain = run("check", "--from", path, env={**terminal, "NO_COLOR": "1"})
    in_ci = run("check", "--from", path, env={**terminal, "CI": "true"})
    assert "\x1b[" in coloured.stdout
    assert "\x1b[3" not in plain.stdout  # no colour escape (bold may remain)
    assert "\x1b[" not in in_ci.stdout  # CI mode: plain text


def test_rules_and_explain_cover_every_rule() -> None:
    """End to end once; tests/test_registry.py explains every rule in-process."""
    listing = run("rules").stdout
    for rule in RULES:
        assert rule.code in listing and rule.name in listing
    doc = run("explain", RULES[0].code.lower()).stdout
    for heading in ("What it checks:", "Why it matters:", "How to fix:", "Example:"):
        assert heading in doc
    rows = json.loads(run("rules", "--format", "json").stdout)
    assert [r["code"] for r in rows] == [r.code for r in RULES]


def test_version_and_help() -> None:
    assert run("--version").stdout.strip() == f"envdoctor {__version__}"
    helped = run("--help")
    assert helped.returncode == 0 and "Exit codes" in helped.stdout


def test_check_is_read_only(tmp_path: Path) -> None:
    before = sorted(p.name for p in tmp_path.iterdir())
    run("check", "--from", str(FIXTURES / "linux-rtx3090-no-torch.json"), cwd=str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_broken_active_environment_is_exit_2(tmp_path: Path) -> None:
    """The active environment's interpreter is asked in the background; a dead one is still exit 2."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = bin_dir / "python"
    python.write_text("#!/bin/sh\nexit 3\n")
    python.chmod(0o755)
    full_env = {**os.environ, "VIRTUAL_ENV": str(tmp_path)}
    full_env.pop("CONDA_PREFIX", None)
    result = subprocess.run(
        [sys.executable, "-m", "envdoctor", "check"],
        capture_output=True,
        text=True,
        timeout=120,
        env=full_env,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "not a runnable Python interpreter (exited with code 3" in lines[0]
