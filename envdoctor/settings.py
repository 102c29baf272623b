"""What a project needs from its environment, and the check policy, from options, a file or the API.

Every value is validated here, before any probe runs, so a typo costs one clear line (exit 2), not a
half-finished check. The same keys come from three places, and each place names itself in errors:
`check`'s options (`--require-cuda`), `[tool.envdoctor]` in pyproject.toml or envdoctor.toml, and
`envdoctor.require(cuda=...)`. Command-line values replace file values key by key.

Settings sit below the registries: the rule codes and probe names that --ignore, --only and --skip
may name come in from the caller as `Names` (engine.registry_names), never from a registry import.
"""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from envdoctor.model.findings import Expectations as Expectations  # re-exported: settings' own type
from envdoctor.util.records import record
from envdoctor.util.sizes import parse_size as parse_size

CONFIG_FILE = "envdoctor.toml"
PYPROJECT = "pyproject.toml"
TABLE = "[tool.envdoctor]"

# A board reports slightly less than its nominal size (an RTX 4090 "24 GB" shows 23.99 GiB in NVML),
# so "--min-gpu-memory 24GiB" accepts anything within this fraction of the asked size.
MEMORY_TOLERANCE = 0.02


class SettingsError(ValueError):
    """Settings that cannot be used; the message is one line naming the option, key or file."""

    def __init__(self, message: str) -> None:
        # A value quoted into the message may hold a newline or another control character:
        # written as an escape, so the message stays the one line the CLI promises.
        super().__init__("".join(c if c.isprintable() else repr(c)[1:-1] for c in str(message)))


class ExpectationError(SettingsError):
    """A value that cannot be used: which key, what it was, why, and a value that would work."""

    def __init__(self, key: str, value: object, reason: str, example: str) -> None:
        self.key = key
        self.value = value
        self.reason = reason
        self.example = example
        super().__init__(self.describe(key))

    def describe(self, where: str) -> str:
        """One line. `where` is how the user wrote the key (--min-gpus); a "{}" in it is where the
        value goes (FILE min-gpus = {}), a "{!r}" the same in Python's spelling (require(min_gpus={!r}))."""
        if "{!r}" in where:  # Python's spelling, for the API
            from envdoctor.util.redact import one_line

            head = where.replace("{!r}", one_line(repr(self.value)))
        elif "{}" in where:
            head = where.replace("{}", _show(self.value))
        else:
            head = f"{where} {_show(self.value)}"
        return f"{head}: {self.reason}; expected e.g. {self.example}"


class ConfigError(SettingsError):
    """A config file that cannot be used; the message is one line naming the file."""


@record
class Names:
    """What --ignore, --only and --skip may name, handed in by the caller (engine.registry_names).

    `rules` is a function returning (code, name) of every rule: importing every rule module is
    left for when --ignore is given (`check` imports them while its probes run).
    """

    probes: tuple[str, ...]
    rules: Callable[[], Sequence[tuple[str, str]]]


@record
class Settings:
    """Everything that decides how `check` runs and judges, after merging file and options."""

    expectations: Expectations = field(default_factory=Expectations)
    strict: bool = False
    ignore: tuple[str, ...] = ()  # rule codes
    only: tuple[str, ...] = ()  # probe names
    skip: tuple[str, ...] = ()
    config_file: str | None = None  # the file values came from, if any
    plugins: bool = True  # load the rules and probes of installed plugin packages

    def probe_names(self, all_names: tuple[str, ...]) -> tuple[str, ...]:
        """The probes to run, in registry order."""
        if self.only:
            return tuple(n for n in all_names if n in self.only)
        return tuple(n for n in all_names if n not in self.skip)


# --- single values ---------------------------------------------------------------------------


def _show(value: object) -> str:
    from envdoctor.util.redact import one_line  # an error message never shows a credential

    text = str(value)
    if len(text) > 80:  # 4,300 digits say nothing more than their count
        return f"{one_line(text[:40])}... ({len(text)} characters)"
    return one_line(
        repr(value)
        if isinstance(value, str)
        else str(value).lower()
        if isinstance(value, bool)
        else str(value)
    )


