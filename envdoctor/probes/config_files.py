"""Parsers for the configuration files package managers read: pip's INI, conda's YAML, uv's TOML.

Each parser takes text and returns plain values with line numbers, or raises ConfigSyntaxError
naming the line, so a malformed file becomes a fact ("line 3: ...") and never a traceback. Error
messages never quote the offending line: it may hold a password. The mirrors probe turns these
values into typed facts at once.

YAML is read by ruamel.yaml, the library conda itself uses, imported only when a .condarc exists.
"""

from __future__ import annotations

from typing import Any

from envdoctor.util.lazy_re import Lazy
from envdoctor.util.records import record


class ConfigSyntaxError(Exception):
    """A file its tool cannot parse; `line` is 1-based when known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


# ---------------------------------------------------------------------------------------------
# INI (pip.conf / pip.ini)


@record
class IniOption:
    section: str
    key: str  # as written, lower-cased by configparser
    value: str
    line: int | None


_INI_HEADER = Lazy(r"^\s*\[(?P<name>[^\]]+)\]")
_INI_OPTION = Lazy(r"^(?P<key>[^\s=:#;][^=:]*?)\s*[=:]")


def _option_lines(text: str) -> dict[tuple[str, str], int]:
    """Where each option starts: configparser keeps no line numbers, findings need them."""
    lines: dict[tuple[str, str], int] = {}
    section = None
    for number, raw in enumerate(text.splitlines(), start=1):
        header = _INI_HEADER.match(raw)
        if header:
            section = header.group("name")
            continue
        if section is None or raw[:1].isspace():
            continue
        option = _INI_OPTION.match(raw)
        if option:
            lines.setdefault((section, option.group("key").strip().lower()), number)
    return lines


def parse_ini(text: str) -> tuple[IniOption, ...]:
    """Every option of every section, parsed exactly as pip parses (RawConfigParser, strict)."""
    import configparser  # here, not at the top: `explain` and `rules` never parse a file

    parser = configparser.RawConfigParser()
    try:
        parser.read_string(text)
    except configparser.MissingSectionHeaderError as exc:
        raise ConfigSyntaxError(
            "a setting comes before any [section] header (pip expects [global] or [install])",
            exc.lineno,
        ) from None
    except configparser.ParsingError as exc:
        line = exc.errors[0][0] if exc.errors else None
        raise ConfigSyntaxError("not a `key = value` line", line) from None
    except configparser.DuplicateOptionError as exc:
        message = f"option {exc.option!r} appears twice in [{exc.section}]"
        raise ConfigSyntaxError(message, exc.lineno) from None
    except configparser.DuplicateSectionError as exc:
        raise ConfigSyntaxError(f"section [{exc.section}] appears twice", exc.lineno) from None
    except configparser.Error as exc:
        raise ConfigSyntaxError(str(exc).splitlines()[0]) from None
    lines = _option_lines(text)
    return tuple(
        IniOption(section, key, value, lines.get((section, key)))
        for section in parser.sections()
        for key, value in parser.items(section)
    )


# ---------------------------------------------------------------------------------------------
# TOML (uv.toml / pyproject.toml)

_TOML_LINE = Lazy(r"line (\d+)")


def parse_toml(text: str) -> dict[str, Any]:
    try:
        import tomllib  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = _TOML_LINE.search(str(exc))
        message = _TOML_LINE.sub("", str(exc)).replace("(at , column", "(column").strip()
        raise ConfigSyntaxError(message, int(found.group(1)) if found else None) from None
    except ValueError as exc:  # an integer of 4,300+ digits
        raise ConfigSyntaxError(str(exc), None) from None
    except RecursionError:  # arrays or tables nested thousands deep
        raise ConfigSyntaxError("nested too deeply", None) from None
    return data


# ---------------------------------------------------------------------------------------------
# YAML (.condarc)
#
# conda reads .condarc with ruamel.yaml's round-trip loader (conda/common/serialize.py,
# yaml_round_trip_load), so envdoctor reads it with the same library and mode: YAML 1.2 scalars,
# anchors, aliases and merge keys, a leading BOM skipped, duplicate keys rejected as conda rejects
# them. The import happens here, on the first .condarc found, never at start-up.


@record
class YamlDoc:
    values: dict[str, Any]  # the top-level mapping; nested values as the parser built them
    lines: dict[str, int]  # top-level key -> the line it is on (absent for keys merged in with <<)


# The parser's problem texts, in words a user can act on. The library's own text is kept only as
# a fallback, with quoted values cut out: its duplicate-key message quotes both values, and a
# value may hold a token.
_PROBLEMS = (
    ("found character '\\t'", "a tab indents or separates here; YAML allows only spaces"),
    ("mapping values are not allowed", "a `key: value` where none is allowed (check the indentation)"),
    ("expected <block end>", "unexpected indentation, or a list item where a `key: value` entry belongs"),
    ("could not find expected ':'", "expected a `key: value` line"),
    ("found undefined alias", "an alias (*name) that no anchor (&name) defines"),
    ("found unexpected end of stream", "a quoted string is not closed before the end of the file"),
    ("expected ',' or ']'", "a [flow list] is not closed with ]"),
    ("expected ',' or '}'", "a {flow mapping} is not closed with }"),
    ("but found another document", "a second YAML document (---); conda reads only one"),
    ("found unknown escape character", "an unknown \\ escape in a double-quoted string"),
)
_DUPLICATE = Lazy(r'found duplicate key "([\w.-]{1,60})"')
_QUOTED = Lazy(r"""(['"])(?!<)[^'"]{2,}\1""")


def _problem_words(problem: str | None) -> str:
    text = problem or "not valid YAML"
    duplicate = _DUPLICATE.search(text)
    if duplicate:
        return f"duplicate key {duplicate.group(1)!r}"
    if text.startswith("found duplicate key"):
        return "a key appears twice"
    for needle, words in _PROBLEMS:
        if needle in text:
            return words
    return _QUOTED.sub("'…'", text.strip().splitlines()[0])


def _first_content_line(text: str) -> int:
    for number, raw in enumerate(text.splitlines(), start=1):
        body = raw.strip().lstrip("\ufeff")
        if body and not body.startswith("#") and body != "---":
            return number
    return 1


# conda files nest two levels deep. The pure-Python scanner slows down quadratically with flow
# nesting ([[[[...), so a deeper file is a finding before the parser sees it, not a stalled probe.
_MAX_FLOW_DEPTH = 64


def _flow_depth(text: str) -> int:
    """The deepest nesting of [ and { (quotes not considered: only an upper bound matters)."""
    depth = deepest = 0
    for char in text:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}" and depth:
            depth -= 1
    return deepest


