"""One planner, and every command works where it says (issue 20, items 2, 4, 7, 9, 10).

The planner is asked as `install` and check's fixes ask it, over this machine's kind of sources
(a find-links folder with a labelled CPU wheel, a configured constraint, a default index that
answers, PyTorch's host that does not), as a FakeHost or Sources value: nothing reaches a network.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from envdoctor.install import sources as planner_sources
from envdoctor.install.plan import InstallTarget, Route, plan
from envdoctor.install.sources import Answer, Constraint, Reach, Source, SourceKind, Sources, parse_wheel
from envdoctor.model.sources import (
    MALFORMED,
    ConfigFile,
    ConfigStatus,
    PipConfig,
    ToolEffect,
    tool_effect,
)
from tests.cli_support import run_cli

pytestmark = pytest.mark.slow

FIND_LINKS = Source("/opt/wheels", SourceKind.FIND_LINKS, "PIP_FIND_LINKS", local=True)
OFFICIAL = "https://download.pytorch.org/whl/"
DEFAULT = "https://default-index.example.invalid/simple"


def _sources(
    *wheels: str, constraints: tuple[Constraint, ...] = (), pytorch_answers: bool = False
) -> Sources:
    parsed = tuple(w for w in (parse_wheel(name, FIND_LINKS) for name in wheels) if w is not None)
    return Sources(
        manager="pip",
        extra=(FIND_LINKS,),
        constraints=constraints,
        wheels=parsed,
        answers=(
            Answer(OFFICIAL, Reach.REACHABLE if pytorch_answers else Reach.UNREACHABLE, "no answer"),
            Answer(DEFAULT, Reach.REACHABLE, "HTTP 200"),
        ),
        default_index=DEFAULT,
    )


HERE = _sources(
    "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
    constraints=(Constraint("torch", "<=2.14.1", "/etc/xdg/pip/constraints.txt", 2, "remove line 2"),),
)


def _target(**changes: object) -> InstallTarget:
    base = InstallTarget(
        os="linux",
        machine="x86_64",
        python="3.11",
        python_launcher=("/env/bin/python", "-m", "pip"),
        sources=HERE,
        installed_torch="2.13.0+cpu",
    )
    return replace(base, **changes)  # type: ignore[arg-type]


# --- item 4: alternatives are plans too ----------------------------------------------------------


def test_no_alternative_offers_a_cuda_build_the_driver_cannot_run() -> None:
    """Driver 550 runs CUDA <= 12.4 (12.x by minor-version compatibility): PyPI's cu130 torch is
    no alternative for its GPU, whatever the default index holds."""
    result = plan(_target(driver_version="550.54.15", gpu_capabilities=((8, 9),), gpu_names=("RTX 4090",)))
    said = " ".join(result.suggestions + result.warnings)
    assert result.variant is not None and result.variant.startswith("cu")
    assert "cu130" not in said, said


def test_an_alternative_pins_one_variant_where_a_local_wheel_would_win() -> None:
    """On a CPU machine whose plan must be downloaded elsewhere (Python 3.10 has no local wheel),
    the default index's build is offered pinned so that find-links' 2.13.0+cpu cannot take its
    place beside the index's torchvision: === for the plain build."""
    result = plan(_target(python="3.10", sources=replace(HERE, constraints=())))
    assert result.route is Route.OFFLINE, result.route  # no local wheel for 3.10, PyTorch silent
    also = [s for s in result.suggestions if "default index answered" in s]
    assert also, result.suggestions
    assert "torch===2.13.0" in also[0], also[0]


# --- item 7: a release series is a release --------------------------------------------------------


def test_a_series_unknown_to_the_data_is_never_a_made_up_file_or_pin() -> None:
    result = plan(_target(torch="2.19", sources=replace(HERE, constraints=())))
    text = " ".join([result.reason, result.source or "", *result.warnings]) + " ".join(
        " ".join(c.argv) for c in result.commands
    )
    assert "torch-2.19+" not in text and "torch==2.19 " not in text + " ", text
    assert any("torch==2.19.*" in c.argv for c in result.commands), [c.argv for c in result.commands]


def test_a_series_takes_the_newest_of_it_a_source_holds() -> None:
    held = _sources(
        "torch-2.14.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        "torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl",
    )
    result = plan(_target(torch="2.14", sources=held))
    assert result.torch == "2.14.1", (result.torch, result.reason)


def test_a_known_series_is_its_newest_known_release() -> None:
    assert plan(_target(torch="2.5", sources=None)).torch == "2.5.1"


# --- item 9: a broken pip configuration is not planned around ------------------------------------


def test_a_configuration_pip_cannot_load_is_the_plan_s_answer() -> None:
    broken = ConfigFile("pip", "user", "/home/user/.config/pip/pip.conf", MALFORMED, "no [section] header", 3)
    assert tool_effect(broken) is ToolEffect.FATAL
    sources = planner_sources.from_facts("pip", PipConfig(files=(broken,)), None, None, None)
    result = plan(_target(sources=sources))
    assert not result.possible
    assert "pip.conf" in result.reason and "line 3" in result.reason and "fails" in result.reason


def test_install_with_a_broken_pip_conf_exits_1_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "pip.conf"
    conf.write_text("index-url = https://example.invalid/simple\n[global\n", encoding="utf-8")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    run = run_cli(capsys, monkeypatch, "install", "--offline")
    assert run.code == 1, run.out + run.err
    assert str(conf) in run.out and "line 1" in run.out
    elsewhere = run_cli(capsys, monkeypatch, "install", "--offline", "--os", "windows", "--python", "3.12")
    assert elsewhere.code == 0, "a plan for another machine does not read this machine's pip.conf"


