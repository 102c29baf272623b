"""The quick path (cli_lean) answers exactly as typer's app does, or leaves the command line to it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main

from envdoctor.cli.lean import OPTIONS, Opt, answer, parse
from envdoctor.cli.root import app
from tests.cli_support import run_cli

DESCRIBED = [
    "--os",
    "linux",
    "--arch",
    "x86_64",
    "--python",
    "3.11",
    "--driver",
    "550.54.14",
    "--gpu",
    "RTX 3090",
]


@pytest.mark.parametrize("command", list(OPTIONS))
def test_the_options_are_typers(command: str) -> None:
    """Each option parsed here is declared so in cli.py: flags, one value, repeatable, choices."""
    declared = typer.main.get_command(app).commands[command].params  # type: ignore[attr-defined]
    seen: dict[str, Any] = {}
    for param in declared:
        # typer vendors click in newer releases: match by shape, not class.
        assert param.param_type_name == "option" and param.nargs == 1, param.name
        flag = bool(getattr(param, "is_flag", False))
        choices = tuple(getattr(param.type, "choices", ()))
        seen[param.name or ""] = (tuple(param.opts + param.secondary_opts), choices, param.multiple, flag)
    mine = {opt.dest: (opt.flags, opt.choices, opt.multiple, opt.is_flag) for opt in OPTIONS[command]}
    assert mine == seen


@pytest.mark.parametrize(
    ("args", "values"),
    [
        ([], {}),
        (["--torch", "2.5", "--torch=2.6"], {"torch": "2.6"}),  # the last one wins, as in click
        (["--gpu", "RTX 3090", "--gpu=sm_86"], {"gpu": ["RTX 3090", "sm_86"]}),
        (["-m", "UV", "-fJSON"], {"manager": "uv", "fmt": "json"}),
        (["--manager=Conda", "--mirror", ""], {"manager": "conda", "mirror": ""}),
        (["--offline", "--torch", "2.5"], {"offline": True, "torch": "2.5"}),
        (["--offline=yes"], None),  # a switch takes no value: click says so
        (["--torch"], None),  # a missing value
        (["--torch", "--cuda"], None),  # click would take "--cuda" as the value: its call
        (["--bogus", "1"], None),
        (["--manager", "npm"], None),
        (["extra"], None),
        (["--help"], None),
        (["-h"], None),
        (["--"], None),
    ],
)
def test_parse(args: list[str], values: dict[str, Any] | None) -> None:
    assert parse(args, OPTIONS["install"]) == values


def test_parse_takes_only_declared_short_flags() -> None:
    assert parse(["-x", "1"], (Opt("x", ("--ex",)),)) is None


QUICK = [
    ["--version"],
    ["explain", "ED101"],
    ["explain", "ed203"],
    ["explain", "ED000"],  # unknown: one line, exit 2
    ["rules"],
    ["rules", "--format=JSON"],
    ["rules", "-fjson"],
    ["install", *DESCRIBED],
    ["install", *DESCRIBED, "--manager", "uv", "--format", "json"],
    [
        "install",
        "--os",
        "windows",
        "--python",
        "3.10",
        "--driver",
        "560.94",
        "--gpu",
        "RTX 4070",
        "-m",
        "conda",
    ],
    ["install", "--os", "linux", "--gpu", "GTX 680", "--driver", "550.54.14", "--python", "3.11"],
    ["install", "--torch", "0.1"],  # not a release: one line, exit 2
    ["install", "--os", "plan9"],
    ["install"],  # this machine
]


@pytest.mark.parametrize("argv", QUICK, ids=[" ".join(a) for a in QUICK])
def test_quick_answers_are_typers(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    quick = answer(argv)
    assert quick is not None, "the quick path left a valid command line to typer"
    full = run_cli(capsys, monkeypatch, *argv)
    assert quick == (full.out, full.err, full.code)


LEFT = [
    ["check"],
    ["snapshot"],
    ["frobnicate"],
    ["--help", "--help"],
    ["--version", "rules"],
    ["explain"],
    ["explain", "ED101", "ED102"],
    ["explain", "--help"],
    ["rules", "--help"],
    ["rules", "--format", "yaml"],
    ["install", "--manager", "npm"],
    ["install", "--gpu"],
    ["install", "--frobnicate"],
]


@pytest.mark.parametrize("argv", LEFT, ids=[" ".join(a) for a in LEFT])
def test_anything_else_is_left_to_typer(argv: list[str]) -> None:
    assert answer(argv) is None


def test_shell_completion_is_left_to_click() -> None:
    assert answer(["rules"], {"_ENVDOCTOR_COMPLETE": "bash_source"}) is None


def test_a_stdout_click_would_re_encode_is_left_to_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding="ascii"))
    assert answer(["rules"]) is None


@pytest.mark.parametrize(
    # A described install is held to its own module set below (test_a_described_install_loads_...).
    "argv",
    [["--help"], ["explain", "ED101"], ["rules"], ["install"]],
    ids=" ".join,
)
@pytest.mark.slow
def test_quick_commands_load_no_cli_framework_and_no_gpu_library(argv: list[str]) -> None:
    script = (
        "import sys\n"
        f"sys.argv = ['envdoctor', *{argv!r}]\n"
        "from envdoctor.cli.launch import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "heavy = [m for m in ('typer', 'click', 'rich', 'torch', 'pynvml') if m in sys.modules]\n"
        "print('loaded:', heavy, 'exit:', code, file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert "loaded: [] exit: 0" in result.stderr, result.stderr
    assert result.stdout


# What `envdoctor install` for a described machine may import (issue #9: start-up <= 100 ms).
# For another platform nothing of this machine is read: the planner, its knowledge tables and the
# report. For this platform pip's configuration and sources are read too (the mirrors and sources
# probes, and the interpreter's facts), but never the GPUs when --driver is given. Every module
# here costs every run its import (a frozen dataclass alone is ~1 ms on a slow CPU): one added to
# these sets is a decision, not an accident.
PLANNER_MODULES = {
    "envdoctor",
    "envdoctor.cli",
    "envdoctor.cli.launch",
    "envdoctor.cli.lean",
    "envdoctor.errors",
    "envdoctor.host",
    "envdoctor.host.base",
    "envdoctor.host.live",
    "envdoctor.install",
    "envdoctor.install.commands",
    "envdoctor.install.detect",
    "envdoctor.install.plan",
    "envdoctor.install.request",
    "envdoctor.install.routes",
    "envdoctor.install.session",
    "envdoctor.install.sources",
    "envdoctor.install.target",
    "envdoctor.install.vendors",
    "envdoctor.knowledge",
    "envdoctor.knowledge.archs",
    "envdoctor.knowledge.conda",
    "envdoctor.knowledge.drivers",
    "envdoctor.knowledge.gpu_vendors",
    "envdoctor.knowledge.gpus",
    "envdoctor.knowledge.mirrors",
    "envdoctor.knowledge.uv_settings",
    "envdoctor.knowledge.overlay",
    "envdoctor.knowledge.provenance",
    "envdoctor.knowledge.tables",
    "envdoctor.model",
    "envdoctor.model.types",
    "envdoctor.paths",
    "envdoctor.render",
    "envdoctor.render.install_report",
    "envdoctor.rule_catalogue",
    "envdoctor.shell",
    "envdoctor.util",
    "envdoctor.util.lazy_re",
    "envdoctor.util.lifecycle",
    "envdoctor.util.limits",
    "envdoctor.util.pep503",
    "envdoctor.util.records",
    "envdoctor.util.redact",
    "envdoctor.util.stream_text",
    "envdoctor.util.textwidth",
    "envdoctor.util.threads",  # threads that never print a traceback (a few lines, stdlib only)
    "envdoctor.util.words",
    "envdoctor.version",
}
CONFIG_READING_MODULES = PLANNER_MODULES | {
    "envdoctor.child",
    "envdoctor.child.python_info",
    "envdoctor.choose",
    "envdoctor.host.ending",
    "envdoctor.model.ending",
    "envdoctor.model.sources",
    "envdoctor.probes",
    "envdoctor.probes.base",
    "envdoctor.probes.config_files",
    "envdoctor.probes.mirrors",
    "envdoctor.probes.sources",
    "envdoctor.target",
    "envdoctor.util.serde",
}
# Heavy for what they give here: pip's package set-up and packaging.tags import logging; tempfile,
# html, subprocess and the GPU/CLI libraries have no use on a described machine without config files.
NOT_LOADED = (
    "pip",
    "packaging.tags",
    "packaging.utils",
    "packaging.specifiers",
    "logging",
    "tempfile",
    "html",
    "subprocess",
    "typer",
    "click",
    "rich",
    "torch",
    "pynvml",
    "psutil",
)

_MODULE_SET = """
import dataclasses, json, sys
sys.argv = ["envdoctor", *sys.argv[1:]]
from envdoctor.cli.launch import main
try:
    main()
