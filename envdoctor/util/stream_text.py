"""Text for an output stream that cannot encode everything (issue 13 item 14).

`envdoctor report > report.md` on Windows writes cp1252; PYTHONIOENCODING=ascii or a C locale gives
ASCII. Every command must still print: the glyphs envdoctor uses get ASCII stand-ins (an error
handler installed on stdout and stderr at start-up), and machine-readable output keeps its data
exactly by escaping what the stream cannot hold (JSON \\uXXXX, XML &#N;) instead.
Imported by the lean start-up path: the standard library only.
"""

from __future__ import annotations

import codecs
import contextlib
import sys
import unicodedata
from typing import TextIO

HANDLER = "envdoctor-ascii"

# Stand-ins for the glyphs envdoctor prints; everything else loses its accents or becomes "?".
GLYPHS = {
    "·": "-",
    "✓": "ok",
    "✔": "ok",
    "✗": "x",
    "✘": "x",
    "→": "->",
    "←": "<-",
    "⇒": "=>",
    "…": "...",
    "—": "--",
    "–": "-",
    "•": "*",
    "‘": "'",
    "’": "'",
    "“": '"',
    "”": '"',
    "≥": ">=",
    "≤": "<=",
    "×": "x",
    "✅": "[ok]",
    "❌": "[x]",
    "⚠": "!",
    "ℹ": "i",
    "️": "",  # variation selector after an emoji
    "│": "|",
    "┃": "|",
    "─": "-",
    "━": "-",
    "╭": "+",
    "╮": "+",
    "╰": "+",
    "╯": "+",
    "┌": "+",
    "┐": "+",
    "└": "+",
    "┘": "+",
    "├": "+",
    "┤": "+",
    "┬": "+",
    "┴": "+",
    "┼": "+",
    "⠋": "-",
    "\u00a0": " ",
}


def ascii_stand_in(char: str) -> str:
    if char in GLYPHS:
        return GLYPHS[char]
    plain = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode("ascii")
    return plain or "?"


def _fallback(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    bad = error.object[error.start : error.end]
    return "".join(ascii_stand_in(c) for c in bad), error.end


codecs.register_error(HANDLER, _fallback)


def _encoding(stream: TextIO) -> str:
    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "utf-8").name
    except LookupError:
        return "ascii"


def protect(stream: TextIO) -> None:
    """Give `stream` the stand-ins when it does not write UTF-8 (a TextIOWrapper only)."""
    if _encoding(stream).startswith("utf-") or not hasattr(stream, "reconfigure"):
        return
    # A closed or detached stream: nothing will be written there anyway.
    with contextlib.suppress(ValueError, OSError):
        stream.reconfigure(errors=HANDLER)


def protect_standard_streams() -> None:
    protect(sys.stdout)
    protect(sys.stderr)


def for_stream(text: str, stream: TextIO) -> str:
    """JSON and XML whose characters the stream cannot encode, escaped in their own syntax, so the
    data survives; other text is left to the stream's stand-ins."""
    encoding = _encoding(stream)
    if encoding.startswith("utf-"):
        return text
    try:
        text.encode(encoding)
        return text
    except UnicodeEncodeError:
        pass
    head = text.lstrip()[:5]
    if head.startswith("<?xml") or head.startswith("<"):
        return text.encode(encoding, "xmlcharrefreplace").decode(encoding)
    if head.startswith(("{", "[")):
        return "".join(c if _fits(c, encoding) else _json_escape(c) for c in text)
    return text


def _fits(char: str, encoding: str) -> bool:
    try:
        char.encode(encoding)
        return True
    except UnicodeEncodeError:
        return False


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
