"""Copy-pasteable commands: an argument list rendered for the user's shell, in one place.

Commands travel as argument lists (`install.commands.Command`) and become text only here, at the
edge: the report renderers and every Fix's command text call `render`. One quoting rule per shell:
- POSIX sh (bash, zsh, fish for plain words): shlex.quote, single quotes;
- cmd: the Microsoft C runtime's rule, double quotes around an argument that needs them, `\\"`
  inside. This is what envdoctor printed for Windows before, so reports keep their strings, and
  PowerShell reads it the same way unless the program itself is quoted;
- PowerShell: single quotes with '' inside (double quotes would expand $ and backticks), and the call
  operator `&` in front when the program is a quoted path, without which PowerShell prints the
  string instead of running it.
"""

from __future__ import annotations

import enum
import shlex
from collections.abc import Sequence

from envdoctor.util.lazy_re import Lazy

_WINDOWS_SAFE = Lazy(r"^[A-Za-z0-9_\-+=.,:/\\]+$")


class Shell(str, enum.Enum):
    POSIX = "posix"
    CMD = "cmd"
    POWERSHELL = "powershell"


def default_shell(os_name: str) -> Shell:
    """The shell a report for `os_name` writes its commands for."""
    return Shell.CMD if os_name == "windows" else Shell.POSIX


def quote_for(arg: str, shell: Shell) -> str:
    if shell is Shell.POSIX:
        return shlex.quote(arg)
    if _WINDOWS_SAFE.match(arg):
        return arg
    if shell is Shell.POWERSHELL:
        return "'" + arg.replace("'", "''") + "'"
    return '"' + arg.replace('"', '\\"') + '"'


def render(argv: Sequence[str], shell: Shell) -> str:
    """The one function that turns an argument list into a command line."""
    words = [quote_for(a, shell) for a in argv]
    if shell is Shell.POWERSHELL and words and words[0] != argv[0]:
        words.insert(0, "&")
    return " ".join(words)


def quote(arg: str, os_name: str) -> str:
    """One argument quoted for the default shell of `os_name` (for commands written as text)."""
    return quote_for(arg, default_shell(os_name))


def join(argv: Sequence[str], os_name: str) -> str:
    """`render` for the default shell of `os_name`."""
    return render(argv, default_shell(os_name))


_WINDOWS_WORD = Lazy(r'"((?:[^"\\]|\\.)*)"|(\S+)')


def split(command: str, os_name: str) -> tuple[str, ...]:
    """The arguments of a command `join` wrote for `os_name` (its inverse; cmd's quoting on Windows);
    ValueError if unbalanced."""
    if os_name != "windows":
        return tuple(shlex.split(command))
    words = []
    for match in _WINDOWS_WORD.finditer(command):
        quoted, bare = match.groups()
        words.append(bare if bare is not None else quoted.replace('\\"', '"'))
    return tuple(words)
