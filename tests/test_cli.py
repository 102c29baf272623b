"""The command line as a user meets it: exit codes, one-line errors, every fixture through `check`.

Most tests run the real command line in this process (the `cli` fixture): argument parsing, the
engine, the renderers and the exit code are the same code a user runs. A few run `envdoctor` as a
separate process, where the process is the point: a live check against the torch installed here,
`--help`, a usage error, a dead active environment, and Ctrl-C.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from envdoctor.rules import RULES
from envdoctor.version import __version__
from tests.cli_support import Run, run_entry
from tests.early import Job
from tests.fixture_support import FIXTURES, fixture_check_args, fixture_names, fixture_report
from tests.real_torch import DEFAULT_RUN, RealTorchChild

Cli = Callable[..., Run]
ROOT = Path(__file__).resolve().parent.parent
# Taken at import: an early run in the background must not see what the test of the moment has set.
ENVIRON = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}


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
    (("check", "--python", "{adir}"), "a folder without a Python interpreter"),
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


def _fill(args: tuple[str, ...], bad_files: dict[str, str]) -> list[str]:
    argv = list(args)
    for name, path in bad_files.items():
        argv = [a.replace("{" + name + "}", path) for a in argv]
    return argv


def _one_error_line(stderr: str, message: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("envdoctor: error:"), stderr
    assert message in lines[0]


@pytest.mark.parametrize(("args", "message"), BAD_INPUTS, ids=[" ".join(a) for a, _ in BAD_INPUTS])
def test_bad_input_is_one_line_and_exit_2(
    cli: Cli, args: tuple[str, ...], message: str, bad_files: dict[str, str]
) -> None:
    result = cli(*_fill(args, bad_files))
    assert result.code == 2, result.err
    _one_error_line(result.err, message)
    assert "Traceback" not in result.err + result.out


@pytest.mark.parametrize(
    ("args", "message"),
    [(("check", "--from", "{notjson.json}"), "not JSON"), (("frobnicate",), "No such command")],
    ids=["our own error", "a usage error"],
)
@pytest.mark.slow
def test_bad_input_in_a_real_process(args: tuple[str, ...], message: str, bad_files: dict[str, str]) -> None:
    """The console entry point (launch.py, then the CLI) turns both kinds of error into one line."""
    result = run(*_fill(args, bad_files))
    assert result.returncode == 2, result.stderr
    _one_error_line(result.stderr, message)
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.parametrize("name", fixture_names())
def test_check_from_fixture_exit_code(cli: Cli, name: str) -> None:
    result = cli("check", *fixture_check_args(name), "--format", "json")
    expected = fixture_report(name)
    data = json.loads(result.out)
    assert result.code == expected.exit_code == data["exit_code"]
    assert [f["code"] for f in data["findings"]] == [f.code for f in expected.findings]


def test_json_contract(cli: Cli) -> None:
    result = cli("check", "--from", str(FIXTURES / "linux-driver470-cu124-too-old.json"), "--format", "json")
    data = json.loads(result.out)
    assert data["schema"] == "envdoctor.report/1" and data["envdoctor_version"] == __version__
    assert set(data["interpreter"]) == {"path", "reason"}
    assert data["status"] == "error" and data["exit_code"] == 1
    assert {p["name"] for p in data["probes"]} == {"system", "python", "nvml", "torch"}
    assert all(set(p) == {"name", "status", "seconds", "error"} for p in data["probes"])
    assert data["facts"]["nvml"]["driver_version"] == "470.182.03"
    finding = data["findings"][0]
    assert set(finding) >= {"code", "name", "severity", "title", "detail", "evidence", "fixes"}
    assert finding["fixes"][0]["commands"] and set(finding["fixes"][0]) == {"summary", "commands", "link"}


# The real thing a user runs: `envdoctor check` in a process of its own, torch child started early.
LIVE_CHECK = Job(
    "envdoctor check --format json",
    lambda: subprocess.run(
        [sys.executable, "-m", "envdoctor", "check", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=180,
        env=ENVIRON,
        cwd=ROOT,
    ),
)


def _installed_torch_version() -> types.ModuleType:
    """torch/version.py of the torch installed here, read without importing torch (seconds of CPU
    in this process, for two strings)."""
    spec = importlib.util.find_spec("torch")  # a top-level package: found, not imported
    assert spec is not None and spec.submodule_search_locations
    path = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    version_spec = importlib.util.spec_from_file_location("_installed_torch_version", path)
    assert version_spec is not None and version_spec.loader is not None
    module = importlib.util.module_from_spec(version_spec)
    version_spec.loader.exec_module(module)
    return module


@pytest.mark.early(LIVE_CHECK, DEFAULT_RUN)
@pytest.mark.slow
def test_live_check_tells_the_truth_about_this_machine(
    tmp_path: Path, cli: Cli, shared_torch_child: RealTorchChild
) -> None:
    """Here: CPU torch, no NVIDIA driver. A real `envdoctor check` process (its torch child started
    early, as a user gets it); then a snapshot re-diagnosed gives the same findings."""
    torch = _installed_torch_version()
    live = LIVE_CHECK.result()
    assert live.returncode in (0, 1), live.stderr
    data = json.loads(live.stdout)
    assert data["interpreter"]["path"] == sys.executable
    assert data["facts"]["torch"]["version"] == torch.__version__
    snap = tmp_path / "machine.json"
    written = cli("snapshot", "-o", str(snap))
    assert written.code == 0 and snap.exists()
    again = json.loads(cli("check", "--from", str(snap), "--format", "json").out)
    assert [(f["code"], f["severity"]) for f in again["findings"]] == [
        (f["code"], f["severity"]) for f in data["findings"]
    ]
    if torch.cuda is None and data["facts"]["nvml"]["status"] == "library_not_found":
        assert data["exit_code"] == 0
        # ED401 (info) when a CUDA toolkit is installed here without a driver, as on the dev machine.
        toolkit = data["facts"].get("toolkit") or {}
        expected = ["ED104", "ED401"] if any(t["exists"] for t in toolkit.get("toolkits", ())) else ["ED104"]
        # ED211 (info) when NumPy is not installed beside torch, as in the test venv.
        if data["facts"]["torch"]["numpy"]["version"] is None:
            expected = sorted([*expected, "ED211"])
        assert [f["code"] for f in data["findings"]] == expected


def test_piped_console_has_no_colour_codes(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    result = cli("check", "--from", str(FIXTURES / "win11-rtx4070-pypi-cpu-torch.json"))
    assert result.code == 1
    assert "\x1b[" not in result.out
    assert "[✗] PyTorch build" in result.out and "ED201" in result.out


def test_forced_terminal_colour_respects_no_color(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(FIXTURES / "win11-rtx4070-pypi-cpu-torch.json")
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = cli("check", "--from", path)
    monkeypatch.setenv("NO_COLOR", "1")
    plain = cli("check", "--from", path)
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("CI", "true")
    in_ci = cli("check", "--from", path)
    assert "\x1b[" in coloured.out
    assert "\x1b[3" not in plain.out  # no colour escape (bold may remain)
    assert "\x1b[" not in in_ci.out  # CI mode: plain text


@pytest.mark.slow
def test_rules_and_explain_cover_every_rule(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every rule through the console entry point (the lean path a user's `explain` takes); the
    typer app's `explain` for one, as a command line it does not take answers it."""
    listing = cli("rules").out
    for rule in RULES:
        assert rule.code in listing and rule.name in listing
        explained = run_entry(monkeypatch, "explain", rule.code.lower())
        assert explained.code == 0, explained.err
        for heading in ("What it checks:", "Why it matters:", "How to fix:", "Example:"):
            assert heading.encode() in explained.out
    typer_explained = cli("explain", RULES[-1].code.lower())
    assert typer_explained.code == 0 and typer_explained.out.encode() == explained.out
    rows = json.loads(cli("rules", "--format", "json").out)
    assert [r["code"] for r in rows] == [r.code for r in RULES]


