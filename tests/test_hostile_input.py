"""Hostile values, files and surroundings end in one clear line and exit 2 (or a finding), never a
traceback: odd numbers, a deleted working folder, malformed snapshots, deeply nested TOML, a
planner loop, and a closed stdout."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from envdoctor.host.fake import FakeHost
from envdoctor.install.plan import InstallTarget, plan
from envdoctor.knowledge.gpus import parse_gpu
from envdoctor.model.sources import MALFORMED
from envdoctor.probes.mirrors import collect_uv
from envdoctor.snapshot import SnapshotError, load
from tests.cli_support import run_cli

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "linux-a100-healthy.json"
ENVDOCTOR = [sys.executable, "-m", "envdoctor"]


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("envdoctor: error: "), err
    assert "Traceback" not in err
    return lines[0]


# --- 11: counts and sizes --------------------------------------------------------------------

BAD_COUNTS = ["²", "⑧", "٣", "9" * 4300, "1" + "0" * 30]
BAD_SIZES = ["9" * 309 + "GiB", "9" * 400 + ".5 TB", "1" + "0" * 400 + "b"]


@pytest.mark.parametrize("value", BAD_COUNTS)
def test_odd_gpu_counts_are_one_line_exit_2(
    value: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = run_cli(capsys, monkeypatch, "check", "--from", str(FIXTURE), "--min-gpus", value)
    assert run.code == 2
    line = _one_error_line(run.err)
    assert "--min-gpus" in line and len(line) < 300


@pytest.mark.parametrize("value", BAD_SIZES)
def test_huge_gpu_memory_is_one_line_exit_2(
    value: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = run_cli(capsys, monkeypatch, "check", "--from", str(FIXTURE), "--min-gpu-memory", value)
    assert run.code == 2
    assert "too large" in _one_error_line(run.err)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("envdoctor.toml", 'min-gpus = "²"\n'),
        ("envdoctor.toml", f'min-gpus = "{"9" * 4300}"\n'),
        ("envdoctor.toml", f"min-gpus = {'1' + '0' * 30}\n"),
        ("envdoctor.toml", f"min-gpus = {'9' * 4400}\n"),  # past Python's int conversion limit
        ("envdoctor.toml", f'min-gpu-memory = "{"9" * 309}GiB"\n'),
        ("pyproject.toml", '[tool.envdoctor]\nmin-gpus = "⑧"\n'),
        ("pyproject.toml", f'[tool.envdoctor]\nmin-gpu-memory = "{"9" * 309}GiB"\n'),
        ("envdoctor.toml", "a = " + "[" * 5000 + "]" * 5000 + "\n"),
        ("pyproject.toml", "[tool.envdoctor]\nx = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n"),
    ],
    ids=[
        "sup2",
        "4300-digits",
        "10e30",
        "4400-digit-int",
        "309-nines",
        "circled-8",
        "py-309-nines",
        "deep-array",
        "deep-own-table",
    ],
)
@pytest.mark.slow
def test_bad_values_in_config_files_are_one_line_exit_2(
    name: str,
    text: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    run = run_cli(capsys, monkeypatch, "check", "--from", str(FIXTURE))
    assert run.code == 2
    assert name in _one_error_line(run.err)


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n",
        "x = \n",
        "[tool.uv]\nx = " + "[" * 3000 + "]" * 3000,
    ],
    ids=["deep-table", "plain-invalid", "deep-uv-array"],
)
def test_a_project_file_that_does_not_parse_is_judged_alike_however_it_is_bad(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pyproject.toml without a [tool.envdoctor] table is the project's: nested thousands deep or
    broken on line 1, it is one warning and the check's own exit code, never exit 2 (issue 20)."""
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    run = run_cli(capsys, monkeypatch, "check", "--from", str(FIXTURE))
    assert run.code in (0, 1), run.err
    assert run.err.count("\n") == 1 and "pyproject.toml: not valid TOML" in run.err, run.err


