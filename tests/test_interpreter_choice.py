"""Which environment is examined: from an isolated install (pipx, uv tool, any without torch) the user's
project environment is found; --python takes an interpreter, an environment folder or a command on
PATH; a stale $VIRTUAL_ENV / $CONDA_PREFIX is reported (ED004); no fix puts torch into envdoctor's own
isolated environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.engine import evaluate
from envdoctor.host.base import ChildOutcome
from envdoctor.host.fake import FakeHost
from envdoctor.model.findings import Interpreter, PlatformInfo, ProbeResult, ProbeStatus, StaleVariable
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import RuleContext
from envdoctor.target import TargetError, choose_interpreter, resolve_target
from tests.cli_support import run_cli

pytestmark = pytest.mark.slow

PIPX = "/home/u/.local/share/pipx/venvs/envdoctor"
PROJECT = "/home/u/proj"
WINDOWS = PlatformInfo("Windows", "11", "10.0.22631", "AMD64")
# The commands the interpreter search asks PATH for; a test puts there what its machine has.
NOTHING_ON_PATH: dict[str, str | None] = {"python3": None, "conda": None, "python9.9": None}


def pipx_host(**files: str) -> FakeHost:
    """envdoctor in a pipx environment without torch, run in a project folder, nothing active."""
    return FakeHost(
        programs=dict(NOTHING_ON_PATH),
        python=f"{PIPX}/bin/python",
        own_prefix=PIPX,
        own_torch=False,
        working_dir=PROJECT,
        files=dict(files),
    )


def test_from_a_pipx_install_the_project_venv_is_examined() -> None:
    host = pipx_host(**{f"{PROJECT}/.venv/bin/python": "", f"{PROJECT}/venv/bin/python": ""})
    chosen = choose_interpreter(host, None)
    assert chosen.path == f"{PROJECT}/.venv/bin/python"
    assert chosen.reason == (
        "the project environment ./.venv; envdoctor's own environment (a pipx install) has no torch "
        "(--python chooses another)"
    )
    assert not chosen.own_isolated and chosen.stale == ()


def test_then_venv_the_conda_base_and_python3_on_path_in_that_order() -> None:
    host = pipx_host(**{f"{PROJECT}/venv/bin/python3": ""})
    assert choose_interpreter(host, None).path == f"{PROJECT}/venv/bin/python3"
    host = pipx_host(**{"/opt/conda/bin/python": ""})
    host.environ["CONDA_EXE"] = "/opt/conda/bin/conda"
    assert choose_interpreter(host, None).reason.startswith("the conda base environment /opt/conda;")
    host = pipx_host()
    host.programs["python3"] = "/usr/bin/python3"
    assert choose_interpreter(host, None).reason.startswith("python3 on PATH;")


def test_a_uv_tool_install_with_nothing_else_examines_itself_and_says_so() -> None:
    own = "/home/u/.local/share/uv/tools/envdoctor"
    host = FakeHost(
        programs=dict(NOTHING_ON_PATH),
        python=f"{own}/bin/python",
        own_prefix=own,
        own_torch=False,
        working_dir=PROJECT,
    )
    host.programs["python3"] = f"{own}/bin/python3"  # its own environment's, on PATH: not the user's
    chosen = choose_interpreter(host, None)
    assert chosen.path == f"{own}/bin/python"
    assert chosen.own_isolated
    assert chosen.reason == (
        "envdoctor's own environment (a uv tool install): no project environment found (.venv, venv, "
        "a conda base, python3 on PATH); create one or name it with --python"
    )


def test_envdoctor_installed_in_the_project_venv_examines_it_plainly() -> None:
    host = pipx_host(**{f"{PROJECT}/.venv/bin/python": ""})
    host.own_prefix = f"{PROJECT}/.venv"
    assert choose_interpreter(host, None) == Interpreter(
        f"{PROJECT}/.venv/bin/python", "the project environment ./.venv"
    )


def test_an_own_environment_with_torch_is_examined_as_before() -> None:
    host = FakeHost(
        programs=dict(NOTHING_ON_PATH), files={f"{PROJECT}/.venv/bin/python": ""}, working_dir=PROJECT
    )
    assert choose_interpreter(host, None) == Interpreter(host.python, "the interpreter envdoctor runs in")


def test_stale_activation_variables_are_kept_for_the_report() -> None:
    host = FakeHost(
        programs=dict(NOTHING_ON_PATH),
        environ={"VIRTUAL_ENV": "/gone/.venv", "CONDA_PREFIX": "/opt/conda/envs/ml"},
        files={"/opt/conda/envs/ml/bin/python": ""},
    )
    chosen = choose_interpreter(host, None)
    assert chosen.path == "/opt/conda/envs/ml/bin/python"
    assert chosen.stale == (StaleVariable("VIRTUAL_ENV", "/gone/.venv", exists=False),)
    host = FakeHost(
        programs=dict(NOTHING_ON_PATH),
        environ={"CONDA_PREFIX": "/opt/conda/envs/empty"},
        dirs={"/opt/conda/envs/empty": ()},
    )
    chosen = choose_interpreter(host, None)
    assert chosen.path == host.python
    assert chosen.stale == (StaleVariable("CONDA_PREFIX", "/opt/conda/envs/empty", exists=True),)


PY_RECORD = {
    "record": "python",
    "executable": "x",
    "version": "3.12.3",
    "implementation": "CPython",
    "bits": 64,
    "prefix": "x",
    "is_venv": True,
    "is_conda": False,
}


@pytest.mark.parametrize(
    ("given", "path", "reason"),
    [
        (f"{PROJECT}/.venv", f"{PROJECT}/.venv/bin/python", f"given with --python ({PROJECT}/.venv)"),
        ("python3.12", "/usr/bin/python3.12", "given with --python (python3.12 on PATH)"),
        ("/usr/bin/python3.12", "/usr/bin/python3.12", "given with --python"),
    ],
)
def test_python_accepts_a_folder_a_command_or_an_interpreter(given: str, path: str, reason: str) -> None:
    host = FakeHost(
        files={f"{PROJECT}/.venv/bin/python": "", "/usr/bin/python3.12": ""},
        dirs={f"{PROJECT}/.venv": ()},
        programs={**NOTHING_ON_PATH, "python3.12": "/usr/bin/python3.12"},
        children={"python_info.py": ChildOutcome((PY_RECORD,), 0)},
    )
    target = resolve_target(host, given)
    assert (target.interpreter.path, target.interpreter.reason) == (path, reason)


def test_python_names_a_conda_folder_on_windows() -> None:
    env = "C:\\Users\\u\\miniconda3\\envs\\ml"
    host = FakeHost(
        programs=dict(NOTHING_ON_PATH),
        platform_info=WINDOWS,
        files={f"{env}\\python.exe": ""},
        dirs={env: ()},
        children={"python_info.py": ChildOutcome((PY_RECORD,), 0)},
    )
    assert resolve_target(host, env).interpreter.path == f"{env}\\python.exe"


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("python9.9", "--python python9.9: no such file, and no command of that name on PATH"),
        ("/nowhere/python", "--python /nowhere/python: no such file; expected a Python interpreter or"),
        ("/empty", "--python /empty: a folder without a Python interpreter (looked for /empty/bin/python"),
    ],
)
def test_python_that_names_nothing_is_one_line(given: str, message: str) -> None:
    with pytest.raises(TargetError) as caught:
        resolve_target(FakeHost(programs=dict(NOTHING_ON_PATH), dirs={"/empty": ()}), given)
    assert str(caught.value).startswith(message)


def _findings(interpreter: Interpreter) -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    torch = ProbeResult("torch", ProbeStatus.OK, 0.1, TorchFacts(installed=False))
    found = evaluate(RuleContext.build(PlatformInfo("Linux", "6.1", "#1", "x86_64"), interpreter, (torch,)))
    return {f.code: [(x.summary, x.commands) for x in f.fixes] for f in found}


def test_no_fix_installs_torch_into_envdoctors_own_isolated_environment() -> None:
    own = Interpreter(f"{PIPX}/bin/python", "envdoctor's own environment", own_isolated=True)
    fixes = _findings(own)["ED001"]
    assert fixes[0][1] == ("python3 -m venv .venv", "envdoctor check --python .venv")
    assert not any("pip" in text for summary, commands in fixes for text in (summary, *commands))
    # Asked for by name, the same environment gets the install command.
    asked = Interpreter(f"{PIPX}/bin/python", "given with --python")
    fix = _findings(asked)["ED001"][0]
    assert any(c.startswith(f"{PIPX}/bin/python -m pip install torch==") for c in fix[1])


def test_a_stale_virtual_env_is_a_finding_with_fixes() -> None:
    interpreter = Interpreter(
        "/usr/bin/python3", "x", stale=(StaleVariable("VIRTUAL_ENV", "/gone/.venv", False),)
    )
    fixes = _findings(interpreter)["ED004"]
    assert fixes[0][1] == ("deactivate", "unset VIRTUAL_ENV")
    assert fixes[1][1] == ("python3 -m venv /gone/.venv",)


# --- real environments: envdoctor run from a pipx-style environment without torch --------------------


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    return path / "bin" / "python"


@pytest.fixture(scope="module")
def pipx_layout(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(envdoctor's python in a pipx-style venv whose packages are this one's minus torch, a project
    folder with a real .venv)."""
    if os.name == "nt":
        pytest.skip("the layout is built with POSIX venv paths")
    root = tmp_path_factory.mktemp("pipx")
    own = _venv(root / "home" / ".local" / "share" / "pipx" / "venvs" / "envdoctor")
    deps = root / "deps"
    deps.mkdir()
    site = Path(next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()))
    for entry in site.iterdir():
        if entry.name.startswith(("torch", "functorch", "__editable__")) or entry.suffix == ".pth":
            continue
        (deps / entry.name).symlink_to(entry)
    own_site = next((own.parent.parent / "lib").glob("python3*/site-packages"))
    repo = Path(__file__).resolve().parent.parent
    (own_site / "envdoctor-dev.pth").write_text(f"{repo}\n{deps}\n")
    project = root / "proj"
    _venv(project / ".venv")
    return own, project


