"""Where packages come from: pip, conda and uv configuration files and variables, with origins.

Facts only, from file reads and the environment (no subprocess, so it costs milliseconds): every
file each tool would read, in the tool's own order, whether it loaded, and each setting with the
file or variable it came from. Which index a URL is, and whether that is a problem, the rules
decide with the knowledge base.

Load orders follow each tool's own code and docs: pip's
pypa/pip@6d309205789d368b2749d93fd6193d584811efd5:src/pip/_internal/configuration.py (and
utils/appdirs.py), conda's conda/conda@0f64223fb8da4328457a69fe6483959dbb783152:conda/base/constants.py
(SEARCH_PATH) and uv's https://docs.astral.sh/uv/concepts/configuration-files/.
"""

from __future__ import annotations

import ntpath
import posixpath
import re
from collections.abc import Iterator, Mapping
from typing import Any

from envdoctor.host.base import Host
from envdoctor.knowledge import uv_settings
from envdoctor.model.sources import (
    DIRECTORY,
    LOADED,
    MALFORMED,
    MISSING,
    SKIPPED,
    UNREADABLE,
    CondaConfig,
    CondaSetting,
    ConfigFile,
    ConfigStatus,
    MirrorFacts,
    PipConfig,
    PipSetting,
    UvConfig,
    UvIndex,
    UvSetting,
    is_variable,
)
from envdoctor.probes.base import ProbeContext, ProbeSpec
from envdoctor.probes.config_files import ConfigSyntaxError, parse_ini, parse_toml, parse_yaml
from envdoctor.target import PythonInfo
from envdoctor.util.lazy_re import Lazy
from envdoctor.util.redact import MASK, is_secret_name, learn

# ---------------------------------------------------------------------------------------------
# shared helpers


def _paths(os_name: str) -> Any:
    return ntpath if os_name == "windows" else posixpath


# No configuration file a person writes comes near this; a larger one (or a device named as a
# file) is reported as unreadable instead of being read into memory and parsed.
CONFIG_MAX_BYTES = 1 << 20


def _read(host: Host, path: str) -> tuple[str | None, ConfigStatus, str | None]:
    """(text, status, error) for one file; never raises, never blocks on a FIFO."""
    if not host.exists(path):
        return None, MISSING, None
    if host.is_dir(path):
        return None, DIRECTORY, "is a folder, not a file"
    try:
        # strict: pip ("contains invalid ... characters"), uv and conda all refuse such a file,
        # where a lenient read would show it as loaded with mangled values.
        text = host.read_text(path, max_bytes=CONFIG_MAX_BYTES, strict=True)
    except OSError as exc:
        return None, UNREADABLE, exc.strerror or type(exc).__name__
    except UnicodeDecodeError as exc:
        return None, MALFORMED, f"contains bytes that are not valid UTF-8 (at byte {exc.start})"
    except UnicodeError as exc:
        return None, MALFORMED, f"not valid text ({exc})"
    learn(text)  # its credentials are masked wherever they turn up later, in any shape
    return text, LOADED, None


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in ("", "0", "false", "no", "off")


_QUOTED_VALUE = Lazy(r'"([^"\\\n]*)"|\'([^\'\n]*)\'')
_SCANS = 64  # full scans per file for needles not found as a quoted value (keys, odd values)


