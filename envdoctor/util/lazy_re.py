"""A regular expression compiled on first use instead of at import.

Compiling a pattern costs a fraction of a millisecond to a few on a slow CPU; dozens of them at
import were a visible part of `envdoctor install`'s start-up (issue #9), although most runs use
only a few. `Lazy` stands where a module-level `re.compile(...)` stood and answers the same calls.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator


class Lazy:
    """`re.compile(source, flags)`, done the first time the pattern is used."""

    __slots__ = ("_compiled", "flags", "source")

    def __init__(self, source: str, flags: int | re.RegexFlag = 0) -> None:
        self.source = source
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.source, self.flags)
        return self._compiled

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return self.compiled.match(text, pos)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        return self.compiled.fullmatch(text)

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return self.compiled.search(text, pos)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(text)

    def findall(self, text: str) -> list[str]:
        return self.compiled.findall(text)

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str, count: int = 0) -> str:
        return self.compiled.sub(repl, text, count)

    def split(self, text: str) -> list[str]:
        return self.compiled.split(text)