except SystemExit as exc:
    code = exc.code
mods = sorted(m for m in sys.modules if m.split(".")[0] == "envdoctor")
classes = [
    f"{m}.{v.__name__}"
    for m in mods
    for v in vars(sys.modules[m]).values()
    if isinstance(v, type) and dataclasses.is_dataclass(v) and v.__module__ == m
]
seen = {"code": code, "modules": mods, "dataclasses": classes, "other": sorted(sys.modules)}
print(json.dumps(seen), file=sys.stderr)
"""


@pytest.mark.parametrize(
    ("args", "allowed", "dataclasses"),
    [
        (
            ["--os", "windows", "--python", "3.10", "--driver", "560.94", "--gpu", "RTX 4070"],
            PLANNER_MODULES,
            50,
        ),
        (DESCRIBED, CONFIG_READING_MODULES, 73),
    ],
    ids=["another platform", "this platform"],
)
@pytest.mark.slow
def test_a_described_install_loads_only_its_module_set(
    args: list[str], allowed: set[str], dataclasses: int, tmp_path: Path
) -> None:
    """The described-machine install path keeps to its module set and its dataclass count (each
    record is built at import: ~0.5 ms here, bench/records.py). Run with no pip, uv or conda
    configuration, so that only what a described machine always needs is counted."""
    if sys.platform == "darwin":
        pytest.skip("macOS takes no --driver")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "CONDA", "VIRTUAL_ENV"))}
    env.update(
        HOME=str(tmp_path),
        XDG_CONFIG_HOME=str(tmp_path),
        PIP_CONFIG_FILE=os.devnull,  # pip reads no configuration file at all
        ENVDOCTOR_CACHE_DIR=str(tmp_path / "cache"),
        PYTHONIOENCODING="utf-8",
    )
    result = subprocess.run(
        [sys.executable, "-c", _MODULE_SET, "install", *args, "--offline"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    seen = json.loads(result.stderr.strip().splitlines()[-1])
    # Another platform: pip3 as PyTorch publishes it; this one (--python 3.11 is the examined
    # interpreter's version): that interpreter's pip.
    ran = "$ pip3 install " in result.stdout or " -m pip install " in result.stdout
    assert seen["code"] == 0 and ran, result.stdout + result.stderr
    assert set(seen["modules"]) <= allowed, sorted(set(seen["modules"]) - allowed)
    assert not set(NOT_LOADED) & set(seen["other"]), sorted(set(NOT_LOADED) & set(seen["other"]))
    assert len(seen["dataclasses"]) <= dataclasses, seen["dataclasses"]


def test_pypi_url_read_without_pips_set_up_is_pips_own() -> None:
    """knowledge.mirrors reads pip's models/index.py alone (pip's package set-up costs ~40 ms): the
    URL must be the one pip itself has, and the module read is not registered as a module. (That
    `install` does not import pip is held by the module-set test above.)"""
    from pip._internal.models.index import PyPI

    from envdoctor.knowledge import mirrors

    assert mirrors._read_pip_index_module() == PyPI.simple_url
    assert "_envdoctor_pip_index" not in sys.modules


def test_this_machines_nvml_query_starts_before_the_planner_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """`install` on this machine starts the NVML child before importing the planner, and the probe
    adopts that child (one child, none left over); a given --driver starts none."""
    if sys.platform == "darwin":
        pytest.skip("macOS has no NVIDIA driver: no NVML child")
    from envdoctor.host import live

    started: list[str] = []
    early: list[str] = []
    real_start, real_early = live._start, live.start_early

    def counting_start(argv: Any, env: Any, merge_stderr: bool = False) -> Any:
        started.append(os.path.basename(argv[2]))
        return real_start(argv, env, merge_stderr)

    def counting_early(interpreter: str, script: str, args: Any) -> None:
        early.append(script)
        real_early(interpreter, script, args)

    monkeypatch.setattr(live, "_start", counting_start)
    monkeypatch.setattr(live, "start_early", counting_early)
    assert answer(["install", "--offline"]) is not None
    assert early == ["nvml_probe.py"] and started.count("nvml_probe.py") == 1, (early, started)
    assert not live._EARLY  # adopted by the probe, not left to be killed at exit
    early.clear()
    started.clear()
    assert answer(["install", *DESCRIBED, "--offline"]) is not None
    assert "nvml_probe.py" not in early + started


def test_a_refused_install_leaves_no_early_nvml_child() -> None:
    """The NVML child starts before the request is checked; a refused request must not leave it for
    the next install in this process to adopt with a stale clock (or for nobody until exit)."""
    if sys.platform == "darwin":
        pytest.skip("macOS has no NVIDIA driver: no NVML child")
    from envdoctor.host import live

    answered = answer(["install", "--torch", "0.1", "--offline"])
    assert answered is not None and answered[2] == 2, answered
    assert not live._EARLY