def parse_bool(key: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    raise ExpectationError(key, value, "not true or false", "true")


MAX_COUNT = 1_000_000


def parse_count(key: str, value: object) -> int:
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and re.fullmatch(r"[0-9]+", value.strip()):  # ASCII: not "²" or "⑧"
        text = value.strip().lstrip("0") or "0"
        number = int(text) if len(text) <= len(str(MAX_COUNT)) else MAX_COUNT + 1
    if number is None:
        raise ExpectationError(key, value, "not a whole number", "2")
    if number < 1:
        raise ExpectationError(key, value, "must be at least 1", "2")
    if number > MAX_COUNT:
        raise ExpectationError(key, value, f"too large (at most {MAX_COUNT})", "2")
    return number


_SPEC_EXAMPLES = {"cuda": ">=12.1", "torch": ">=2.4,<2.6", "capability": ">=8.0"}


def parse_specifier(key: str, value: object, example: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ExpectationError(key, value, "not a version specifier", f'"{example}"')
    text = value.strip()
    if re.fullmatch(r"v?\d+(\.\d+)*", text):
        raise ExpectationError(
            key,
            value,
            f'a bare version is not a specifier (did you mean ">={text.lstrip("v")}"?)',
            f'"{example}"',
        )
    try:
        SpecifierSet(text)
    except InvalidSpecifier:
        raise ExpectationError(key, value, "not a version specifier", f'"{example}"') from None
    return text


def parse_memory(key: str, value: object) -> str:
    if isinstance(value, str):
        try:
            if parse_size(value) > 0:
                return value.strip()
        except ValueError as exc:
            reason = "too large" if str(exc).endswith("too large") else "not a size with a unit"
        else:
            reason = "not a size with a unit"
    else:
        reason = "not a size with a unit (write it as a string)"
    raise ExpectationError(key, value, reason, '"24GiB"')


def _names(value: object) -> list[str] | None:
    """A comma-separated string or a list of strings, as a list; None when neither."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return [part.strip() for v in value for part in v.split(",") if part.strip()]
    return None


def parse_rule_codes(key: str, value: object, known: Names) -> tuple[str, ...]:
    rules = known.rules()
    by_name = {name: code for code, name in rules}
    codes = {code for code, _ in rules}
    names = _names(value)
    if names is None:
        raise ExpectationError(key, value, "not a list of rule codes", '"ED203,ED210"')
    found = []
    for name in names:
        code = name.upper() if name.upper() in codes else by_name.get(name.lower())
        if code is None:
            raise ExpectationError(
                key, value, f"{name} is not a rule (see `envdoctor rules`)", '"ED203,ED210"'
            )
        found.append(code)
    return tuple(dict.fromkeys(found))


def parse_probe_names(key: str, value: object, names_known: Names) -> tuple[str, ...]:
    known = list(names_known.probes)
    names = _names(value)
    example = '"' + ",".join(known[-2:]) + '"'
    if names is None or not names:
        raise ExpectationError(key, value, "not a list of probe names", example)
    for name in names:
        if name not in known:
            raise ExpectationError(key, value, f"{name} is not a probe (known: {', '.join(known)})", example)
    return tuple(dict.fromkeys(names))


# --- the keys ----------------------------------------------------------------------------------


@record
class Key:
    name: str  # as in the config file and after "--" on the command line
    target: str  # "expectations.<field>" or a Settings field
    parse: Callable[..., Any]  # (key, value), or (key, value, Names) when `named`
    api: str | None = None  # the keyword of envdoctor.require, if it has one
    named: bool = False  # the value names rules or probes: the parser also takes Names


KEYS: tuple[Key, ...] = (
    Key("require-gpu", "expectations.gpu", parse_bool, "gpu"),
    Key("min-gpus", "expectations.min_gpus", parse_count, "min_gpus"),
    Key(
        "require-cuda",
        "expectations.cuda",
        lambda k, v: parse_specifier(k, v, _SPEC_EXAMPLES["cuda"]),
        "cuda",
    ),
    Key(
        "require-torch",
        "expectations.torch",
        lambda k, v: parse_specifier(k, v, _SPEC_EXAMPLES["torch"]),
        "torch",
    ),
    Key(
        "require-capability",
        "expectations.capability",
        lambda k, v: parse_specifier(k, v, _SPEC_EXAMPLES["capability"]),
        "capability",
    ),
    Key("min-gpu-memory", "expectations.min_gpu_memory", parse_memory, "min_gpu_memory"),
    Key("require-smoke", "expectations.smoke", parse_bool, "smoke"),
    Key("strict", "strict", parse_bool, "strict"),
    Key("ignore", "ignore", parse_rule_codes, "ignore", named=True),
    Key("only", "only", parse_probe_names, named=True),
    Key("skip", "skip", parse_probe_names, named=True),
    Key("plugins", "plugins", parse_bool),
)
KEYS_BY_NAME: dict[str, Key] = {k.name: k for k in KEYS}


def build(
    values: Mapping[str, object],
    where: Callable[[str], str],
    names: Names,
    config_file: str | None = None,
) -> Settings:
    """Settings from already-merged raw values keyed by key name; ExpectationError names `where(key)`."""
    expectation_values: dict[str, Any] = {}
    settings_values: dict[str, Any] = {}
    for name, raw in values.items():
        if raw is None:
            continue
        key = KEYS_BY_NAME[name]
        try:
            value = key.parse(name, raw, names) if key.named else key.parse(name, raw)
        except ExpectationError as exc:
            raise ExpectationError(where(name), raw, exc.reason, exc.example) from None
        if key.target.startswith("expectations."):
            expectation_values[key.target.split(".", 1)[1]] = value
        else:
            settings_values[key.target] = value
    if settings_values.get("only") and settings_values.get("skip"):
        only, skip = (where(k).replace(" = {}", "").replace("{}", "...") for k in ("only", "skip"))
        raise SettingsError(f"{only} and {skip} cannot be combined; choose probes with one of them")
    return Settings(
        expectations=Expectations(**expectation_values), config_file=config_file, **settings_values
    )


def merge(options: Mapping[str, object], config: Mapping[str, object]) -> dict[str, object]:
    """Key by key, a command-line value (not None) replaces the file's."""
    merged = dict(config)
    merged.update({k: v for k, v in options.items() if v is not None})
    return merged


def resolve(options: Mapping[str, object], cwd: str, names: Names, config: str | None = None) -> Settings:
    """Settings for `check`: the config file (explicit, else found in `cwd`) under the options.

    Raises ConfigError or ExpectationError with a one-line message naming the file or the option.
    """
    _PENDING.clear()
    try:
        settings = _resolve(options, cwd, names, config)
    except Exception:
        _PENDING.clear()
        raise
    for warning in _PENDING:
        sys.stderr.write(warning)
    _PENDING.clear()
    return settings


def _resolve(options: Mapping[str, object], cwd: str, names: Names, config: str | None) -> Settings:
    found = load_config(config, cwd)
    file_values = found[1] if found else {}
    given = {k for k, v in options.items() if v is not None}
    label = found[0] if found else None

    def where(name: str) -> str:
        if name in given or label is None:
            return f"--{name}"
        return f"{label} {name} = {{}}"

    return build(merge(options, file_values), where, names, config_file=found[0] if found else None)


# --- config files ------------------------------------------------------------------------------


def _toml_loads(text: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.9/3.10 only
        import tomli as tomllib
    return tomllib.loads(text)


def load_config(explicit: str | None, cwd: str) -> tuple[str, dict[str, object]] | None:
    """(label, values) from --config FILE, else ./envdoctor.toml, else ./pyproject.toml's table.

    The label names the file and table for messages ("pyproject.toml [tool.envdoctor]"). A
    pyproject.toml found in `cwd` belongs to the project, not to envdoctor: when it cannot be read
    or parsed, one warning line goes to stderr and the check goes on (as uv does), unless the
    [tool.envdoctor] table itself is what is broken.
    """
    if explicit is not None:
        path = Path(explicit)
        if not path.is_file():
            what = (
                "is a folder" if path.is_dir() else "not a regular file" if path.exists() else "no such file"
            )
            raise ConfigError(f"--config {explicit}: {what}; expected a TOML file such as {CONFIG_FILE}")
        return _read_config(path, explicit, required=True)
    for name in (CONFIG_FILE, PYPROJECT):
        path = Path(cwd) / name
        if path.is_file():
            found = _read_config(path, name, required=False)
            if found is not None:
                return found
    return None


_PENDING: list[str] = []  # warnings of the settings being read, said once they are read


def _warn(message: str) -> None:
    """A settings warning waits until `resolve` is done: an error that follows is then the one
    line the user sees (a warning and an error of one file made two)."""
    _PENDING.append(f"envdoctor: warning: {message}\n")


# The [tool.envdoctor] table and its sub-tables, up to the next table header of something else.
_OWN_HEADER = re.compile(r"^\s*\[\s*tool\s*\.\s*envdoctor\s*(?:\.[^\]]*)?\]\s*(?:#.*)?$")
_ANY_HEADER = re.compile(r"^\s*\[")


def _own_table_text(text: str) -> str | None:
    """The lines of [tool.envdoctor] out of a pyproject.toml that does not parse as a whole."""
    own: list[str] = []
    inside = False
    for line in text.splitlines():
        if _ANY_HEADER.match(line):
            inside = bool(_OWN_HEADER.match(line))
        if inside:
            own.append(line)
    return "\n".join(own) + "\n" if own else None


def _read_config(path: Path, shown: str, required: bool) -> tuple[str, dict[str, object]] | None:
    from envdoctor.util import limits

    tolerant = not required and path.name == PYPROJECT  # the project's file, not envdoctor's
    try:
        # utf-8-sig: a byte-order mark (Windows editors write one) is read past, as uv and pip do.
        # Regular files only, size-capped.
        text = limits.read_bytes(str(path)).decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        if tolerant:
            _warn(f"{shown}: cannot be read ({reason}); its {TABLE} table, if any, is ignored")
            return None
        raise ConfigError(f"{shown}: cannot be read ({reason})") from None
    try:
        data = _toml_loads(text)
    except (ValueError, RecursionError) as exc:
        # A project's pyproject.toml that does not parse, however (nested thousands deep too), is
        # judged by envdoctor's own table alone: the same exit code for every way it can be bad.
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        if not tolerant:
            raise ConfigError(f"{shown}: not valid TOML ({why})") from None
        own = _own_table_text(text)
        if own is None:
            _warn(f"{shown}: not valid TOML ({why}); ignored (it has no {TABLE} table)")
            return None
        try:
            data = _toml_loads(own)
        except (ValueError, RecursionError) as own_exc:
            said = "nested too deeply" if isinstance(own_exc, RecursionError) else str(own_exc)
            raise ConfigError(f"{shown} {TABLE}: not valid TOML ({said})") from None
        _warn(f"{shown}: not valid TOML outside {TABLE} ({why}); the rest of it is ignored")
    tool = data.get("tool")
    table = tool.get("envdoctor") if isinstance(tool, dict) else None
    if table is not None:
        label = f"{shown} {TABLE}"
    elif path.name == PYPROJECT:
        if required:
            raise ConfigError(f"{shown}: has no {TABLE} table")
        return None
    else:
        table, label = data, shown  # envdoctor.toml: the keys at the top level
    if not isinstance(table, dict):
        raise ConfigError(f"{label}: expected a table of settings")
    values: dict[str, object] = {}
    for raw_key, value in table.items():
        key = str(raw_key).replace("_", "-")
        if key not in KEYS_BY_NAME:
            close = difflib.get_close_matches(key, list(KEYS_BY_NAME), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"{label}: unknown key {raw_key!r}{hint} (known: {', '.join(KEYS_BY_NAME)})")
        values[key] = value
    return label, values


# --- the Python API's keywords -------------------------------------------------------------------

API_KEYS: dict[str, str] = {k.api: k.name for k in KEYS if k.api}


def from_keywords(keywords: Mapping[str, object], names: Names) -> Settings:
    """Settings from envdoctor.require's keywords; ExpectationError names `require(key=...)`."""
    values: dict[str, object] = {}
    for word, value in keywords.items():
        if word not in API_KEYS:
            raise TypeError(f"require() got an unexpected keyword argument {word!r}")
        if value is None or value is False:
            continue
        values[API_KEYS[word]] = value
    reverse = {name: word for word, name in API_KEYS.items()}
    return build(values, lambda name: f"envdoctor.require({reverse[name]}={{!r}})", names)
