"""Copy-pasteable commands: quoting arguments for the user's shell."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

_WINDOWS_SAFE = re.compile(r"^[A-Za-z0-9_\-+=.,:/\\]+$")


def quote(arg: str, os_name: str) -> str:
    if os_name == "windows":
        return arg if _WINDOWS_SAFE.match(arg) else '"' + arg.replace('"', '\\"') + '"'
    return shlex.quote(arg)


def join(argv: Sequence[str], os_name: str) -> str:
    return " ".join(quote(a, os_name) for a in argv)


_WINDOWS_WORD = re.compile(r'"((?:[^"\\]|\\.)*)"|(\S+)')


def split(command: str, os_name: str) -> tuple[str, ...]:
    """The arguments of a command `join` wrote for `os_name` (its inverse); ValueError if unbalanced."""
    if os_name != "windows":
        return tuple(shlex.split(command))
    words = []
    for match in _WINDOWS_WORD.finditer(command):
        quoted, bare = match.groups()
        words.append(bare if bare is not None else quoted.replace('\\"', '"'))
    return tuple(words)