def _load(text: str) -> Any:
    """The document as ruamel.yaml's round-trip loader builds it; ConfigSyntaxError otherwise."""
    import warnings

    if _flow_depth(text) > _MAX_FLOW_DEPTH:
        raise ConfigSyntaxError(f"lists or mappings nested more than {_MAX_FLOW_DEPTH} deep", None)

    from ruamel.yaml import YAML  # here, not at the top: only a .condarc that exists needs it
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        with warnings.catch_warnings():
            # A reused anchor only warns (conda accepts it); the warning must not reach the console.
            warnings.simplefilter("ignore")
            return YAML(typ="rt").load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at_end = any(words in str(exc.problem) for words in ("<stream end>", "end of stream"))
        if at_end and exc.context_mark is not None:
            # A list or string left open is found at the end of the file; where it opened is
            # the line to correct.
            mark = exc.context_mark
        raise ConfigSyntaxError(_problem_words(exc.problem), mark.line + 1 if mark else None) from None
    except YAMLError as exc:  # ReaderError: a character YAML does not allow at all
        position = getattr(exc, "position", None)
        line = text[:position].count("\n") + 1 if isinstance(position, int) else None
        character = getattr(exc, "character", None)
        code = f" (U+{character:04X})" if isinstance(character, int) else ""
        raise ConfigSyntaxError(f"a control character YAML does not allow{code}", line) from None
    except RecursionError:  # block nesting by indentation, which the depth check does not count
        raise ConfigSyntaxError(f"lists or mappings nested more than {_MAX_FLOW_DEPTH} deep", None) from None


def parse_yaml(text: str) -> YamlDoc:
    """The top-level mapping of a .condarc; ConfigSyntaxError (with its line) on what conda rejects."""
    data = _load(text)
    if data is None:  # empty, or comments only
        return YamlDoc({}, {})
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else "a single value"
        message = f"the file is {kind}; expected `key: value` settings"
        raise ConfigSyntaxError(message, _first_content_line(text))
    positions = getattr(getattr(data, "lc", None), "data", {})
    values: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for key, value in data.items():
        if not isinstance(key, str):
            continue  # `? [a, b] : c` and `1: x` name no setting conda knows
        values[key] = value
        position = positions.get(key)
        if position:
            lines[key] = int(position[0]) + 1
    return YamlDoc(values, lines)