CHECK = ("check", "--no-smoke", "-f", "json", "--skip", "mirrors")


def _check(own: Path, cwd: Path, *args: str, **env: str) -> dict[str, object]:
    environ = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_EXE")}
    environ["PATH"] = env.pop("PATH", str(cwd / "no-bin"))
    environ.update(env)
    done = subprocess.run(
        [str(own), "-m", "envdoctor", *CHECK, *args],
        cwd=cwd, env=environ, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert isinstance(report, dict)
    return report


def _codes(report: dict[str, object]) -> list[str]:
    return [f["code"] for f in report["findings"]]  # type: ignore[attr-defined]


def test_a_real_pipx_layout_examines_the_project_venv(pipx_layout: tuple[Path, Path]) -> None:
    own, project = pipx_layout
    report = _check(own, project)
    assert report["interpreter"]["path"] == str(project / ".venv" / "bin" / "python")  # type: ignore[index]
    assert "a pipx install" in report["interpreter"]["reason"]  # type: ignore[index]
    (missing,) = [f for f in report["findings"] if f["code"] == "ED001"]  # type: ignore[attr-defined]
    assert missing["fixes"][0]["commands"][-1].startswith(
        f"{project}/.venv/bin/python -m pip install torch=="
    )


def test_a_real_pipx_layout_takes_a_folder_or_a_command(
    pipx_layout: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A command on PATH from the pipx environment's process; a folder in this process (a given
    --python does not depend on which environment envdoctor runs in), the project's venv real."""
    own, project = pipx_layout
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(project / ".venv" / "bin" / "python")
    report = _check(own, tmp_path, "--python", "python3", PATH=str(bin_dir))
    assert report["interpreter"] == {  # type: ignore[comparison-overlap]
        "path": str(bin_dir / "python3"),
        "reason": "given with --python (python3 on PATH)",
    }
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_EXE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("PATH", str(project / "no-bin"))
    monkeypatch.chdir(project)
    run = run_cli(capsys, monkeypatch, *CHECK, "--python", ".venv")
    assert run.code in (0, 1), run.err
    assert json.loads(run.out)["interpreter"] == {
        "path": ".venv/bin/python",
        "reason": "given with --python (.venv)",
    }


def test_a_real_pipx_layout_alone_examines_itself_and_reports_a_stale_virtual_env(
    pipx_layout: tuple[Path, Path], tmp_path: Path
) -> None:
    own, _ = pipx_layout
    report = _check(own, tmp_path, VIRTUAL_ENV=str(tmp_path / "deleted" / ".venv"))
    assert report["interpreter"]["path"] == str(own)  # type: ignore[index]
    assert "no project environment found" in report["interpreter"]["reason"]  # type: ignore[index]
    assert _codes(report)[:2] == ["ED001", "ED004"]
    (missing,) = [f for f in report["findings"] if f["code"] == "ED001"]  # type: ignore[attr-defined]
    assert missing["fixes"][0]["commands"] == ["python3 -m venv .venv", "envdoctor check --python .venv"]


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell script as the shim")
def test_a_pyenv_shim_is_shown_as_the_interpreter_it_runs(tmp_path: Path) -> None:
    """~/.pyenv/shims/python3 is a script that picks and runs another interpreter: the report
    shows that one (sys.executable as the child reports it) and keeps the shim in the reason."""
    from envdoctor.host.live import LiveHost
    from envdoctor.model.findings import Interpreter
    from envdoctor.target import read_python_info, through_shim

    shims = tmp_path / ".pyenv" / "shims"
    shims.mkdir(parents=True)
    shim = shims / "python3"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    info = read_python_info(LiveHost(), str(shim))
    shown = through_shim(Interpreter(str(shim), "given with --python (python3 on PATH)"), info)
    assert shown.path == info.executable != str(shim)
    assert shown.reason == f"given with --python (python3 on PATH), run by the shim {shim}"
    plain = Interpreter(sys.executable, "the interpreter envdoctor runs in")
    assert through_shim(plain, info) == plain  # no shim: nothing changes
