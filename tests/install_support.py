"""Shared by the install tests: parse an install command into what makes two commands equivalent."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from envdoctor.install.commands import Command, render_command
from envdoctor.shell import Shell

_INDEX_OPTIONS = {"--index-url": "--index-url", "-i": "--index-url", "--extra-index-url": "--extra-index-url"}
_LINK_OPTIONS = {"-f": "-f", "--find-links": "-f"}


@dataclass(frozen=True)
class CommandShape:
    manager: str  # "pip" or "conda"
    packages: dict[str, str | None]  # name -> pin ("2.5.1", "2.5.1+cu121"), None when unpinned
    indexes: tuple[tuple[str, str], ...]  # (option, url), in order
    channels: tuple[str, ...]
    extras: tuple[str, ...]  # conda's pytorch-cuda=12.1 / cudatoolkit=11.6 / cpuonly


def parse_command(command: str) -> CommandShape:
    words = shlex.split(command)
    if words[0] == "conda":
        return _parse_conda(words)
    start = words.index("install") + 1
    packages: dict[str, str | None] = {}
    indexes: list[tuple[str, str]] = []
    i = start
    while i < len(words):
        word = words[i]
        if word in _INDEX_OPTIONS or word in _LINK_OPTIONS:
            option = _INDEX_OPTIONS.get(word) or _LINK_OPTIONS[word]
            indexes.append((option, words[i + 1].rstrip("/")))
            i += 2
            continue
        if word.startswith("-"):
            raise ValueError(f"unexpected option {word} in {command!r}")
        name, _, pin = word.partition("==")
        packages[name] = pin or None
        i += 1
    return CommandShape("pip", packages, tuple(indexes), (), ())


def _parse_conda(words: list[str]) -> CommandShape:
    packages: dict[str, str | None] = {}
    channels: list[str] = []
    extras: list[str] = []
    i = words.index("install") + 1
    while i < len(words):
        word = words[i]
        if word == "-c":
            channels.append(words[i + 1])
            i += 2
            continue
        if "==" in word:
            name, _, pin = word.partition("==")
            packages[name] = pin
        else:
            extras.append(word)  # pytorch-cuda=12.1, cudatoolkit=11.6, cpuonly
        i += 1
    return CommandShape("conda", packages, (), tuple(channels), tuple(extras))


def text(command: Command, shell: Shell = Shell.POSIX) -> str:
    """A planned command as the report prints it for `shell` (POSIX unless a test says otherwise)."""
    return render_command(command, shell)
