"""Where packages come from, as facts: pip, conda and uv configuration (files, settings, with the
file or variable each came from), local sources and what they list, constraints, and whether the
indexes a fix may name answer.

The mirrors and sources probes collect these; the install planner and the rules read them. They
live at the bottom so that the planner, a pure function of its inputs, needs no probe.
"""

from __future__ import annotations

import enum

from envdoctor.model.types import TextEnum
from envdoctor.util.lazy_re import Lazy
from envdoctor.util.limits import FIFO_REASON
from envdoctor.util.records import record

PYTORCH_WHEELS = "https://download.pytorch.org/whl/"


# --- package-manager configuration (the mirrors probe) ----------------------------------------------


class ConfigStatus(TextEnum):
    """What became of one configuration file."""

    LOADED = "loaded"
    MISSING = "missing"
    UNREADABLE = "unreadable"
    DIRECTORY = "directory"  # a folder where the tool expects a file
    MALFORMED = "malformed"
    SKIPPED = "skipped"  # present, but the tool does not read it in this set-up


# The short names the probe, its rules and tests compare with.
LOADED = ConfigStatus.LOADED


MISSING = ConfigStatus.MISSING


UNREADABLE = ConfigStatus.UNREADABLE


DIRECTORY = ConfigStatus.DIRECTORY


MALFORMED = ConfigStatus.MALFORMED


SKIPPED = ConfigStatus.SKIPPED


@record
class ConfigFile:
    """One file a tool reads (or would read), and what became of it."""

    tool: str  # pip, conda, uv
    level: str  # pip: global|user|site|env; conda: search-path|condarc; uv: project|user|system|config-file
    path: str
    status: ConfigStatus
    error: str | None = None
    line: int | None = None
    named_by: str | None = None  # the variable that names this file: PIP_CONFIG_FILE, CONDARC, ...


@record
class PipSetting:
    section: str  # "global", "install", ... or ":env:" for PIP_* variables
    key: str  # normalised as pip does: "index-url"
    value: str
    origin: str  # the file, or the variable ("PIP_INDEX_URL")
    line: int | None = None

    @property
    def items(self) -> tuple[str, ...]:
        """The whitespace-separated values pip makes of an append option (extra-index-url, ...)."""
        return tuple(self.value.split())

    @property
    def from_env(self) -> bool:
        return self.section == ":env:"


@record
class PipConfig:
    files: tuple[ConfigFile, ...] = ()  # in pip's override order: global, user, site, env
    settings: tuple[PipSetting, ...] = ()  # everything read, in load order (later wins)
    effective: tuple[PipSetting, ...] = ()  # what `pip install` uses: one per key
    config_file_env: str | None = None  # PIP_CONFIG_FILE as set
    files_disabled: bool = False  # PIP_CONFIG_FILE=os.devnull: pip reads no file at all
    pip_version: str | None = None  # of the target environment, from its dist-info

    def get(self, key: str) -> PipSetting | None:
        for setting in self.effective:
            if setting.key == key:
                return setting
        return None

    def flag(self, key: str) -> bool:
        """A switch such as no-index, read as pip reads it (strtobool: 1/yes/true/on)."""
        setting = self.get(key)
        return setting is not None and setting.value.strip().lower() in ("1", "y", "yes", "t", "true", "on")


@record
class CondaSetting:
    key: str  # channels, default_channels, custom_channels, channel_alias, channel_priority
    origin: str
    line: int | None = None
    items: tuple[str, ...] = ()  # channels, default_channels
    pairs: tuple[tuple[str, str], ...] = ()  # custom_channels: (channel name, base URL)
    value: str | None = None  # channel_alias, channel_priority


@record
class CondaConfig:
    files: tuple[ConfigFile, ...] = ()  # the files that exist, in conda's search order
    settings: tuple[CondaSetting, ...] = ()  # in search order, CONDA_* variables last
    in_use: bool = False  # a conda target, an active conda, or any .condarc

    def _of(self, key: str) -> tuple[CondaSetting, ...]:
        return tuple(s for s in self.settings if s.key == key)

    def merged_list(self, key: str) -> tuple[tuple[str, CondaSetting], ...]:
        """A list setting as conda merges it: later sources first, duplicates dropped."""
        seen: set[str] = set()
        merged = []
        for setting in reversed(self._of(key)):
            for item in setting.items:
                if item not in seen:
                    seen.add(item)
                    merged.append((item, setting))
        return tuple(merged)

    def last(self, key: str) -> CondaSetting | None:
        found = self._of(key)
        return found[-1] if found else None

    def custom_channels(self) -> tuple[tuple[str, str, CondaSetting], ...]:
        """(name, base URL, where) with later sources overriding a name."""
        merged: dict[str, tuple[str, CondaSetting]] = {}
        for setting in self._of("custom_channels"):
            for name, url in setting.pairs:
                merged[name] = (url, setting)
        return tuple((name, url, setting) for name, (url, setting) in merged.items())


@record
class UvIndex:
    url: str
    origin: str  # file or variable
    via: str  # index, index-url, extra-index-url, find-links, pip.index-url, ...
    name: str | None = None
    default: bool = False
    explicit: bool = False
    flat: bool = False  # format = "flat": a find-links style listing
    line: int | None = None


@record
class UvSetting:
    key: str  # index-strategy, torch-backend, no-index (prefixed "pip." from the [pip] table)
    value: str
    origin: str
    line: int | None = None


@record
class UvConfig:
    files: tuple[ConfigFile, ...] = ()
    indexes: tuple[UvIndex, ...] = ()
    settings: tuple[UvSetting, ...] = ()
    files_disabled: bool = False  # UV_NO_CONFIG