def test_a_skipped_file_does_not_stop_the_plan() -> None:
    folder = ConfigFile("pip", "user", "/home/user/.config/pip/pip.conf", ConfigStatus.DIRECTORY)
    assert tool_effect(folder) is ToolEffect.IGNORED
    sources = planner_sources.from_facts("pip", PipConfig(files=(folder,)), None, None, None)
    assert sources.broken is None


# --- item 2: a plan for another machine uses that machine's official sources ----------------------


@pytest.mark.parametrize(
    "argv",
    [
        ("--os", "windows", "--python", "3.12", "--cuda", "cu126", "--torch", "2.7.1"),
        ("--python", "3.10"),
        ("--arch", "aarch64", "--os", "linux", "--python", "3.12"),
    ],
    ids=["windows", "another-python", "another-arch"],
)
def test_another_machine_gets_its_official_command_and_one_line_saying_so(
    argv: tuple[str, ...], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if sys.version_info[:2] == (3, 10) and "3.10" in argv:
        pytest.skip("this interpreter is 3.10: the plan is for here")
    run = run_cli(capsys, monkeypatch, "install", "--offline", *argv)
    assert run.code == 0, run.out + run.err
    assert "this machine's pip configuration, local wheels and constraints were not used" in run.out
    assert "On a machine that reaches" not in run.out and "copy the file" not in run.out, run.out
    assert "$ pip3 install torch==" in run.out, run.out


def test_driver_and_gpu_alone_still_plan_for_here(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = run_cli(capsys, monkeypatch, "install", "--offline", "--driver", "550.54.15", "--gpu", "RTX 4090")
    assert "were not used" not in run.out
    assert f"{sys.executable}" in run.out or "-m pip install" in run.out


# --- item 10: a hanging nvcc's setsid grandchild does not outlive check ---------------------------


@pytest.mark.skipif(sys.platform != "linux", reason="setsid and the child subreaper are Linux's")
def test_no_grandchild_outlives_check(tmp_path: Path) -> None:
    import psutil

    marker = f"{317 + os.getpid() % 1000}.5"  # a sleep no other test starts
    for name, tail in (("hangs", f"sleep {marker}1"), ("exits", "echo release 12.4, V12.4.131")):
        folder = tmp_path / name
        folder.mkdir()
        nvcc = folder / "nvcc"
        nvcc.write_text(
            f"#!/bin/sh\nsetsid sleep {marker}{name[0]} >/dev/null 2>&1 &\n{tail}\n", encoding="utf-8"
        )
        nvcc.chmod(0o755)
        env = dict(os.environ, PATH=f"{folder}{os.pathsep}{os.environ['PATH']}")
        done = subprocess.run(
            [sys.executable, "-m", "envdoctor", "check", "--only", "toolkit", "--timeout", "4"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode in (0, 1), done.stderr
        time.sleep(0.5)
        left = [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]
        for process in left:  # ours: started by this test's envdoctor
            process.kill()
        assert not left, f"{name}: left running {[p.info['cmdline'] for p in left]}"


# --- item 8: uv and conda take the wheel a local source holds ------------------------------------


def _unreachable_remote(manager: str) -> Sources:
    return Sources(
        manager=manager,
        answers=(Answer(OFFICIAL, Reach.UNREACHABLE, "no answer"), Answer(DEFAULT, Reach.UNREACHABLE, "no")),
        default_index=DEFAULT,
        pip_inside=replace(HERE, constraints=(), answers=(Answer(OFFICIAL, Reach.UNREACHABLE, "no answer"),)),
    )


def test_uv_takes_the_wheel_pips_find_links_folder_holds() -> None:
    result = plan(_target(manager="uv", sources=_unreachable_remote("uv")))
    argv = [c.argv for c in result.commands]
    assert result.route is Route.LOCAL, (result.route, result.source)
    assert argv and argv[0][:3] == ("uv", "pip", "install"), argv
    assert "--find-links" in argv[0] and "/opt/wheels" in argv[0] and "torch==2.13.0+cpu" in argv[0], argv
    assert "download" not in (result.source or "")


def test_conda_installs_with_pip_from_the_same_folder() -> None:
    result = plan(_target(manager="conda", sources=_unreachable_remote("conda")))
    argv = [c.argv for c in result.commands]
    assert any(
        a[:4] == ("/env/bin/python", "-m", "pip", "install") and "torch==2.13.0+cpu" in a for a in argv
    ), argv
    assert "find-links folder /opt/wheels" in (result.source or ""), result.source


def test_a_python_that_is_not_there_is_said_once(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = run_cli(capsys, monkeypatch, "install", "--offline", "--python", "/no/such/python")
    assert run.code == 2 and run.err.count("--python /no/such/python") == 1, run.err


def test_markdown_marks_an_area_that_does_not_apply_as_the_console_does() -> None:
    from envdoctor.render.markdown import render_markdown
    from tests.fixture_support import fixture_report

    text = render_markdown(fixture_report("linux-cuda13-toolkit-no-driver-cpu-torch"))
    windows = next(line for line in text.splitlines() if "| Windows runtime |" in line)
    assert windows.startswith("| ➖ |"), windows
