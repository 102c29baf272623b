"""Parsers for the configuration files package managers read: pip's INI, conda's YAML, uv's TOML.

Each parser takes text and returns plain values with line numbers, or raises ConfigSyntaxError
naming the line, so a malformed file becomes a fact ("line 3: ...") and never a traceback. Error
messages never quote the offending line: it may hold a password. The mirrors probe turns these
values into typed facts at once.

The YAML parser is deliberately small: .condarc files are flat mappings of scalars, lists and one
level of nested mappings, and envdoctor should not pull a YAML library into every install for that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Union


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


@dataclass(frozen=True)
class IniOption:
    section: str
    key: str  # as written, lower-cased by configparser
    value: str
    line: int | None


_INI_HEADER = re.compile(r"^\s*\[(?P<name>[^\]]+)\]")
_INI_OPTION = re.compile(r"^(?P<key>[^\s=:#;][^=:]*?)\s*[=:]")


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

_TOML_LINE = re.compile(r"line (\d+)")


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
# A YAML subset (.condarc)

YamlValue = Union[str, None, "list[Any]", "dict[str, Any]"]
_NULLS = {"", "~", "null", "Null", "NULL"}


@dataclass(frozen=True)
class YamlDoc:
    values: dict[str, Any]  # the top-level mapping: str | None | list | dict values
    lines: dict[str, int]  # top-level key -> the line it is on


@dataclass(frozen=True)
class _Line:
    number: int
    indent: int
    text: str  # comment and trailing blanks removed


def _strip_comment(raw: str, number: int) -> str:
    """The line without a `#` comment; quotes protect a `#`, as in YAML."""
    quote = None
    for i, char in enumerate(raw):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"" and (i == 0 or raw[i - 1] in " \t:-[{,"):
            quote = char
        elif char == "#" and (i == 0 or raw[i - 1] in " \t"):
            return raw[:i].rstrip()
    return raw.rstrip()


def _lines(text: str) -> list[_Line]:
    found = []
    for number, raw in enumerate(text.splitlines(), start=1):
        body = raw.lstrip(" ")
        if body.startswith("\t"):
            raise ConfigSyntaxError("a tab indents this line; YAML allows only spaces", number)
        content = _strip_comment(body, number)
        if not content or content in ("---", "..."):
            continue
        found.append(_Line(number, len(raw) - len(body), content))
    return found


def _unquote(text: str, number: int) -> str | None:
    text = text.strip()
    if text[:1] in ("'", '"'):
        quote = text[0]
        if len(text) < 2 or text[-1] != quote:
            raise ConfigSyntaxError(f"unterminated {quote}-quoted string", number)
        inner = text[1:-1]
        if quote == "'":
            return inner.replace("''", "'")
        return inner.replace('\\"', '"').replace("\\\\", "\\")
    if text[:1] in ("&", "*", "!") and " " in text:
        text = text.split(" ", 1)[1].strip()  # an anchor or tag before a plain value
    return None if text in _NULLS else text


def _split_key(text: str, number: int) -> tuple[str, str] | None:
    """("key", "rest") for `key: rest` or `key:`; None when the line is not a mapping entry."""
    if text[:1] in ("'", '"'):
        end = text.find(text[0], 1)
        if end < 0:
            raise ConfigSyntaxError(f"unterminated {text[0]}-quoted key", number)
        rest = text[end + 1 :].lstrip()
        if not rest.startswith(":"):
            return None
        return text[1:end], rest[1:].strip()
    for i, char in enumerate(text):
        if char == ":" and (i + 1 == len(text) or text[i + 1] in " \t"):
            return text[:i].strip(), text[i + 1 :].strip()
        if char in "[{" and i == 0:
            return None
    return None


def _split_flow(body: str, number: int) -> list[str]:
    items, depth, quote, current = [], 0, None, ""
    for char in body:
        if quote:
            current += char
            if char == quote:
                quote = None
            continue
        if char in "'\"":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(current.strip())
            current = ""
            continue
        current += char
    if quote:
        raise ConfigSyntaxError(f"unterminated {quote}-quoted string", number)
    if current.strip():
        items.append(current.strip())
    return items


def _flow(text: str, number: int) -> YamlValue:
    text = text.strip()
    if text.startswith("["):
        if not text.endswith("]"):
            raise ConfigSyntaxError("a [flow list] is not closed with ]", number)
        return [_flow(item, number) for item in _split_flow(text[1:-1], number)]
    if text.startswith("{"):
        if not text.endswith("}"):
            raise ConfigSyntaxError("a {flow mapping} is not closed with }", number)
        mapping: dict[str, Any] = {}
        for item in _split_flow(text[1:-1], number):
            pair = _split_key(item, number)
            if pair is None:
                raise ConfigSyntaxError("an entry of a {flow mapping} is not `key: value`", number)
            mapping[pair[0]] = _flow(pair[1], number) if pair[1] else None
        return mapping
    return _unquote(text, number)


def _balanced(text: str) -> bool:
    depth, quote = 0, None
    for char in text:
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
    return depth <= 0


class _YamlParser:
    def __init__(self, text: str) -> None:
        self.lines = _lines(text)
        self.pos = 0

    def _inline(self, rest: str, line: _Line, parent_indent: int) -> YamlValue:
        """The value after `key:` or `- ` on `line`, reading on for nested blocks and flows."""
        if rest.startswith(("[", "{")):
            while not _balanced(rest):
                if self.pos >= len(self.lines):
                    raise ConfigSyntaxError("a [flow] value is not closed before the end", line.number)
                rest += " " + self.lines[self.pos].text.strip()
                self.pos += 1
            return _flow(rest, line.number)
        if rest in ("|", ">", "|-", ">-", "|+", ">+"):
            parts = []
            while self.pos < len(self.lines) and self.lines[self.pos].indent > parent_indent:
                parts.append(self.lines[self.pos].text.strip())
                self.pos += 1
            return ("\n" if rest.startswith("|") else " ").join(parts)
        if rest and not rest.startswith(("&", "!")):
            return _unquote(rest, line.number)
        if rest:  # an anchor or tag alone: the value follows as a block
            rest = ""
        if self.pos < len(self.lines):
            following = self.lines[self.pos]
            nested = following.indent > parent_indent or (
                following.indent == parent_indent and following.text.startswith("-")
            )
            if nested:
                return self.block(following.indent)
        return None

    def block(self, indent: int) -> YamlValue:
        first = self.lines[self.pos]
        if first.text == "-" or first.text.startswith("- "):
            return self._sequence(indent)
        return self._mapping(indent)[0]

    def _sequence(self, indent: int) -> list[Any]:
        items: list[Any] = []
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            if line.indent < indent:
                break
            if line.indent > indent:
                raise ConfigSyntaxError("unexpected indentation inside a list", line.number)
            if not (line.text == "-" or line.text.startswith("- ")):
                break
            self.pos += 1
            rest = line.text[1:].strip()
            pair = _split_key(rest, line.number) if rest and rest[0] not in "[{'\"" else None
            if pair is not None:
                # `- key: value`: a mapping item; its further keys sit under the key's column.
                column = indent + (len(line.text) - len(rest))
                self.pos -= 1
                self.lines[self.pos] = _Line(line.number, column, rest)
                items.append(self._mapping(column)[0])
            else:
                items.append(self._inline(rest, line, indent))
        return items

    def _mapping(self, indent: int) -> tuple[dict[str, Any], dict[str, int]]:
        mapping: dict[str, Any] = {}
        lines: dict[str, int] = {}
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            if line.indent < indent:
                break
            if line.indent > indent:
                raise ConfigSyntaxError("unexpected indentation", line.number)
            if line.text.startswith("- ") or line.text == "-":
                raise ConfigSyntaxError("a list item where a `key: value` entry was expected", line.number)
            pair = _split_key(line.text, line.number)
            if pair is None:
                raise ConfigSyntaxError("expected a `key: value` line", line.number)
            key, rest = pair
            if key in mapping:
                raise ConfigSyntaxError(f"duplicate key {key!r}", line.number)
            self.pos += 1
            mapping[key] = self._inline(rest, line, indent)
            lines[key] = line.number
        return mapping, lines

    def document(self) -> YamlDoc:
        if not self.lines:
            return YamlDoc({}, {})
        first = self.lines[0]
        if first.text.startswith("- ") or first.text == "-" or first.text.startswith("["):
            raise ConfigSyntaxError("the file is a list; expected `key: value` settings", first.number)
        values, lines = self._mapping(first.indent)
        if self.pos < len(self.lines):
            raise ConfigSyntaxError("unexpected indentation", self.lines[self.pos].number)
        return YamlDoc(values, lines)


def parse_yaml(text: str) -> YamlDoc:
    """The top-level mapping of a .condarc-style YAML file; ConfigSyntaxError on what conda rejects."""
    return _YamlParser(text).document()
