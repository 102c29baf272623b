"""Variable edits per shell: one quoting rule each, and the rules' fixes written through them."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from envdoctor.rules.env_edits import (
    cmd_set,
    cmd_unset,
    fish_set,
    fish_unset,
    posix_set,
    posix_unset,
    powershell_set,
    powershell_set_persistent,
    powershell_unset,
    set_command,
    set_variable_fixes,
    unset_command,
)

# Quotes of both kinds, a dollar, a backtick, an ampersand, a space: what each shell must not expand.
AWKWARD = 'it\'s "$HOME" & `x` C:\\dir'


def test_powershell_values_are_single_quoted_literals() -> None:
    assert powershell_set("V", AWKWARD) == "$env:V = 'it''s \"$HOME\" & `x` C:\\dir'"
    assert powershell_set("PIP_INDEX_URL", "https://mirrors.example.org/simple") == (
        "$env:PIP_INDEX_URL = 'https://mirrors.example.org/simple'"  # bare, it would run as a command
    )
    assert powershell_unset("V") == "Remove-Item Env:V"
    assert powershell_set_persistent("V", "1") == "[Environment]::SetEnvironmentVariable('V', '1', 'User')"
    assert powershell_set_persistent("V", None) == "[Environment]::SetEnvironmentVariable('V', $null, 'User')"


def test_cmd_and_fish_writers() -> None:
    assert cmd_set("V", "a b&c") == 'set "V=a b&c"'
    assert cmd_unset("V") == 'set "V="'
    assert fish_set("V", "a b") == "set -gx V 'a b'"
    assert fish_set("PATH", "/a", "/b c") == "set -gx PATH /a '/b c'"
    assert fish_set("V", "1", universal=True) == "set -Ux V 1"
    assert (fish_unset("V"), fish_unset("V", universal=True)) == ("set -e V", "set -e -U V")


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_posix_set_round_trips_through_bash() -> None:
    script = f'{posix_set("V", AWKWARD)}; printf %s "$V"; {posix_unset("V")}; printf %s "${{V-gone}}"'
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=10, check=True)
    assert out.stdout == AWKWARD + "gone"


@pytest.mark.parametrize(
    ("os_name", "shell", "set_text", "unset_text"),
    [
        ("linux", "bash", "export V='a b'", "unset V"),
        ("macos", None, "export V='a b'", "unset V"),
        ("linux", "fish", "set -gx V 'a b'", "set -e V"),
        ("windows", None, "$env:V = 'a b'", "Remove-Item Env:V"),
    ],
)
def test_the_shell_of_the_machine(os_name: str, shell: str | None, set_text: str, unset_text: str) -> None:
    assert set_command(os_name, shell, "V", "a b") == set_text
    assert unset_command(os_name, shell, "V") == unset_text


def test_set_variable_fixes_on_windows_offer_cmd_and_a_persistent_edit() -> None:
    session, persistent = set_variable_fixes("windows", None, "CUDA_HOME", "C:\\CUDA\\v12.4", "(why)")
    assert session.commands == ("$env:CUDA_HOME = 'C:\\CUDA\\v12.4'",)
    assert 'in cmd: set "CUDA_HOME=C:\\CUDA\\v12.4"' in session.summary
    assert persistent.commands == (
        "[Environment]::SetEnvironmentVariable('CUDA_HOME', 'C:\\CUDA\\v12.4', 'User')",
    )
    removed, _ = set_variable_fixes("windows", None, "CUDA_PATH", None, "(gone)")
    assert removed.commands == ("Remove-Item Env:CUDA_PATH",)


def test_set_variable_fixes_for_good_in_bash() -> None:
    _, persistent = set_variable_fixes("linux", "bash", "CUDA_HOME", "/opt/my cuda", "")
    assert persistent.commands == ("echo 'export CUDA_HOME='\"'\"'/opt/my cuda'\"'\"'' >> ~/.bashrc",)


def test_cmd_removal_leaves_out_entries_cmd_would_expand() -> None:
    """`%` expands on a cmd line and `"` would end the quoted PowerShell command: no cmd line then
    (PowerShell's own line still removes them)."""
    from envdoctor.rules.env_edits import cmd_removal, path_removal_fixes

    assert cmd_removal("Path", ["C:\\%TOOLS%\\bin"], False) is None
    assert cmd_removal("Path", ["C:\\tools\\bin"], False) is not None
    fixes = path_removal_fixes("windows", None, "Path", ["C:\\%TOOLS%\\bin", "C:\\Windows"], [0], "(x)")
    assert [f.summary.startswith("The same in a cmd window") for f in fixes] == [False, False]
    assert "-notin @('C:\\%TOOLS%\\bin')" in fixes[0].commands[0]
