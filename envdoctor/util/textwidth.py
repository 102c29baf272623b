"""Plain text fitted to the reader's terminal, for the quick commands (`rules`, `explain`, `install`)
that print without rich: how wide the terminal is, and greedy word wrapping with a hanging indent.
No imports beyond os and sys (the lean path's start-up budget; textwrap would pull in re)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TextIO

DEFAULT_WIDTH = 80  # a pipe or file: the width of a classic terminal, a table still fits it
MIN_WIDTH = 40  # narrower than this, text columns would hold a word or two per line


def terminal_width(environ: Mapping[str, str], stream: TextIO | None = None) -> int | None:
    """COLUMNS when it is a sane number, else the terminal's width when `stream` is one, else None."""
    value = environ.get("COLUMNS", "").strip()
    if value.isascii() and value.isdigit() and len(value) <= 4 and int(value) > 0:
        return max(MIN_WIDTH, int(value))
    stream = sys.stdout if stream is None else stream
    try:
        if stream.isatty():
            return max(MIN_WIDTH, os.get_terminal_size(stream.fileno()).columns)
    except (AttributeError, OSError, ValueError):  # not a real file, or closed
        pass
    return None


def wrap(text: str, width: int) -> list[str]:
    """`text` as lines of at most `width` characters, broken between words only; a word longer
    than `width` (a URL, a path) stands alone on its line, whole."""
    lines: list[str] = []
    current = ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current or not lines:
        lines.append(current)
    return lines


def hanging(text: str, width: int, first: str, rest: str) -> str:
    """`text` wrapped after the prefix `first`, its further lines after `rest` (a hanging indent)."""
    body = wrap(text, max(10, width - max(len(first), len(rest))))
    return "\n".join((first if number == 0 else rest) + line for number, line in enumerate(body))
