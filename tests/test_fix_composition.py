"""All the variable edits of one report compose (issue 11, item 9): no two findings set one variable
to different literal values, no command appears twice, and applying every PATH / LD_LIBRARY_PATH
edit of a report in order, simulated here over the fixture's recorded value, keeps every entry some
finding said to keep and every system folder."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

import pytest

from envdoctor.model.findings import Report
from envdoctor.probes.toolkit import ToolkitFacts
from envdoctor.rules.env_edits import (
    cmd_removal,
    is_system_folder,
    path_removal_fixes,
    posix_removal,
    powershell_removal,
    prepend_command,
)
from tests.edit_simulation import apply, literal_set, parse_edit, shell_of
from tests.fixture_support import fixture_names, fixture_report

# --- the interpreter against the writers (so the simulation cannot drift from them) ------------------


def test_the_interpreter_reads_every_writer() -> None:
    value = "/a:/usr/bin:/b:/a:/c"
    _, edit = parse_edit(posix_removal("PATH", ["/b"], True), "posix") or ("", str)
    assert edit(value) == "/a:/usr/bin:/c"
    _, edit = parse_edit(prepend_command("linux", "bash", "PATH", "/x y"), "posix") or ("", str)
    assert edit(value) == "/x y:" + value
    win = "C:\\A\\bin;C:\\Windows;c:\\b\\;C:\\A\\bin;"
    for command, shell in (
        (powershell_removal("Path", ["C:\\B"], True), "powershell"),
        (cmd_removal("Path", ["C:\\B"], True) or "", "cmd"),
    ):
        _, edit = parse_edit(command, shell) or ("", str)
        assert edit(win) == "C:\\A\\bin;C:\\Windows", shell
    _, edit = parse_edit(prepend_command("windows", None, "Path", "C:\\it's"), "powershell") or ("", str)
    assert edit("C:\\x") == "C:\\it's;C:\\x"
    assert literal_set('set "Path=C:\\x"') == ("Path", "C:\\x")
    assert literal_set(posix_removal("PATH", ["/b"], False)) is None


@pytest.mark.skipif(not __import__("shutil").which("bash"), reason="needs bash")
def test_the_posix_removal_does_in_bash_what_the_simulation_does() -> None:
    import subprocess

    value = "/a:/usr/bin:/b c:/a:/it's"
    command = posix_removal("V", ["/b c", "/it's"], True)
    script = f'V={shlex.quote(value)}; {command}; printf %s "$V"'
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=10, check=True)
    _, edit = parse_edit(command, "posix") or ("", str)
    assert out.stdout == edit(value) == "/a:/usr/bin"


def test_removals_are_relative_so_two_findings_compose() -> None:
    """The reviewer's case: two findings each removing one entry; run in order, both are gone (a
    literal snapshot of the second would have put the first back)."""
    path = ("C:\\cuda\\v11.8\\bin", "C:\\Windows", "C:\\cuda\\v12.1\\bin", "C:\\env\\Library\\bin")
    first = path_removal_fixes("windows", None, "Path", path, [0], "(one)")
    second = path_removal_fixes("windows", None, "Path", path, [2], "(two)")
    for shell, position in (("powershell", 0), ("cmd", 1)):
        value = ";".join(path)
        for fixes in (first, second):
            _, edit = parse_edit(fixes[position].commands[0], shell) or ("", str)
            value = edit(value)
        assert value == "C:\\Windows;C:\\env\\Library\\bin", shell


# --- every fixture ----------------------------------------------------------------------------------

_KEEPING = re.compile(r"\(keeping CUDA \S+ at (.+?)\)")
_LEAVE = re.compile(r"^Leave (.+?) on (\w+)[:.]")


@dataclass(frozen=True)
class Recorded:
    shell: str | None
    values: dict[str, tuple[str, ...]]


def _recorded(report: Report) -> Recorded | None:
    for probe in report.probes:
        if isinstance(probe.facts, ToolkitFacts):
            facts = probe.facts
            name = "Path" if report.platform.os == "windows" else "PATH"
            return Recorded(facts.shell, {name: facts.path, "LD_LIBRARY_PATH": facts.ld_library_path})
    return None


def _commands(report: Report) -> list[tuple[str, str]]:
    return [(f.code, c) for f in report.findings for fix in f.fixes for c in fix.commands]


def _said_to_keep(report: Report) -> set[str]:
    keep: set[str] = set()
    for finding in report.findings:
        for fix in finding.fixes:
            keep.update(m.group(1) for m in _KEEPING.finditer(fix.summary))
            if m := _LEAVE.match(fix.summary):
                keep.update(m.group(1).split(", "))
    return keep


@pytest.mark.parametrize("name", fixture_names())
def test_a_reports_edits_compose(name: str) -> None:
    report = fixture_report(name)
    commands = _commands(report)
    shown = [c for _, c in commands]
    assert len(shown) == len(set(shown)), "a command appears twice"
    literal: dict[str, tuple[str, str]] = {}
    for code, command in commands:
        assigned = literal_set(command)
        if assigned is None:
            continue
        variable, value = assigned
        earlier = literal.setdefault(variable.upper(), (code, value))
        # One finding's fixes are ways out ("Or: unset it"): only two findings must agree.
        assert earlier[0] == code or earlier[1] == value, (
            f"{earlier[0]} and {code} set {variable} to different values"
        )
    recorded = _recorded(report)
    if recorded is None:
        return
    keep = _said_to_keep(report)
    windows = report.platform.os == "windows"
    for shell in ("powershell", "cmd") if windows else ("posix",):
        if not windows and recorded.shell == "fish":
            continue
        sep = ";" if windows else ":"
        for variable, entries in recorded.values.items():
            after = apply(shown, shell, variable, sep.join(entries)).split(sep)
            for entry in entries:
                if entry in keep or is_system_folder(report.platform.os, entry):
                    assert entry in after, f"{shell}: {entry} was to stay on {variable}"


def test_the_reviewers_case_keeps_no_entry_another_finding_removes() -> None:
    """ED405 no longer keeps the CUDA 12.1 bin that ED608 removes (its DLLs shadow torch's cu124
    ones), nor the 11.8 one ED409 removes; the edits of all three leave Path without either."""
    report = fixture_report("win11-conda-cuda118-bin-before-env-cu124")
    codes = [f.code for f in report.findings]
    assert {"ED405", "ED409", "ED608"} <= set(codes)
    assert not _said_to_keep(report)
    recorded = _recorded(report)
    assert recorded is not None
    for shell in ("powershell", "cmd"):
        value = ";".join(recorded.values["Path"])
        edits = [parse_edit(c, shell) for _, c in _commands(report) if shell_of(c) == shell]
        applied = [e for e in edits if e is not None and e[0] == "Path"]
        assert len(applied) >= 3, shell  # ED409, ED608 and ED405 each edit Path
        for _, edit in applied:
            value = edit(value)
        assert not any("\\CUDA\\v11.8\\bin" in e or "\\CUDA\\v12.1\\bin" in e for e in value.split(";"))
        assert "C:\\Windows\\system32" in value.split(";")