class _LineFinder:
    """Line numbers in one file, found in linear time overall: every quoted value's first line is
    indexed once, so 28,000 [[index]] urls cost one pass, not one pass each."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.quoted: dict[str, int] = {}
        for number, line in enumerate(self.lines, start=1):
            for match in _QUOTED_VALUE.finditer(line):
                self.quoted.setdefault(
                    match.group(1) if match.group(1) is not None else match.group(2), number
                )
        self.scans_left = _SCANS

    def find(self, needle: str) -> int | None:
        if not needle:
            return None
        if needle in self.quoted:
            return self.quoted[needle]
        if self.scans_left <= 0:
            return None  # a line number is a courtesy; never worth quadratic time
        self.scans_left -= 1
        for number, line in enumerate(self.lines, start=1):
            if needle in line:
                return number
        return None


_finders: dict[int, tuple[str, _LineFinder]] = {}


def _line_of(text: str, needle: str) -> int | None:
    cached = _finders.get(id(text))
    if cached is None or cached[0] is not text:
        _finders.clear()  # one file at a time: keep only the latest
        cached = (text, _LineFinder(text))
        _finders[id(text)] = cached
    return cached[1].find(needle)


# ---------------------------------------------------------------------------------------------
# pip

_PIP_ENV_IGNORED = {"version", "help", "config-file"}
_PIP_SECTIONS = ("global", "install", ":env:")  # the order `pip install` applies them in
_PIP_DIST = Lazy(r"^pip-(?P<version>[^-]+)\.dist-info$", re.IGNORECASE)


def _pip_name(name: str) -> str:
    name = name.lower().replace("_", "-")
    return name[2:] if name.startswith("--") else name


def _pip_version(host: Host, os_name: str, info: PythonInfo) -> str | None:
    p = _paths(os_name)
    if os_name == "windows":
        site = p.join(info.prefix, "Lib", "site-packages")
    else:
        site = p.join(info.prefix, "lib", f"python{info.minor}", "site-packages")
    try:
        names = host.list_dir(site)
    except OSError:
        return None
    for name in names:
        match = _PIP_DIST.match(name)
        if match:
            return match.group("version")
    return None


def _version_tuple(version: str | None) -> tuple[int, ...]:
    parts = []
    for piece in (version or "").split(".")[:2]:
        digits = re.match(r"\d+", piece)
        parts.append(int(digits.group()) if digits else 0)
    return tuple(parts)


def pip_candidate_files(
    host: Host, os_name: str, prefix: str | None, pip_version: str | None
) -> tuple[tuple[str, str], ...]:
    """(level, path) for every file pip would read for this platform, in override order (the site
    file only when the environment's `prefix` is known)."""
    env = host.env
    p = _paths(os_name)
    home = host.home()
    name = "pip.ini" if os_name == "windows" else "pip.conf"
    files: list[tuple[str, str]] = []
    if os_name == "windows":
        program_data = env.get("ProgramData") or env.get("ALLUSERSPROFILE") or "C:\\ProgramData"
        files.append(("global", p.join(program_data, "pip", name)))
        if home:
            files.append(("user", p.join(home, "pip", name)))
        appdata = env.get("APPDATA") or (p.join(home, "AppData", "Roaming") if home else None)
        if appdata:
            files.append(("user", p.join(appdata, "pip", name)))
    elif os_name == "macos":
        xdg_macos = _version_tuple(pip_version) >= (26, 2)  # pip 26.2 added XDG on macOS
        data_dirs = env.get("XDG_DATA_DIRS", "").strip() if xdg_macos else ""
        if data_dirs:
            files.extend(("global", p.join(d, "pip", name)) for d in data_dirs.split(":") if d)
        else:
            files.append(("global", p.join("/Library/Application Support/pip", name)))
        if home:
            files.append(("user", p.join(home, ".pip", name)))
            data_home = env.get("XDG_DATA_HOME", "").strip() if xdg_macos else ""
            library = p.join(home, "Library", "Application Support", "pip")
            if data_home and host.is_dir(p.join(data_home, "pip")):
                files.append(("user", p.join(data_home, "pip", name)))
            elif host.is_dir(library):
                files.append(("user", p.join(library, name)))
            else:
                files.append(("user", p.join(home, ".config", "pip", name)))
    else:
        config_dirs = env.get("XDG_CONFIG_DIRS", "").strip() or "/etc/xdg"
        files.extend(("global", p.join(d, "pip", name)) for d in config_dirs.split(":") if d)
        files.append(("global", p.join("/etc", name)))
        if home:
            files.append(("user", p.join(home, ".pip", name)))
        config_home = env.get("XDG_CONFIG_HOME", "").strip() or (p.join(home, ".config") if home else "")
        if config_home:
            files.append(("user", p.join(config_home, "pip", name)))
    if prefix:
        files.append(("site", p.join(prefix, name)))
    return tuple(files)


def _pip_env_settings(env: Mapping[str, str]) -> list[PipSetting]:
    found = []
    for variable in sorted(env):
        if not variable.startswith("PIP_"):
            continue
        key = _pip_name(variable[4:])
        if key in _PIP_ENV_IGNORED:
            continue
        value = env[variable]
        if is_secret_name(variable) and value:
            value = MASK  # not a URL the redactor would recognise: never record it
        found.append(PipSetting(":env:", key, value, variable))
    return found


def _pip_effective(settings: list[PipSetting]) -> tuple[PipSetting, ...]:
    # pip merges "section.key" across files (later file wins, an empty value included), then
    # drops empty values and applies [global] < [install] < environment.
    merged: dict[tuple[str, str], PipSetting] = {}
    for setting in settings:
        merged[(setting.section, setting.key)] = setting
    effective: dict[str, PipSetting] = {}
    for section in _PIP_SECTIONS:
        for (where, key), setting in merged.items():
            if where == section and setting.value.strip():
                effective[key] = setting
    return tuple(sorted(effective.values(), key=lambda s: s.key))


def collect_pip(host: Host, os_name: str, info: PythonInfo | None) -> PipConfig:
    """pip's configuration as `pip install` in the environment `info` would see it; `info` None when
    no interpreter could be examined (then no site file and no pip version)."""
    env = host.env
    pip_version = _pip_version(host, os_name, info) if info is not None else None
    env_file = env.get("PIP_CONFIG_FILE")
    devnull = "nul" if os_name == "windows" else "/dev/null"
    env_settings = _pip_env_settings(env)
    if env_file == devnull:
        skipped = ConfigFile("pip", "env", env_file, SKIPPED, named_by="PIP_CONFIG_FILE")
        return PipConfig(
            files=(skipped,),
            settings=tuple(env_settings),
            effective=_pip_effective(env_settings),
            config_file_env=env_file,
            files_disabled=True,
            pip_version=pip_version,
        )
    # A PIP_CONFIG_FILE that exists replaces the user files (configuration.py iter_config_files).
    skip_user = bool(env_file) and host.exists(env_file or "")
    candidates = list(pip_candidate_files(host, os_name, info.prefix if info else None, pip_version))
    if env_file is not None and env_file != "":
        candidates.append(("env", env_file))
    files: list[ConfigFile] = []
    settings: list[PipSetting] = []
    for level, path in candidates:
        named_by = "PIP_CONFIG_FILE" if level == "env" else None
        if level == "user" and skip_user:
            files.append(ConfigFile("pip", level, path, SKIPPED, "PIP_CONFIG_FILE replaces it"))
            continue
        text, status, error = _read(host, path)
        line = None
        if text is not None:
            try:
                options = parse_ini(text)
            except ConfigSyntaxError as exc:
                status, error, line = MALFORMED, exc.message, exc.line
            else:
                settings.extend(
                    PipSetting(o.section, _pip_name(o.key), o.value, path, o.line) for o in options
                )
        files.append(ConfigFile("pip", level, path, status, error, line, named_by))
    settings.extend(env_settings)
    return PipConfig(
        files=tuple(files),
        settings=tuple(settings),
        effective=_pip_effective(settings),
        config_file_env=env_file,
        pip_version=pip_version,
    )


# ---------------------------------------------------------------------------------------------
# conda

_CONDA_LISTS = {"channels": "channels", "channel": "channels", "default_channels": "default_channels"}
_CONDA_SCALARS = ("channel_alias", "channel_priority")
_CONDA_ENV = {
    "CONDA_CHANNELS": "channels",
    "CONDA_DEFAULT_CHANNELS": "default_channels",
    "CONDA_CHANNEL_ALIAS": "channel_alias",
    "CONDA_CHANNEL_PRIORITY": "channel_priority",
}


def _conda_root(env: Mapping[str, str], os_name: str) -> str | None:
    """The base installation ($CONDA_ROOT in conda's search path)."""
    if env.get("CONDA_ROOT"):
        return env["CONDA_ROOT"]
    p = _paths(os_name)
    exe = env.get("CONDA_EXE")
    if exe:  # <root>/bin/conda, <root>\Scripts\conda.exe, <root>\condabin\conda.bat
        return str(p.dirname(p.dirname(exe)))
    python = env.get("CONDA_PYTHON_EXE")
    if python:  # <root>/bin/python, <root>\python.exe
        parent = p.dirname(python)
        return str(parent if os_name == "windows" else p.dirname(parent))
    return None


def conda_search_path(host: Host, os_name: str) -> tuple[str, ...]:
    env = host.env
    p = _paths(os_name)
    home = host.home()

    def trio(folder: str) -> list[str]:
        return [p.join(folder, ".condarc"), p.join(folder, "condarc"), p.join(folder, "condarc.d")]

    paths: list[str] = []
    if os_name == "windows":
        paths += trio("C:\\ProgramData\\conda")
    else:
        paths += trio("/etc/conda") + trio("/var/lib/conda")
    root = _conda_root(env, os_name)
    if root:
        paths += trio(root)
    if env.get("XDG_CONFIG_HOME"):
        paths += trio(p.join(env["XDG_CONFIG_HOME"], "conda"))
    if home:
        paths += trio(p.join(home, ".config", "conda"))
        paths += trio(p.join(home, ".conda"))
        paths.append(p.join(home, ".condarc"))
    if env.get("CONDA_PREFIX"):
        paths += trio(env["CONDA_PREFIX"])
    unique: list[str] = []
    for path in paths:
        if path not in unique:
            unique.append(path)
    return tuple(unique)


def _as_strings(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list) or any(isinstance(v, (list, dict)) for v in value):
        return None
    return tuple(str(v) for v in value if v is not None)


def _condarc_settings(path: str, text: str) -> list[CondaSetting]:
    """The channel settings of one .condarc; ConfigSyntaxError for YAML or types conda rejects."""
    doc = parse_yaml(text)
    found: list[CondaSetting] = []
    for key, value in doc.values.items():
        line = doc.lines.get(key)
        if value is None:
            continue
        if key in _CONDA_LISTS:
            items = _as_strings(value)
            if items is None:
                raise ConfigSyntaxError(f"{key} must be a list of channel names or URLs", line)
            found.append(CondaSetting(_CONDA_LISTS[key], path, line, items=items))
        elif key == "custom_channels":
            if not isinstance(value, dict) or any(isinstance(v, (list, dict)) for v in value.values()):
                raise ConfigSyntaxError("custom_channels must map channel names to URLs", line)
            pairs = tuple((str(k), str(v)) for k, v in value.items() if v is not None)
            found.append(CondaSetting("custom_channels", path, line, pairs=pairs))
        elif key in _CONDA_SCALARS:
            if isinstance(value, (list, dict)):
                raise ConfigSyntaxError(f"{key} must be a single value", line)
            found.append(CondaSetting(key, path, line, value=str(value)))
    return found


def _condarc_files(host: Host, path: str, os_name: str, named_by: str | None) -> Iterator[str]:
    """The files conda loads for one search-path entry: the file, or a folder's *.yml/*.yaml."""
    if host.is_dir(path):
        try:
            names = host.list_dir(path)
        except OSError:
            return
        for name in sorted(names):
            if name.endswith((".yml", ".yaml")):
                yield _paths(os_name).join(path, name)
    elif host.exists(path) or named_by:
        yield path


def collect_conda(host: Host, os_name: str, info: PythonInfo) -> CondaConfig:
    env = host.env
    entries: list[tuple[str, str, str | None]] = [
        ("search-path", path, None) for path in conda_search_path(host, os_name)
    ]
    if env.get("CONDARC"):
        entries.append(("condarc", env["CONDARC"], "CONDARC"))
    files: list[ConfigFile] = []
    settings: list[CondaSetting] = []
    seen: set[str] = set()
    for level, entry, named_by in entries:
        for path in _condarc_files(host, entry, os_name, named_by):
            if path in seen:
                continue
            seen.add(path)
            text, status, error = _read(host, path)
            line = None
            if text is not None:
                try:
                    settings.extend(_condarc_settings(path, text))
                except ConfigSyntaxError as exc:
                    status, error, line = MALFORMED, exc.message, exc.line
            files.append(ConfigFile("conda", level, path, status, error, line, named_by))
    for variable, key in _CONDA_ENV.items():
        value = env.get(variable)
        if not value:
            continue
        if key in ("channels", "default_channels"):
            items = tuple(v.strip() for v in value.split(",") if v.strip())
            settings.append(CondaSetting(key, variable, items=items))
        else:
            settings.append(CondaSetting(key, variable, value=value.split("!important")[0].strip()))
    in_use = info.is_conda or bool(env.get("CONDA_EXE")) or any(f.status == LOADED for f in files)
    return CondaConfig(files=tuple(files), settings=tuple(settings), in_use=in_use)


# ---------------------------------------------------------------------------------------------
# uv

_UV_LIST_KEYS = ("extra-index-url", "find-links")
_UV_SCALAR_SETTINGS = ("index-strategy", "torch-backend", "no-index")


def _uv_table(
    table: Mapping[str, Any], origin: str, text: str, prefix: str
) -> tuple[list[UvIndex], list[UvSetting]]:
    """Index settings of a uv table (top level, [pip], or [tool.uv]); ConfigSyntaxError on bad types."""
    indexes: list[UvIndex] = []
    settings: list[UvSetting] = []
    raw_indexes = table.get("index", []) if not prefix else []
    if not isinstance(raw_indexes, list) or not all(isinstance(i, dict) for i in raw_indexes):
        raise ConfigSyntaxError("`index` must be a list of [[index]] tables", _line_of(text, "index"))
    for raw in raw_indexes:
        url = raw.get("url")
        if not isinstance(url, str):
            raise ConfigSyntaxError("an [[index]] entry has no url", _line_of(text, "[[") or None)
        name = raw.get("name")
        indexes.append(
            UvIndex(
                url=url,
                origin=origin,
                via="index",
                name=name if isinstance(name, str) else None,
                default=raw.get("default") is True,
                explicit=raw.get("explicit") is True,
                flat=raw.get("format") == "flat",
                line=_line_of(text, url),
            )
        )
    url = table.get("index-url")
    if url is not None:
        if not isinstance(url, str):
            raise ConfigSyntaxError(f"{prefix}index-url must be a string", _line_of(text, "index-url"))
        indexes.append(UvIndex(url, origin, f"{prefix}index-url", line=_line_of(text, url)))
    for key in _UV_LIST_KEYS:
        values = table.get(key)
        if values is None:
            continue
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ConfigSyntaxError(f"{prefix}{key} must be a list of strings", _line_of(text, key))
        indexes.extend(
            UvIndex(v, origin, f"{prefix}{key}", flat=key == "find-links", line=_line_of(text, v))
            for v in values
        )
    for key in _UV_SCALAR_SETTINGS:
        if key in table:
            value = table[key]
            text_value = str(value).lower() if isinstance(value, bool) else str(value)
            settings.append(UvSetting(f"{prefix}{key}", text_value, origin, _line_of(text, key)))
    return indexes, settings


def _uv_file(
    host: Host, level: str, path: str, pyproject: bool, named_by: str | None = None
) -> tuple[ConfigFile | None, list[UvIndex], list[UvSetting]]:
    """One uv configuration file; None for a pyproject.toml without [tool.uv] (uv skips those)."""
    text, status, error = _read(host, path)
    if text is None:
        return ConfigFile("uv", level, path, status, error, named_by=named_by), [], []
    try:
        data = parse_toml(text)
        table: Any = data.get("tool", {}).get("uv") if pyproject else data
        if pyproject and not isinstance(table, dict):
            return None, [], []
        refused = uv_settings.refusal(table, in_uv_toml=not pyproject) if isinstance(table, dict) else None
        if refused is not None:
            field, why = refused
            return ConfigFile("uv", level, path, MALFORMED, why, _line_of(text, field), named_by), [], []
        indexes, settings = _uv_table(table, path, text, "")
        pip_table = table.get("pip")
        if isinstance(pip_table, dict):
            more_indexes, more_settings = _uv_table(pip_table, path, text, "pip.")
            indexes += more_indexes
            settings += more_settings
    except ConfigSyntaxError as exc:
        return ConfigFile("uv", level, path, MALFORMED, exc.message, exc.line, named_by), [], []
    except AttributeError:  # `tool` is not a table
        return ConfigFile("uv", level, path, MALFORMED, "[tool] is not a table", None, named_by), [], []
    return ConfigFile("uv", level, path, LOADED, named_by=named_by), indexes, settings


def _uv_project(host: Host, os_name: str) -> tuple[list[ConfigFile], list[UvIndex], list[UvSetting]]:
    """The nearest uv.toml, or pyproject.toml with [tool.uv], from the working directory upwards."""
    p = _paths(os_name)
    files: list[ConfigFile] = []
    folder = host.cwd()
    while True:
        for name, pyproject in (("uv.toml", False), ("pyproject.toml", True)):
            path = p.join(folder, name)
            if not host.exists(path):
                continue
            found, indexes, settings = _uv_file(host, "project", path, pyproject)
            if found is None:
                continue
            files.append(found)
            if not (pyproject and found.status == MALFORMED):
                return files, indexes, settings  # uv warns about a bad pyproject.toml and goes on
            break
        parent = p.dirname(folder)
        if parent == folder or not parent:
            return files, [], []
        folder = parent


def _uv_user_system(host: Host, os_name: str) -> list[tuple[str, str]]:
    env = host.env
    p = _paths(os_name)
    home = host.home()
    found: list[tuple[str, str]] = []
    if os_name == "windows":
        appdata = env.get("APPDATA")
        if appdata:
            found.append(("user", p.join(appdata, "uv", "uv.toml")))
        drive = env.get("SYSTEMDRIVE", "C:")
        found.append(("system", p.join(drive + "\\", "ProgramData", "uv", "uv.toml")))
        return found
    config_home = env.get("XDG_CONFIG_HOME") or (p.join(home, ".config") if home else None)
    if config_home:
        found.append(("user", p.join(config_home, "uv", "uv.toml")))
    system = [p.join(d, "uv", "uv.toml") for d in env.get("XDG_CONFIG_DIRS", "").split(":") if d]
    existing = [path for path in system if host.exists(path)]
    found.append(("system", existing[0] if existing else "/etc/uv/uv.toml"))
    return found


_UV_INDEX_VARIABLES = (  # variable, how uv treats it, whether it replaces the default index
    ("UV_INDEX", "index", False),
    ("UV_DEFAULT_INDEX", "default-index", True),
    ("UV_INDEX_URL", "index-url", True),
    ("UV_EXTRA_INDEX_URL", "extra-index-url", False),
)


def _uv_env(env: Mapping[str, str]) -> tuple[list[UvIndex], list[UvSetting]]:
    indexes: list[UvIndex] = []
    for variable, via, default in _UV_INDEX_VARIABLES:
        for item in env.get(variable, "").split():
            name, url = None, item
            if variable == "UV_INDEX" and "=" in item and "://" not in item.split("=", 1)[0]:
                name, url = item.split("=", 1)  # UV_INDEX accepts name=url
            indexes.append(UvIndex(url, variable, via, name=name, default=default))
    for item in env.get("UV_FIND_LINKS", "").split(","):
        if item.strip():
            indexes.append(UvIndex(item.strip(), "UV_FIND_LINKS", "find-links", flat=True))
    settings = [
        UvSetting(key, env[variable], variable)
        for variable, key in (
            ("UV_INDEX_STRATEGY", "index-strategy"),
            ("UV_TORCH_BACKEND", "torch-backend"),
            ("UV_NO_INDEX", "no-index"),
        )
        if env.get(variable)
    ]
    return indexes, settings


def collect_uv(host: Host, os_name: str) -> UvConfig:
    env = host.env
    files: list[ConfigFile] = []
    indexes: list[UvIndex] = []
    settings: list[UvSetting] = []
    env_indexes, env_settings = _uv_env(env)
    if _truthy(env.get("UV_NO_CONFIG")):
        return UvConfig(indexes=tuple(env_indexes), settings=tuple(env_settings), files_disabled=True)
    if env.get("UV_CONFIG_FILE"):
        path = env["UV_CONFIG_FILE"]
        found, indexes, settings = _uv_file(host, "config-file", path, False, "UV_CONFIG_FILE")
        files = [found] if found else []
    else:
        project_files, indexes, settings = _uv_project(host, os_name)
        files += project_files
        for level, path in _uv_user_system(host, os_name):
            if level == "system" and _truthy(env.get("UV_NO_SYSTEM_CONFIG")):
                continue
            if not host.exists(path):
                continue
            found, more_indexes, more_settings = _uv_file(host, level, path, False)
            if found is not None:
                files.append(found)
                indexes += more_indexes
                settings += more_settings
    # Variables take precedence over files; listing them first keeps uv's own order of indexes.
    return UvConfig(
        files=tuple(files),
        indexes=tuple(env_indexes + indexes),
        settings=tuple(settings + env_settings),
    )


# ---------------------------------------------------------------------------------------------


def collect(ctx: ProbeContext) -> MirrorFacts:
    host = ctx.host
    os_name = host.platform().os
    info = ctx.target.info
    return MirrorFacts(
        pip=collect_pip(host, os_name, info),
        conda=collect_conda(host, os_name, info),
        uv=collect_uv(host, os_name),
        home=host.home(),
    )


def short_path(path: str, home: str | None) -> str:
    """`~/...` for paths under the home folder, so the summary stays short and private."""
    if home and len(path) > len(home) and path.startswith(home) and path[len(home)] in "/\\":
        return "~" + path[len(home) :]
    return path


def origin_text(origin: str, home: str | None) -> str:
    return f"${origin}" if is_variable(origin) else short_path(origin, home)


_PIP_SUMMARY_KEYS = ("index-url", "extra-index-url", "find-links", "trusted-host", "constraint")


def _describe_pip(pip: PipConfig, home: str | None) -> str:
    parts = []
    if pip.files_disabled:
        parts.append("config files off (PIP_CONFIG_FILE=os.devnull)")
    if pip.flag("no-index"):
        parts.append("no index (no-index)")
    elif pip.get("index-url") is None:
        parts.append("index PyPI (default)")
    for key in _PIP_SUMMARY_KEYS:
        setting = pip.get(key)
        if setting is not None:
            parts.append(f"{key} {' '.join(setting.items)} ({origin_text(setting.origin, home)})")
    broken = [f for f in pip.files if f.status in (MALFORMED, UNREADABLE, DIRECTORY)]
    if broken:
        parts.append(f"{len(broken)} file(s) not usable")
    return "pip: " + "; ".join(parts)


def _describe_conda(conda: CondaConfig) -> str:
    if not conda.in_use and not conda.settings:
        return "conda: not in use"
    channels = [name for name, _ in conda.merged_list("channels")]
    text = "conda: channels " + (", ".join(channels) if channels else "(none set)")
    alias = conda.last("channel_alias")
    if alias is not None and alias.value:
        text += f"; channel_alias {alias.value}"
    custom = conda.custom_channels()
    if custom:
        text += "; custom_channels " + ", ".join(name for name, _, _ in custom)
    return text


def _describe_uv(uv: UvConfig) -> str:
    if uv.files_disabled:
        prefix = "uv: config files off (UV_NO_CONFIG)"
    elif not uv.files and not uv.indexes and not uv.settings:
        return "uv: no configuration"
    else:
        prefix = "uv:"
    if not uv.indexes:
        return f"{prefix} default index"
    return f"{prefix} indexes " + ", ".join(i.url for i in uv.indexes)


def describe(facts: MirrorFacts) -> str:
    return " · ".join(
        (_describe_pip(facts.pip, facts.home), _describe_conda(facts.conda), _describe_uv(facts.uv))
    )


PROBE = ProbeSpec(
    name="mirrors",
    title="Package indexes",
    facts_type=MirrorFacts,
    collect=collect,
    describe=describe,
    timeout=5.0,
)