@record
class MirrorFacts:
    pip: PipConfig
    conda: CondaConfig
    uv: UvConfig
    home: str | None = None  # to shorten paths in the summary line


_VARIABLE = Lazy(r"[A-Z][A-Z0-9_]*")


def is_variable(origin: str) -> bool:
    """Whether a setting's origin is an environment variable (else it is a file path)."""
    return bool(_VARIABLE.fullmatch(origin))


# --- local sources, constraints, reachability (the sources probe) ----------------------------------


class ListingKind(str, enum.Enum):
    FIND_LINKS = "find-links"
    INDEX = "index"  # a PEP 503 simple index: <root>/<project>/


class ListingStatus(str, enum.Enum):
    LISTED = "listed"
    MISSING = "missing"
    UNREADABLE = "unreadable"


class ReachStatus(str, enum.Enum):
    REACHABLE = "reachable"
    UNREACHABLE = "unreachable"
    NOT_CHECKED = "not-checked"


@record
class SourceListing:
    """A local source and the torch wheels it lists."""

    tool: str  # pip, uv
    kind: ListingKind
    url: str  # as configured
    origin: str  # the file or variable that configures it
    path: str  # the folder on this machine
    status: ListingStatus
    files: tuple[str, ...] = ()  # wheel file names of torch, torchvision, torchaudio
    error: str | None = None


@record
class ConstraintLine:
    project: str  # as written
    specifier: str  # "<=2.14.1"
    line: int


@record
class ConstraintFile:
    path: str
    origin: str  # the file or variable that names it
    status: ListingStatus
    lines: tuple[ConstraintLine, ...] = ()  # those that name torch, torchvision or torchaudio
    error: str | None = None


@record
class ReachCheck:
    url: str
    status: ReachStatus
    detail: str = ""
    seconds: float = 0.0


@record
class UvRoute:
    """[tool.uv.sources]: a package uv takes only from the named index."""

    package: str
    index: str
    origin: str
    marker: str | None = None  # the entry's environment marker ("sys_platform == 'darwin'"), as written


@record
class SourcesFacts:
    listings: tuple[SourceListing, ...] = ()
    constraints: tuple[ConstraintFile, ...] = ()
    reach: tuple[ReachCheck, ...] = ()
    offline: bool = False
    home: str | None = None
    uv_routes: tuple[UvRoute, ...] = ()
    uv_constraints: tuple[ConstraintFile, ...] = ()  # UV_CONSTRAINT/UV_OVERRIDE, [tool.uv] settings


# uv's own constraints (docs.astral.sh/uv/reference/settings and .../environment):
# `constraint-dependencies` and `override-dependencies` in uv.toml or [tool.uv], which `uv pip
# install` and `uv add` apply (astral-sh/uv#5248, #16215), and the files UV_CONSTRAINT and
# UV_OVERRIDE name (space-separated, as --constraint/--override). uv reads no PIP_CONSTRAINT
# (astral-sh/uv#10686). Constraints add up; an override replaces the requirement it names, so a
# pin it does not allow is installed at the override's version instead: both reject the pin.
UV_CONSTRAINT_VARIABLES = ("UV_CONSTRAINT", "UV_OVERRIDE")


UV_CONSTRAINT_SETTINGS = ("constraint-dependencies", "override-dependencies")


# --- what a tool does with a file it cannot use ------------------------------------------------------


class ToolEffect(TextEnum):
    FATAL = "fatal"  # the tool refuses to run
    HANG = "hang"  # the tool waits forever
    IGNORED = "ignored"  # the tool silently skips the file


def tool_effect(file: ConfigFile) -> ToolEffect | None:
    """What the tool itself does with a file it cannot use (None: it uses it, or it is absent).

    pip reads with configparser.read(), which skips files it cannot open but aborts on a syntax
    error; conda opens every file on its search path and aborts on bad YAML; uv aborts on a bad
    uv.toml but only warns about a bad pyproject.toml and skips an unreadable user file. A FIFO
    opens fine and then gives no data until some program writes to it: pip and uv (which reads the
    whole file before parsing) wait forever; conda loads only regular files and folders and stops
    with an internal error on anything else.
    """
    status = file.status
    if status == UNREADABLE and file.error == FIFO_REASON:
        return ToolEffect.FATAL if file.tool == "conda" else ToolEffect.HANG
    if status == MISSING:
        if not file.named_by:
            return None
        return ToolEffect.FATAL if file.tool == "uv" else ToolEffect.IGNORED
    if status == MALFORMED:
        if file.tool == "uv" and file.path.endswith("pyproject.toml"):
            return ToolEffect.IGNORED
        return ToolEffect.FATAL
    if status in (UNREADABLE, DIRECTORY):
        if file.tool == "pip" or (file.tool == "uv" and file.level == "user"):
            return ToolEffect.IGNORED
        return ToolEffect.FATAL
    return None


def file_problem(file: ConfigFile) -> str:
    """Why the file is unusable, in words: "line 3: <the parser's words>", "it is a folder", ..."""
    if file.status == MALFORMED:
        return f"line {file.line}: {file.error}" if file.line else str(file.error)
    if file.status == MISSING:
        return f"{file.named_by} names it, but there is no such file"
    if file.status == DIRECTORY:
        return "it is a folder, not a file"
    if file.status == UNREADABLE and file.error == FIFO_REASON:
        return "it is a FIFO (named pipe), not a regular file"
    return f"it cannot be read ({file.error})"
