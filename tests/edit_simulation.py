"""A small interpreter of the variable edits env_edits writes (tests only): a relative edit command
becomes a Python function over the variable's value, so tests can apply a report's edits in order
to a recorded PATH and see what is left."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence

# --- a small interpreter of the edit commands env_edits writes ---------------------------------------

Edit = Callable[[str], str]

_POSIX_REMOVAL = re.compile(
    r"""export (\w+)="\$\(printf '%s' "\$\1" \| tr ':' '\\n'"""
    r"""(?: \| grep -vxF (?P<grep>.*?))?(?P<uniq> \| awk '!seen\[\$0\]\+\+')? \| paste -sd: -\)"$"""
)
_POSIX_PREPEND = re.compile(r"""export (\w+)=(.+):"\$\1"$""")
_PS_FILTER = (
    r"""\(\(\$env:(?P<var>\w+) -split ';'\) \| Where-Object \{ (?P<keep>.*?) \}"""
    r"""(?P<uniq> \| Select-Object -Unique)?\) -join ';'"""
)
_PS_REMOVAL = re.compile(rf"\$env:(\w+) = {_PS_FILTER}$")
_PS_PREPEND = re.compile(r"\$env:(\w+) = '((?:[^']|'')*)' \+ \$env:\1$")
_CMD_REMOVAL = re.compile(
    rf"""for /f "delims=" %p in \('powershell -NoProfile -Command "{_PS_FILTER}"'\) do @set "(\w+)=%p"$"""
)
_PS_ITEM = re.compile(r"'((?:[^']|'')*)'")
# Assignments of a literal value (an unset assigns ""), in the three shells, for this session or for
# good: (pattern, how its value is quoted).
_LITERALS = (
    (re.compile(r"""export (\w+)=(.*)$"""), "posix"),
    (re.compile(r"""unset (\w+)()$"""), "posix"),
    (re.compile(r"""\$env:(\w+) = '((?:[^']|'')*)'$"""), "powershell"),
    (re.compile(r"""Remove-Item Env:(\w+)()$"""), "powershell"),
    (
        re.compile(r"""\[Environment\]::SetEnvironmentVariable\('(\w+)', '((?:[^']|'')*)', '\w+'\)$"""),
        "powershell",
    ),
    (re.compile(r"""\[Environment\]::SetEnvironmentVariable\('(\w+)', \$null(), '\w+'\)$"""), "powershell"),
    (re.compile(r"""set "(\w+)=(.*)"$"""), "cmd"),
)


def _unquote(value: str, quoting: str) -> str:
    if quoting == "posix":
        words = shlex.split(value)
        return words[0] if words else ""
    return value.replace("''", "'") if quoting == "powershell" else value


def _unique(entries: list[str]) -> list[str]:
    return list(dict.fromkeys(entries))


def _posix_filter(whole: list[str], uniq: bool) -> Edit:
    def edit(value: str) -> str:
        entries = [e for e in value.split(":") if e not in whole]
        return ":".join(_unique(entries) if uniq else entries)

    return edit


def _windows_filter(keep: str, uniq: bool) -> Edit:
    whole = {m.group(1).replace("''", "'").lower() for m in _PS_ITEM.finditer(keep.split("@(", 1)[-1])}
    if keep != "$_":
        assert keep.startswith("$_ -and $_.TrimEnd('\\') -notin @("), keep

    def edit(value: str) -> str:
        entries = [e for e in value.split(";") if e and (keep == "$_" or e.rstrip("\\").lower() not in whole)]
        return ";".join(_unique(entries) if uniq else entries)

    return edit


def parse_edit(command: str, shell: str) -> tuple[str, Edit] | None:
    """(variable, edit) for a relative edit command of `shell` ("posix", "powershell", "cmd")."""
    if shell == "posix":
        if m := _POSIX_REMOVAL.match(command):
            whole = shlex.split(m.group("grep") or "")[1::2]  # "-e X -e Y"
            return m.group(1), _posix_filter(whole, bool(m.group("uniq")))
        if m := _POSIX_PREPEND.match(command):
            entry = shlex.split(m.group(2))[0]
            return m.group(1), lambda value: f"{entry}:{value}"
    if shell == "powershell":
        if m := _PS_REMOVAL.match(command):
            assert m.group(1) == m.group("var")
            return m.group(1), _windows_filter(m.group("keep"), bool(m.group("uniq")))
        if m := _PS_PREPEND.match(command):
            entry = m.group(2).replace("''", "'")
            return m.group(1), lambda value: f"{entry}{value}"
    if shell == "cmd" and (m := _CMD_REMOVAL.match(command)):
        assert m.group(4) == m.group("var")
        return m.group("var"), _windows_filter(m.group("keep"), bool(m.group("uniq")))
    return None


def literal_set(command: str) -> tuple[str, str] | None:
    """(variable, value) for a command that assigns a literal value (not a relative edit)."""
    if any(parse_edit(command, shell) for shell in ("posix", "powershell", "cmd")):
        return None
    for pattern, quoting in _LITERALS:
        if m := pattern.match(command):
            return m.group(1), _unquote(m.group(2), quoting)
    return None


def shell_of(command: str) -> str:
    if command.startswith("for /f") or command.startswith('set "'):
        return "cmd"
    return "powershell" if command.startswith("$env:") else "posix"


def apply(commands: Sequence[str], shell: str, variable: str, value: str) -> str:
    """`value` after every edit of `variable` among `commands` written for `shell`, in order."""
    for command in commands:
        if shell_of(command) != shell:
            continue
        edit = parse_edit(command, shell)
        if edit is not None and edit[0] == variable:
            value = edit[1](value)
    return value