def test_a_warning_and_an_error_of_one_file_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text('x = \n[tool.envdoctor]\nmin-gpus = "x"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    run = run_cli(capsys, monkeypatch, "check", "--from", str(FIXTURE))
    assert run.code == 2
    assert "min-gpus" in _one_error_line(run.err)


# --- 12: the planner ---------------------------------------------------------------------------


def test_conda_on_aarch64_with_a_gpu_plans_without_endless_recursion(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ("install", "--manager", "conda", "--arch", "aarch64", "--driver", "570.86", "--gpu", "sm_86")
    run = run_cli(capsys, monkeypatch, *argv, "--os", "linux", "--python", "3.11")
    assert run.code == 0, run.err
    assert "pip3 install torch==" in run.out or "pip install torch==" in run.out


@pytest.mark.parametrize("manager", ["pip", "uv", "conda"])
@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
@pytest.mark.parametrize("torch", [None, "2.5.1", "2.3.0", "1.13.1"])
@pytest.mark.parametrize("os_name", ["linux", "windows"])
def test_the_planner_ends_for_every_manager_arch_and_release(
    manager: str, arch: str, torch: str | None, os_name: str
) -> None:
    gpu = parse_gpu("sm_86")
    assert gpu is not None
    target = InstallTarget(
        os=os_name,
        machine=arch,
        torch=torch,
        manager=manager,
        driver_version="570.86",
        gpu_capabilities=(gpu.capability,),
    )
    result = plan(target)
    assert result.possible or result.reason


# --- 13: a deleted working folder -------------------------------------------------------------


@pytest.mark.slow
def test_a_deleted_working_folder_is_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live check in a real process (its start-up, lazy imports and children all in the deleted
    folder); a check --from in this process."""
    gone = tmp_path / "gone"
    gone.mkdir()
    script = (
        "import os, sys, runpy\n"
        f"os.makedirs({str(gone)!r}, exist_ok=True); os.chdir({str(gone)!r}); os.rmdir({str(gone)!r})\n"
        "sys.argv = ['envdoctor'] + sys.argv[1:]\n"
        "runpy.run_module('envdoctor', run_name='__main__')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = ["check", "--no-smoke", "--only", "mirrors,system"]
    done = subprocess.run(
        [sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=60, env=env
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1), done.stderr
    assert "Package indexes" in done.stdout or "System" in done.stdout
    gone.mkdir()  # the process above removed it
    monkeypatch.chdir(gone)
    gone.rmdir()
    run = run_cli(capsys, monkeypatch, "check", "--from", str(FIXTURE))
    assert run.code == 0 and "No problems found" in run.out, run.err


# --- 15: snapshots that do not fit the schema ---------------------------------------------------


def _fixture() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data


def _probe(data: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(p for p in data["probes"] if p["probe"] == name)
    return found


def _set(data: dict[str, Any], path: str, value: object) -> dict[str, Any]:
    changed = copy.deepcopy(data)
    *steps, last = path.split(".")
    node: Any = changed
    for step in steps:
        node = _probe(changed, step[6:]) if step.startswith("probe:") else node[step]
    node[last] = value
    return changed


BAD_SNAPSHOTS = {
    "nested 100,000 deep": ("[" * 100_000, "nested too deeply"),
    "a 400-digit float": (
        json.dumps(_set(_fixture(), "probe:torch.seconds", 12345)).replace(
            '"seconds": 12345', '"seconds": ' + "9" * 400, 1
        ),
        "expected a finite number",
    ),
    "Infinity as a float": (
        json.dumps(_set(_fixture(), "probe:torch.seconds", 12345)).replace(
            '"seconds": 12345', '"seconds": Infinity', 1
        ),
        "expected a finite number",
    ),
    "sources is a number": (json.dumps(_set(_fixture(), "sources", 5)), "$.sources"),
    "sources holds a number": (json.dumps(_set(_fixture(), "sources", ["a", 5])), "$.sources[1]"),
    "description is a list": (json.dumps(_set(_fixture(), "description", [])), "$.description"),
    "error is a number": (json.dumps(_set(_fixture(), "probe:torch.error", 3)), ".error"),
    "ok without facts": (json.dumps(_set(_fixture(), "probe:torch.facts", None)), 'status "ok" needs'),
    "negative seconds": (json.dumps(_set(_fixture(), "probe:nvml.seconds", -1)), "expected a duration"),
    "a huge integer": (json.dumps(_set(_fixture(), "probe:torch.facts.device_count", 10**30)), "64-bit"),
    "a negative count": (
        json.dumps(_set(_fixture(), "probe:torch.facts.device_count", -3)),
        "device_count: expected a count, size or index >= 0, got -3",
    ),
    "a twice-reported probe": (
        json.dumps({**_fixture(), "probes": _fixture()["probes"] + _fixture()["probes"][:1]}),
        "a second result",
    ),
}


@pytest.mark.parametrize("name", list(BAD_SNAPSHOTS))
def test_snapshots_that_do_not_fit_are_exit_2_naming_the_json_path(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text, where = BAD_SNAPSHOTS[name]
    path = tmp_path / "snap.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SnapshotError, match=None) as caught:
        load(str(path))
    assert where in str(caught.value)
    for command in ("check", "report"):
        run = run_cli(capsys, monkeypatch, command, "--from", str(path))
        assert run.code == 2
        assert where in _one_error_line(run.err)


# --- 9: --from a FIFO or a device --------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "folder"])
def test_from_anything_but_a_regular_file_is_exit_2_at_once(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "pipe") if kind == "fifo" else kind if kind.startswith("/") else str(tmp_path)
    if kind == "fifo":
        os.mkfifo(path)
    started = time.monotonic()
    run = run_cli(capsys, monkeypatch, "check", "--from", path)
    assert run.code == 2
    line = _one_error_line(run.err)
    assert time.monotonic() - started < 5
    assert {"fifo": "a FIFO", "/dev/zero": "a character device", "folder": "is a folder"}[kind] in line


# --- 16: deeply nested TOML in uv.toml is a malformed file (ED506), not a crashed probe -----------


@pytest.mark.parametrize(
    "text",
    [
        "a = " + "[" * 5000 + "]" * 5000,
        "a = {" + "b = {" * 5000 + "}" * 5001,
        f"index-strategy = {'9' * 4400}",
    ],
    ids=["deep-array", "deep-table", "huge-int"],
)
def test_deeply_nested_uv_toml_is_a_malformed_file(text: str) -> None:
    host = FakeHost(files={"/home/user/project/uv.toml": text + "\n"})
    host.working_dir = "/home/user/project"
    config = collect_uv(host, "linux")
    uv_file = next(f for f in config.files if f.path.endswith("project/uv.toml"))
    assert uv_file.status == MALFORMED and uv_file.error


# --- 18: a closed stdout ----------------------------------------------------------------------


# Each way the reader can go, for real, on both paths: the lean dispatcher (rules, explain) and the
# typer app (check, exit 0 and exit 1).
CLOSED_STDOUT = [
    ("pipe", ["rules"], 0),  # `envdoctor rules | head -c 1`: head reads a byte and closes the pipe
    ("pipe", ["check", "--from", str(ROOT / "fixtures" / "linux-cpu-no-torch.json")], 1),
    ("devnull", ["explain", "ED003"], 0),
    ("closed", ["rules"], 0),  # `envdoctor rules >&-`: no stdout at all
    ("closed", ["check", "--from", str(FIXTURE), "-v"], 0),
]


@pytest.mark.parametrize(
    ("how", "argv", "code"), CLOSED_STDOUT, ids=[f"{h}-{a[0]}" for h, a, _ in CLOSED_STDOUT]
)
@pytest.mark.slow
def test_a_reader_that_goes_away_costs_nothing(how: str, argv: list[str], code: int) -> None:
    if how == "pipe":
        done = subprocess.run(
            ["bash", "-c", 'set -o pipefail; "$@" | head -c 1 >/dev/null', "-", *ENVDOCTOR, *argv],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == code, done.stderr
        assert done.stderr == ""
    elif how == "devnull":
        closed = subprocess.run(
            [*ENVDOCTOR, *argv], stdout=subprocess.DEVNULL, capture_output=False, timeout=60
        )
        assert closed.returncode == code
    else:
        shut = subprocess.run(
            ["bash", "-c", '"$@" >&-', "-", *ENVDOCTOR, *argv], capture_output=True, timeout=60
        )
        assert shut.returncode == code and b"Traceback" not in shut.stderr


# --- 9's siblings: --config, --output and $GITHUB_STEP_SUMMARY that are FIFOs or devices --------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_config_and_output_paths_that_would_block_are_errors_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    for option in ("--config", "--output"):
        run = run_cli(capsys, monkeypatch, "check", "--from", str(FIXTURE), option, str(fifo))
        assert run.code == 2
        line = _one_error_line(run.err)
        assert option in line and ("not a regular file" in line or "FIFO" in line), line
    run = run_cli(capsys, monkeypatch, "check", "--from", str(FIXTURE), "--config", "/dev/zero")
    assert run.code == 2 and "not a regular file" in _one_error_line(run.err)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(fifo))
    run = run_cli(capsys, monkeypatch, "check", "--from", str(FIXTURE), "-f", "github")
    assert run.code == 0 and "GITHUB_STEP_SUMMARY" in run.err
    assert time.monotonic() - started < 10


@pytest.mark.slow
def test_output_to_a_pipe_that_is_read_still_works(tmp_path: Path) -> None:
    # `-o /dev/stdout` is a pipe here: opened without waiting, written normally.
    done = subprocess.run(
        [*ENVDOCTOR, "check", "--from", str(FIXTURE), "-f", "json", "-o", "/dev/stdout"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["schema"] == "envdoctor.report/1"


# --- 11's siblings: digits that str.isdigit() accepts and int() refuses, anywhere -----------------

ODD_NUMBERS = ["²", "⑧", "9" * 5000, "2." + "9" * 5000, "9" * 5000 + ".0", "²²", "².6"]


@pytest.mark.parametrize("option", ["--driver", "--torch", "--gpu", "--cuda", "--python"])
@pytest.mark.parametrize("value", ODD_NUMBERS, ids=lambda v: v[:6])
def test_install_options_with_odd_numbers_are_one_line_exit_2(
    option: str, value: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = run_cli(capsys, monkeypatch, "install", "--os", "linux", option, value)  # raises on a traceback
    if option == "--gpu":  # a GPU envdoctor cannot place is a note on the plan, not an error
        assert run.code in (0, 1) and "Note: " in run.out, run.err
        return
    assert run.code == 2, run.out
    _one_error_line(run.err)


@pytest.mark.parametrize("value", ODD_NUMBERS, ids=lambda v: v[:6])
def test_odd_numbers_in_snapshot_strings_never_break_a_rule(value: str) -> None:
    from envdoctor.engine import diagnose
    from envdoctor.snapshot import snapshot_from_data

    for name in ("linux-cuda13-toolkit-no-driver-cpu-torch", "linux-cuda-home-118-with-cu121-torch"):
        data = json.loads((ROOT / "fixtures" / f"{name}.json").read_text(encoding="utf-8"))
        for toolkit in _probe(data, "toolkit")["facts"]["toolkits"]:
            toolkit["version"] = value
        nvml = _probe(data, "nvml")
        if nvml["facts"]:
            nvml["facts"]["driver_version"] = value
        snap = snapshot_from_data(data, name)
        report = diagnose(snap.platform, snap.interpreter, snap.probes)
        broken = [f.title for f in report.findings if f.title.startswith("envdoctor could not evaluate")]
        assert not broken, broken
        assert not [a.verdict for a in report.areas if "could not describe" in a.verdict]