def test_version(cli: Cli) -> None:
    result = cli("--version")
    assert result.code == 0 and result.out.strip() == f"envdoctor {__version__}"


def test_help_in_a_real_process() -> None:
    helped = run("--help")
    assert helped.returncode == 0 and "Exit codes" in helped.stdout
    assert helped.stderr == ""


def test_check_is_read_only(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert cli("check", "--from", str(FIXTURES / "linux-rtx3090-no-torch.json")).code == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.slow
def test_broken_active_environment_is_exit_2(tmp_path: Path) -> None:
    """The active environment's interpreter is asked in the background (and the console entry point
    starts its torch child early): a dead one is still one line and exit 2, in a real process."""
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


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT, as a terminal does on Ctrl-C")
@pytest.mark.slow
def test_ctrl_c_is_a_quiet_exit_130() -> None:
    """Ctrl-C while the probes run: exit 130, no traceback and no half-printed report."""
    import psutil

    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "envdoctor", "check"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    children: list[psutil.Process] = []
    left: list[list[str]] = []
    try:
        process = psutil.Process(proc.pid)
        deadline = time.monotonic() + 60
        # The probes run in threads: once there are some, the CLI is inside its Ctrl-C handling.
        while process.num_threads() < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, "check ended before it could be interrupted"
        children = process.children(recursive=True)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert "Traceback" not in err and out == ""
        time.sleep(0.2)
        left = [c.cmdline()[1:] for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    finally:
        if proc.poll() is None:
            proc.kill()
        for child in children:
            if child.is_running():
                child.kill()
    assert not left, f"children still running after Ctrl-C: {left}"
