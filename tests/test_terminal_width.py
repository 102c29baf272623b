"""Output fitted to the terminal (issue 13, item 22): at 50, 80 and 120 columns no line is wider than
the terminal except a command or a link (they are copied whole), no word is split, continuation
lines hang under the text; `rules` is a table that fits; `explain` ends with a docs link."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor import rule_catalogue
from envdoctor.cli import lean as cli_lean
from envdoctor.install.commands import Command
from envdoctor.install.plan import InstallPlan
from envdoctor.install.session import Input
from envdoctor.render.console import make_console, render_console
from envdoctor.render.install_report import render_text
from envdoctor.rules import RULES
from tests.cli_support import run_entry
from tests.fixture_support import fixture_report

ROOT = Path(__file__).resolve().parent.parent
WIDTHS = (50, 80, 120)
FIXTURES = (
    "linux-driver470-cu124-too-old",
    "linux-rtx5090-cu124-no-sm120",
    "win11-rtx4070-pypi-cpu-torch",
    "linux-a100-healthy",
)


def _copied_whole(line: str) -> bool:
    """A command or link line: never wrapped, so that it can be copied."""
    text = line.strip()
    return text.startswith(("$ ", "see ", "Docs: ", "http"))


def _console(name: str, width: int | None, verbose: bool = False) -> str:
    buffer = io.StringIO()
    console = make_console(buffer, width=width or 100, no_color=True, plain=True)
    render_console(fixture_report(name), console, verbose, wrap=width is not None)
    return buffer.getvalue()


def _assert_fits(text: str, width: int) -> None:
    for line in text.splitlines():
        if not _copied_whole(line):
            longest = max((len(word) for word in line.split()), default=0)
            assert len(line) <= width or longest > width // 2, f"{len(line)} > {width}: {line!r}"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", FIXTURES)
@pytest.mark.parametrize("verbose", [False, True], ids=["plain", "verbose"])
def test_the_console_report_wraps_between_words_only(name: str, width: int, verbose: bool) -> None:
    whole = _console(name, None, verbose)
    wrapped = _console(name, width, verbose)
    _assert_fits(wrapped, width)
    # Only line breaks and indentation differ: the same words in the same order, none cut in two.
    assert wrapped.split() == whole.split()


def test_continuation_lines_hang_under_the_text() -> None:
    lines = _console("linux-driver470-cu124-too-old", 80).splitlines()
    fix = next(i for i, line in enumerate(lines) if line.startswith("     Or: "))
    assert lines[fix + 1].startswith("       ") and not lines[fix + 1].startswith("        ")
    area = next(i for i, line in enumerate(lines) if line.startswith("[") and len(lines[i + 1]) > 4)
    assert lines[area + 1].startswith("    ") and lines[area + 1][4] != " "


def test_a_pipe_or_file_gets_whole_lines() -> None:
    """Without a terminal (or COLUMNS) lines stay whole: grep and diff see one line per item."""
    buffer = io.StringIO()
    render_console(fixture_report("linux-driver470-cu124-too-old"), make_console(buffer, width=50), False)
    assert any(len(line) > 100 for line in buffer.getvalue().splitlines())


def _check_at(width: int, monkeypatch: pytest.MonkeyPatch, in_a_process: bool) -> tuple[int, str]:
    """`envdoctor check --from FIXTURE` piped with COLUMNS=width: a real process or the entry point
    in this process (the same stdout: a pipe, no terminal)."""
    args = ["check", "--from", str(ROOT / "fixtures" / "linux-driver470-cu124-too-old.json")]
    if in_a_process:
        env = {**os.environ, "COLUMNS": str(width)}
        env.pop("CI", None)
        env.pop("GITHUB_ACTIONS", None)
        done = subprocess.run(
            [sys.executable, "-m", "envdoctor", *args], capture_output=True, text=True, env=env, timeout=120
        )
        assert "Traceback" not in done.stderr, done.stderr
        return done.returncode, done.stdout
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    run = run_entry(monkeypatch, *args)
    assert b"Traceback" not in run.err, run.err
    return run.code, run.out.decode("utf-8")


@pytest.mark.parametrize(("width", "in_a_process"), [(50, True), (80, False)], ids=["50-process", "80"])
@pytest.mark.slow
def test_check_wraps_to_columns(width: int, in_a_process: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = _check_at(width, monkeypatch, in_a_process)
    assert code == 1
    _assert_fits(out, width)
    assert "23.5 G\niB" not in out and "ED101" in out


# --- rules and explain: the lean path, wrapped without rich ----------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_rules_is_a_table_that_fits(width: int) -> None:
    entries = rule_catalogue.from_registry()
    text = rule_catalogue.rules_text(entries, width)
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["code", "severity"]
    _assert_fits(text, width)
    rows = [line for line in lines[1:] if not line.startswith(" ")]
    assert [row.split()[0] for row in rows] == [r.code for r in RULES]
    column = lines[1].index(lines[1].split()[2])  # where the text column starts
    for line in lines[1:]:  # continuation lines stay inside the text column
        assert line.startswith(" ") is False or line[:column].strip() == "", line
    words = " ".join(line[column:] for line in lines[1:]).split()
    assert words == " ".join(f"{r.summary} [{r.name}]" for r in RULES).split()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.slow
def test_explain_wraps_and_ends_with_a_docs_link(width: int) -> None:
    for rule in RULES:
        text = cli_lean.explain(rule.code, {"COLUMNS": str(width)})
        _assert_fits(text, width)
        assert text.splitlines()[-1] == f"Docs: {rule_catalogue.docs_url(rule.code)}"
        assert "about: nvml" not in text and "area:" not in text
        flat = " ".join(text.split())
        for paragraph in (rule.summary, rule.doc.what, rule.doc.why, rule.doc.fix, rule.doc.example):
            assert " ".join(paragraph.split()) in flat, rule.code


def test_the_lean_commands_take_the_terminal_width_from_columns() -> None:
    narrow = cli_lean.list_rules("console", {"COLUMNS": "50"})
    wide = cli_lean.list_rules("console", {"COLUMNS": "120"})
    _assert_fits(narrow, 50)
    _assert_fits(wide, 120)
    assert len(narrow.splitlines()) > len(wide.splitlines())
    assert cli_lean.list_rules("console", {"COLUMNS": "²"}) == cli_lean.list_rules("console", {})


# --- install ----------------------------------------------------------------------------------------

LONG = "driver 470.182.03 supports CUDA <= 11.4 and runs cu118 through minor-version compatibility"
COMMAND = "/home/user/project/.venv/bin/python -m pip install torch==2.7.1 torchvision==0.22.1"


def _plan() -> InstallPlan:
    return InstallPlan(
        torch="2.7.1",
        torchvision="0.22.1",
        torchaudio=None,
        variant="cu118",
        reason=f"{LONG} (>= 450.80.02) -> cu118; Tesla T4 (sm_75) is in cu118's arch list"
        " -> torch 2.7.1 (cu118)",
        commands=(
            Command((*COMMAND.split(), "--index-url", "https://download.pytorch.org/whl/cu118"), "pip"),
        ),
        warnings=(f"{LONG}: precompiled kernels run, but PTX JIT and torch.compile can fail",),
        suggestions=(f"the default index has torch 2.7.1's cu126 build (a larger download): {COMMAND}",),
    )


INPUTS = (
    Input("OS", "linux", "detected"),
    Input("Sources", " ".join(["find-links /opt/wheels;"] * 12), "detected"),
)


@pytest.mark.parametrize("width", WIDTHS)
def test_install_wraps_its_prose_and_never_a_command(width: int) -> None:
    text = render_text(_plan(), INPUTS, "linux", width)
    _assert_fits(text, width)
    assert f"$ {COMMAND}" in text  # the suggestion's command, whole on its own line
    assert "so cu118" in " ".join(text.split()) and "->" not in text  # the why in words
    assert render_text(_plan(), INPUTS, "linux", None).count("\n") < text.count("\n")


# --- --help: typer's rich layout cuts option names when narrow; then click's plain help draws it ---


def _help_at(command: str, width: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """`envdoctor COMMAND --help` piped with COLUMNS=width: a real process for `check` at 50
    columns, the entry point in this process for the rest (typer reads the width per call)."""
    if (command, width) == ("check", 50):
        env = {**os.environ, "COLUMNS": str(width)}
        env.pop("TERMINAL_WIDTH", None)
        done = subprocess.run(
            [sys.executable, "-m", "envdoctor", command, "--help"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.stderr == "", done.stderr
        return done.returncode, done.stdout
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    run = run_entry(monkeypatch, command, "--help")
    assert run.err == b"", run.err
    return run.code, run.out.decode("utf-8")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", ["check", "install", "fleet"])
def test_help_never_cuts_an_option_name(command: str, width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    import typer

    from envdoctor.cli.root import app

    code, out = _help_at(command, width, monkeypatch)
    assert code == 0
    assert "…" not in out, out
    params = typer.main.get_command(app).commands[command].params  # type: ignore[attr-defined]
    flags = {
        flag for param in params for flag in (*param.opts, *param.secondary_opts) if flag.startswith("-")
    }
    words = set(out.replace(",", " ").replace("/", " ").split())
    assert flags <= words, sorted(flags - words)
    _assert_fits(out, width)


def test_an_info_area_is_marked_as_info_not_as_passed() -> None:
    """A note (say, no NVIDIA driver on a CPU machine) is something to know, not a check passed."""
    from envdoctor.model.findings import Severity

    report = fixture_report("linux-cpu-no-torch")
    info = next(area for area in report.areas if area.severity is Severity.INFO)
    text = _console("linux-cpu-no-torch", None)
    assert f"[i] {info.title} — " in text
    assert f"[✓] {info.title} — " not in text


def test_an_area_that_does_not_apply_is_not_marked_as_passed() -> None:
    """'Windows runtime — not applicable' on Linux: nothing was checked, so no ✓ (the JSON keeps
    the area's severity; only the mark differs)."""
    report = fixture_report("linux-cuda13-toolkit-no-driver-cpu-torch")
    skipped = [area for area in report.areas if area.verdict.startswith("not applicable")]
    assert skipped, "the fixture has an area that does not apply"
    text = _console("linux-cuda13-toolkit-no-driver-cpu-torch", None)
    for area in skipped:
        assert f"[-] {area.title} — not applicable" in text
        assert f"[✓] {area.title} — " not in text


def test_a_narrow_help_page_does_not_stick_to_the_next_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """The click command is built once per process (cli._command): the plain layout chosen for a
    narrow terminal must not stay for a wide one asked next in the same process."""
    wide_first = _help_at("install", 120, monkeypatch)
    narrow = _help_at("install", 50, monkeypatch)
    wide_again = _help_at("install", 120, monkeypatch)
    assert "╭" in wide_first[1] and "╭" not in narrow[1]
    assert wide_again == wide_first
