"""Commands are argument lists, made text by one function per shell at the edge (issue 9, item 3)."""

from __future__ import annotations

from envdoctor.install.commands import Command, CommandKind, command_text, render_command
from envdoctor.shell import Shell, default_shell, join, render

ARGV = (
    "C:\\Program Files\\Python312\\python.exe",
    "-m",
    "pip",
    "install",
    "torch==2.5.1",
    "--index-url",
    "https://h/x",
)


def test_each_shell_has_one_quoting_rule() -> None:
    assert render(ARGV, Shell.CMD) == (
        '"C:\\Program Files\\Python312\\python.exe" -m pip install torch==2.5.1 --index-url https://h/x'
    )
    # PowerShell needs the call operator before a quoted program, and single quotes never expand $
    assert render(ARGV, Shell.POWERSHELL) == (
        "& 'C:\\Program Files\\Python312\\python.exe' -m pip install torch==2.5.1 --index-url https://h/x"
    )
    assert render(("/opt/my env/bin/python", "-c", "print('$HOME')"), Shell.POSIX) == (
        "'/opt/my env/bin/python' -c 'print('\"'\"'$HOME'\"'\"')'"
    )
    assert render(("python", "it's $x"), Shell.POWERSHELL) == "python 'it''s $x'"


def test_reports_keep_their_strings() -> None:
    # Windows reports have always printed the cmd form; everything else the POSIX one.
    assert default_shell("windows") is Shell.CMD and default_shell("linux") is Shell.POSIX
    assert join(ARGV, "windows") == render(ARGV, Shell.CMD)
    command = Command(ARGV, "pip")
    assert command_text(command, "windows") == render_command(command, Shell.CMD)


def test_a_pyproject_snippet_is_pasted_as_is() -> None:
    snippet = Command((), "uv", CommandKind.PYPROJECT, '[[tool.uv.index]]\nname = "x"')
    assert render_command(snippet, Shell.POWERSHELL) == '[[tool.uv.index]]\nname = "x"'
