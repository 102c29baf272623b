"""What the configured package sources hold and whether they answer, so fixes use them.

The mirrors probe reads *which* sources pip and uv are configured with; this one looks *into* them,
cheaply and through the Host: the torch, torchvision and torchaudio wheel file names that local
find-links folders and file:// indexes list (a folder listing, or the project's simple page), the
lines of pip's constraint files that name those packages, and one short request to each remote
index a fix may name (PyTorch's wheel index, the configured index or PyPI's, the extra indexes),
all at once and within REACH_SECONDS, so the torch child hides it in `check`. `--offline` asks
nothing of the network.
"""

from __future__ import annotations

import functools
import ntpath
import posixpath
import re
import time
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

from envdoctor.host.base import Host
from envdoctor.model.sources import (
    LOADED,
    PYTORCH_WHEELS,
    UV_CONSTRAINT_SETTINGS,
    UV_CONSTRAINT_VARIABLES,
    ConstraintFile,
    ConstraintLine,
    ListingKind,
    ListingStatus,
    PipConfig,
    ReachCheck,
    ReachStatus,
    SourceListing,
    SourcesFacts,
    UvConfig,
    UvRoute,
    is_variable,
)
from envdoctor.probes.base import ProbeContext, ProbeSpec
from envdoctor.probes.config_files import ConfigSyntaxError, parse_toml
from envdoctor.probes.mirrors import collect_pip, collect_uv, short_path
from envdoctor.target import PythonInfo
from envdoctor.util import threads
from envdoctor.util.lazy_re import Lazy
from envdoctor.util.redact import learn

