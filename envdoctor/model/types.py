"""The shared types the host seam, the interpreter choice and the knowledge tables need: TextEnum,
PlatformInfo, Interpreter. model.py re-exports them; they live apart so that `envdoctor install`
loads them without the findings and reports vocabulary (start-up, issue #9)."""

from __future__ import annotations

import enum
from typing import TypeVar

from envdoctor.util.records import record

_E = TypeVar("_E", bound="TextEnum")


class TextEnum(str, enum.Enum):
    """A state or kind that travels as text: its JSON and its words are the value ("too_old").

    A plain (str, Enum) formats as "Kind.TOO_OLD" in f-strings; findings quote these values, so
    str() and format() give the value on every supported Python.
    """

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    @classmethod
    def parse(cls: type[_E], value: object, default: _E) -> _E:
        """The member whose value is `value`; `default` for anything else (a child's raw record)."""
        for member in cls:
            if member.value == value:
                return member
        return default


@record
class StaleVariable:
    """An activation variable ($VIRTUAL_ENV, $CONDA_PREFIX) naming a folder with no Python in it."""

    variable: str
    path: str
    exists: bool  # the folder is there, without an interpreter; else it is gone


@record
class Interpreter:
    """The Python environment being examined and why that one was chosen."""

    path: str
    reason: str
    # Activation variables passed over because their environment is gone (rule ED004).
    stale: tuple[StaleVariable, ...] = ()
    # envdoctor's own isolated environment (a pipx or uv tool install, or any without torch),
    # examined only because no project environment was found: no fix installs torch into it.
    own_isolated: bool = False


@record
class PlatformInfo:
    system: str  # "Linux", "Windows", "Darwin"
    release: str
    version: str
    machine: str  # "x86_64", "AMD64", "arm64", "aarch64"

    @property
    def os(self) -> str:
        """The short OS name used across the knowledge base: linux, windows or macos."""
        return {"Linux": "linux", "Windows": "windows", "Darwin": "macos"}.get(
            self.system, self.system.lower()
        )
