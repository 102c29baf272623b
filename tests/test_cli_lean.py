"""The quick path (cli_lean) answers exactly as typer's app does, or leaves the command line to it."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import typer.main

from envdoctor.cli import app
from envdoctor.cli_lean import OPTIONS, Opt, answer, parse
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
    "argv", [["--help"], ["explain", "ED101"], ["rules"], ["install", *DESCRIBED], ["install"]], ids=" ".join
)
def test_quick_commands_load_no_cli_framework_and_no_gpu_library(argv: list[str]) -> None:
    script = (
        "import sys\n"
        f"sys.argv = ['envdoctor', *{argv!r}]\n"
        "from envdoctor.launch import main\n"
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