REACH_SECONDS = 2.0
PROJECTS = ("torch", "torchvision", "torchaudio")
_MAX_REACH = 6  # remote indexes asked at most; PyTorch's comes first
_WHEEL = Lazy(r"^(torch|torchvision|torchaudio)-[^/]*\.whl$", re.IGNORECASE)
_HREF = Lazy(r"""href\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
_REQUIREMENT = Lazy(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*([<>=!~][^;#]*)?")


# --- local listings -------------------------------------------------------------------------------


def _paths(os_name: str) -> Any:
    return ntpath if os_name == "windows" else posixpath


def local_path(url: str, os_name: str, cwd: str) -> str | None:
    """The folder or file a find-links/index value names on this machine; None for a remote URL."""
    value = url.strip()
    if value.startswith("file:"):
        parts = urlsplit(value)
        path = unquote(parts.path)
        if os_name == "windows" and re.match(r"^/[A-Za-z]:", path):
            path = path[1:].replace("/", "\\")
        return path or None
    if "://" in value:
        return None
    p = _paths(os_name)
    return value if p.isabs(value) else p.join(cwd, value)


def _names_in_page(text: str) -> tuple[str, ...]:
    from html import unescape  # html compiles a pattern at import: only an index page needs it

    found = []
    for href in _HREF.findall(text):
        name = unquote(unescape(href).split("#", 1)[0].split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1])
        if _WHEEL.match(name):
            found.append(name)
    return tuple(dict.fromkeys(found))


def _list_find_links(host: Host, path: str) -> tuple[ListingStatus, tuple[str, ...], str | None]:
    """A find-links folder's torch wheels (or those an HTML file links to)."""
    if host.is_dir(path):
        try:
            names = host.list_dir(path)
        except OSError as exc:
            return ListingStatus.UNREADABLE, (), exc.strerror or type(exc).__name__
        return ListingStatus.LISTED, tuple(sorted(n for n in names if _WHEEL.match(n))), None
    if not host.exists(path):
        return ListingStatus.MISSING, (), None
    try:
        return ListingStatus.LISTED, _names_in_page(host.read_text(path)), None
    except (OSError, UnicodeError) as exc:
        return ListingStatus.UNREADABLE, (), str(exc)


def _list_index(host: Host, root: str, os_name: str) -> tuple[ListingStatus, tuple[str, ...], str | None]:
    """A file:// simple index's torch wheels: each project's page, <root>/<project>/index.html."""
    if not host.is_dir(root):
        return ListingStatus.MISSING, (), None
    p = _paths(os_name)
    found: list[str] = []
    for project in PROJECTS:
        page = p.join(root, project, "index.html")
        if not host.exists(page):
            continue
        try:
            found += _names_in_page(host.read_text(page))
        except (OSError, UnicodeError) as exc:
            return ListingStatus.UNREADABLE, (), str(exc)
    return ListingStatus.LISTED, tuple(found), None


def _configured(pip: PipConfig | None, uv: UvConfig | None) -> Iterable[tuple[str, ListingKind, str, str]]:
    """(tool, kind, url, origin) for every index and find-links entry pip and uv are configured with."""
    if pip is not None and not pip.flag("no-index"):
        index = pip.get("index-url")
        if index is not None:
            yield "pip", ListingKind.INDEX, index.value.strip(), index.origin
    if pip is not None:
        for key, kind in (("extra-index-url", ListingKind.INDEX), ("find-links", ListingKind.FIND_LINKS)):
            setting = pip.get(key)
            if setting is not None and not (kind is ListingKind.INDEX and pip.flag("no-index")):
                for url in setting.items:
                    yield "pip", kind, url, setting.origin
    if uv is not None:
        for entry in uv.indexes:
            kind = ListingKind.FIND_LINKS if entry.flat else ListingKind.INDEX
            yield "uv", kind, entry.url, entry.origin


def list_sources(
    host: Host, os_name: str, pip: PipConfig | None, uv: UvConfig | None
) -> tuple[SourceListing, ...]:
    cwd = host.cwd()
    found: list[SourceListing] = []
    for tool, kind, url, origin in _configured(pip, uv):
        path = local_path(url, os_name, cwd)
        if path is None:
            continue
        if kind is ListingKind.FIND_LINKS:
            status, files, error = _list_find_links(host, path)
        else:
            status, files, error = _list_index(host, path, os_name)
        found.append(SourceListing(tool, kind, url, origin, path, status, files, error))
    return tuple(found)


def uv_routes(host: Host, uv: UvConfig | None) -> tuple[UvRoute, ...]:
    """The project's [tool.uv.sources] entries that route a package to a named index
    ({ index = "name" }, or a list of them with markers)."""
    project = [f for f in (uv.files if uv is not None else ()) if f.level == "project" and f.status == LOADED]
    if not project:
        return ()
    path = project[0].path
    try:
        data = parse_toml(host.read_text(path))
    except (OSError, UnicodeError, ConfigSyntaxError):
        return ()
    table: Any = data.get("tool", {}).get("uv", {}) if path.endswith("pyproject.toml") else data
    raw = table.get("sources") if isinstance(table, dict) else None
    if not isinstance(raw, dict):
        return ()
    found = []
    for package, value in raw.items():
        for entry in value if isinstance(value, list) else [value]:
            if isinstance(entry, dict) and isinstance(entry.get("index"), str):
                marker = entry.get("marker")
                found.append(
                    UvRoute(str(package), entry["index"], path, marker if isinstance(marker, str) else None)
                )
    return tuple(dict.fromkeys(found))


# --- constraints ----------------------------------------------------------------------------------


def _constraint_lines(text: str) -> tuple[ConstraintLine, ...]:
    found = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-")):
            continue
        match = _REQUIREMENT.match(line)
        if match is None or not match.group(3):
            continue
        name = match.group(1)
        if name.lower().replace("_", "-") in PROJECTS:
            found.append(ConstraintLine(name, match.group(3).strip().replace(" ", ""), number))
    return tuple(found)


def _constraint_file(host: Host, path: str, origin: str) -> ConstraintFile:
    if not host.exists(path) or host.is_dir(path):
        return ConstraintFile(path, origin, ListingStatus.MISSING)
    try:
        text = host.read_text(path)
    except (OSError, UnicodeError) as exc:
        return ConstraintFile(path, origin, ListingStatus.UNREADABLE, error=str(exc))
    learn(text)  # a requirements-style file may name an index with its credentials
    return ConstraintFile(path, origin, ListingStatus.LISTED, _constraint_lines(text))


def read_constraints(host: Host, os_name: str, pip: PipConfig | None) -> tuple[ConstraintFile, ...]:
    if pip is None:
        return ()
    setting = pip.get("constraint")
    if setting is None:
        return ()
    cwd = host.cwd()
    found = []
    for item in setting.items:
        path = local_path(item, os_name, cwd)
        if path is None:
            continue  # a constraint URL: pip fetches it; envdoctor does not
        found.append(_constraint_file(host, path, setting.origin))
    return tuple(found)


def _uv_setting_lines(text: str, values: Sequence[str]) -> tuple[ConstraintLine, ...]:
    """The entries of a constraint-dependencies list that name torch, with the line each is on."""
    found = []
    lines = text.splitlines()
    for value in values:
        parsed = _constraint_lines(value)
        if not parsed:
            continue
        number = next((i for i, raw in enumerate(lines, start=1) if value in raw), 0)
        found += [ConstraintLine(c.project, c.specifier, number) for c in parsed]
    return tuple(found)


def _uv_config_constraints(host: Host, path: str) -> list[ConstraintFile]:
    try:
        text = host.read_text(path)
        data = parse_toml(text)
    except (OSError, UnicodeError, ConfigSyntaxError):
        return []  # the mirrors probe already reports a file it cannot read
    table: Any = data.get("tool", {}).get("uv") if path.endswith("pyproject.toml") else data
    if not isinstance(table, dict):
        return []
    found = []
    for key in UV_CONSTRAINT_SETTINGS:
        values = table.get(key)
        if isinstance(values, list) and all(isinstance(v, str) for v in values):
            found.append(ConstraintFile(path, key, ListingStatus.LISTED, _uv_setting_lines(text, values)))
    return found


def read_uv_constraints(host: Host, os_name: str, uv: UvConfig | None) -> tuple[ConstraintFile, ...]:
    """uv's constraints and overrides: the variables' files first, then each loaded configuration
    file's settings (uv concatenates lists from the project, user and system files)."""
    if uv is None:
        return ()
    cwd = host.cwd()
    found: list[ConstraintFile] = []
    for variable in UV_CONSTRAINT_VARIABLES:
        for item in host.env.get(variable, "").split():
            path = local_path(item, os_name, cwd)
            if path is not None:  # a URL: uv fetches it; envdoctor does not
                found.append(_constraint_file(host, path, variable))
    for file in uv.files:
        if file.status == LOADED:
            found += _uv_config_constraints(host, file.path)
    return tuple(found)


# --- reachability ---------------------------------------------------------------------------------


def reach_targets(pip: PipConfig | None, uv: UvConfig | None, default_index: str | None) -> tuple[str, ...]:
    """The remote indexes a fix may name: PyTorch's wheel index, the index pip uses (its configured
    one or PyPI's), and the configured extra indexes and find-links pages."""
    urls = [PYTORCH_WHEELS]
    if pip is not None and not pip.flag("no-index"):
        index = pip.get("index-url")
        urls.append(index.value.strip() if index is not None else (default_index or ""))
        for key in ("extra-index-url", "find-links"):
            setting = pip.get(key)
            urls += list(setting.items) if setting is not None else []
    if uv is not None:
        urls += [i.url for i in uv.indexes]
    remote = [u for u in urls if u.startswith(("http://", "https://"))]
    return tuple(dict.fromkeys(remote))[:_MAX_REACH]


def check_reach(host: Host, urls: Sequence[str], seconds: float = REACH_SECONDS) -> tuple[ReachCheck, ...]:
    """One request to each URL, all at once; whatever has not answered within `seconds` (a DNS
    lookup cannot be given a timeout of its own) is unreachable."""
    results: dict[str, ReachCheck] = {}

    def ask(url: str) -> None:
        started = time.perf_counter()
        answer = host.url_status(url, seconds)
        took = time.perf_counter() - started
        if answer.status is not None:
            detail = f"HTTP {answer.status}"
            results[url] = ReachCheck(url, ReachStatus.REACHABLE, detail, round(took, 3))
        else:
            results[url] = ReachCheck(
                url, ReachStatus.UNREACHABLE, answer.error or "no answer", round(took, 3)
            )

    def failed(url: str, exc: BaseException) -> None:  # a bug while asking: unknown, said so
        why = f"envdoctor could not ask: {threads.describe(exc)}"
        results[url] = ReachCheck(url, ReachStatus.UNREACHABLE, why)

    started = time.perf_counter()
    workers = [
        # Daemon threads: a lookup stuck in the resolver cannot keep envdoctor from exiting.
        threads.start(functools.partial(ask, url), "reach", on_error=functools.partial(failed, url))
        for url in urls
    ]
    for thread in workers:
        thread.join(max(0.0, started + seconds - time.perf_counter()))
    late = f"no answer within {seconds:g} s"
    return tuple(results.get(u) or ReachCheck(u, ReachStatus.UNREACHABLE, late, seconds) for u in urls)


def not_checked(urls: Sequence[str], why: str) -> tuple[ReachCheck, ...]:
    return tuple(ReachCheck(u, ReachStatus.NOT_CHECKED, why) for u in urls)


# --- the probe ------------------------------------------------------------------------------------


def default_index_url() -> str | None:
    from envdoctor.knowledge.mirrors import pypi_default_url

    return pypi_default_url()


def collect_sources(
    host: Host,
    os_name: str,
    info: PythonInfo | None,
    *,
    offline: bool,
    reach: bool = True,
    pip: PipConfig | None = None,
    uv: UvConfig | None = None,
) -> SourcesFacts:
    """Listings and constraints always; the network only when `reach` and not `offline`."""
    pip = pip if pip is not None else collect_pip(host, os_name, info)
    uv = uv if uv is not None else collect_uv(host, os_name)
    urls = reach_targets(pip, uv, default_index_url())
    if offline:
        checks = not_checked(urls, "--offline")
    elif reach:
        checks = check_reach(host, urls)
    else:
        checks = ()
    return SourcesFacts(
        listings=list_sources(host, os_name, pip, uv),
        constraints=read_constraints(host, os_name, pip),
        reach=checks,
        offline=offline,
        home=host.home(),
        uv_routes=uv_routes(host, uv),
        uv_constraints=read_uv_constraints(host, os_name, uv),
    )


OFFLINE_VARIABLE = "ENVDOCTOR_OFFLINE"  # set (1/yes/true) it means --offline, for CI and test suites


def offline_wanted(host: Host, asked: bool) -> bool:
    value = host.env.get(OFFLINE_VARIABLE, "").strip().lower()
    return asked or value in ("1", "yes", "true", "on")


def collect(ctx: ProbeContext) -> SourcesFacts:
    offline = offline_wanted(ctx.host, ctx.options.offline)
    return collect_sources(ctx.host, ctx.host.platform().os, ctx.target.info, offline=offline)


def describe(facts: SourcesFacts) -> str:
    parts = []
    wheels = sorted(
        {f for listing in facts.listings for f in listing.files if f.lower().startswith("torch-")}
    )
    if wheels:
        parts.append("local torch wheels: " + ", ".join(wheels))
    missing = [lst for lst in facts.listings if lst.status is not ListingStatus.LISTED]
    if missing:
        parts.append(
            "not found: " + ", ".join(f"{short_path(m.path, facts.home)} ({m.status.value})" for m in missing)
        )
    for file in facts.constraints:
        named = ", ".join(f"{c.project}{c.specifier}" for c in file.lines)
        where = f"${file.origin}" if is_variable(file.origin) else short_path(file.path, facts.home)
        parts.append(f"constraints {named or '(none on torch)'} ({where})")
    for file in facts.uv_constraints:
        named = ", ".join(f"{c.project}{c.specifier}" for c in file.lines)
        if file.origin in UV_CONSTRAINT_SETTINGS and not named:
            continue  # a project's constraint-dependencies on other packages: not torch's business
        where = short_path(file.path, facts.home)
        if is_variable(file.origin):
            where = f"${file.origin}: {where}"
        elif file.origin in UV_CONSTRAINT_SETTINGS:
            where = f"{file.origin} in {where}"
        parts.append(f"uv constraints {named or '(none on torch)'} ({where})")
    if facts.offline:
        parts.append("network not asked (--offline)")
    else:
        answered = [r for r in facts.reach if r.status is ReachStatus.REACHABLE]
        silent = [r for r in facts.reach if r.status is ReachStatus.UNREACHABLE]
        if answered:
            parts.append("answered: " + ", ".join(_short_url(r.url) for r in answered))
        if silent:
            parts.append("no answer: " + ", ".join(f"{_short_url(r.url)} ({r.detail})" for r in silent))
    return "; ".join(parts) or "no local sources, nothing to ask"


def _short_url(url: str) -> str:
    parts = urlsplit(url)
    return (parts.hostname or url) + (parts.path.rstrip("/") if parts.path not in ("", "/") else "")


PROBE = ProbeSpec(
    name="sources",
    title="Package sources",
    facts_type=SourcesFacts,
    collect=collect,
    describe=describe,
    timeout=REACH_SECONDS + 3.0,
)
