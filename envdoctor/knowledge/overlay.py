"""The release overlay: what `envdoctor update` learned from the package indexes, beside the built-in data.

The overlay is one JSON file in the user's cache folder (schema `envdoctor.overlay/1`). It is never
required: without it envdoctor runs on its built-in tables. It only adds releases newer than the
built-in data; a release the built-in tables know is never overridden. Facts an index cannot tell
(a build's GPU architectures, a new CUDA version's minimum driver) are carried forward from the
nearest known build and marked `assumed` in the file and wherever they are shown.

It is read lazily, once per process, when a query first asks for releases. A corrupt or foreign
file is one warning line on stderr, and the built-in data is used alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from envdoctor.util.records import record

if TYPE_CHECKING:
    from packaging.version import Version

    from envdoctor.knowledge.tables import Release

SCHEMA = "envdoctor.overlay/1"
FILE_NAME = "releases-overlay.json"


def overlay_path(environ: Mapping[str, str] | None = None) -> str | None:
    """releases-overlay.json in envdoctor's cache folder (the one the rule catalogue uses:
    $ENVDOCTOR_CACHE_DIR, %LOCALAPPDATA%, ~/Library/Caches, $XDG_CACHE_HOME or ~/.cache)."""
    from envdoctor.paths import cache_dir

    folder = cache_dir(os.environ if environ is None else environ)
    return os.path.join(folder, FILE_NAME) if folder else None


class OverlayError(ValueError):
    """The overlay file cannot be used; the message says why in a few words."""


@record
class AssumedArchList:
    """A new build's arch list, carried forward from the nearest known build of the same kind."""

    torch: str
    variant: str
    machine: str  # "x86_64" or "aarch64", as archs.json splits its lists
    arch_list: str  # "7.5;8.0;8.6;9.0;10.0;12.0+PTX"
    origin: str  # "torch 2.13 cu130"
    references: tuple[str, ...] = ()  # the public sources of the list it was carried from


@record
class AssumedDriver:
    """A CUDA version the driver table lacks: its minimum drivers carried forward from a neighbour."""

    cuda: str
    linux: str | None
    windows: str | None
    origin: str  # "CUDA 13.2"


@record
class Overlay:
    path: str
    written: str  # when `envdoctor update` wrote it (UTC, ISO 8601)
    rows: tuple[Mapping[str, Any], ...]  # release rows in releases.json's shape
    arch_lists: tuple[AssumedArchList, ...] = ()
    drivers: tuple[AssumedDriver, ...] = ()
    default_index: str | None = None  # the simple index its releases' PyPI builds were read from


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise OverlayError(f"{what} is not a string")
    return value


def _optional_text(value: object, what: str) -> str | None:
    return None if value is None else _text(value, what)


def _list(data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise OverlayError(f"{key!r} is not a list")
    return value


def parse(data: object, path: str) -> Overlay:
    """The overlay in `data` (the file's JSON); OverlayError when it is not one envdoctor can use."""
    if not isinstance(data, dict):
        raise OverlayError("not a JSON object")
    schema = data.get("schema")
    if schema != SCHEMA:
        if isinstance(schema, str) and schema.startswith("envdoctor.overlay/"):
            raise OverlayError(f"schema {schema}, this envdoctor reads {SCHEMA}")
        raise OverlayError("no envdoctor overlay schema")
    rows = _list(data, "releases")
    for index, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("torch"), str):
            raise OverlayError(f"release {index} has no torch version")
    arch_lists = tuple(
        AssumedArchList(
            torch=_text(row.get("torch"), "arch_lists.torch"),
            variant=_text(row.get("variant"), "arch_lists.variant"),
            machine=_text(row.get("machine"), "arch_lists.machine"),
            arch_list=_text(row.get("arch_list"), "arch_lists.arch_list"),
            origin=_text(row.get("from"), "arch_lists.from"),
            references=tuple(str(r) for r in row.get("source", ()) if isinstance(r, str)),
        )
        for row in _list(data, "arch_lists")
        if isinstance(row, dict)
    )
    drivers = tuple(
        AssumedDriver(
            cuda=_text(row.get("cuda"), "drivers.cuda"),
            linux=_optional_text(row.get("linux"), "drivers.linux"),
            windows=_optional_text(row.get("windows"), "drivers.windows"),
            origin=_text(row.get("from"), "drivers.from"),
        )
        for row in _list(data, "drivers")
        if isinstance(row, dict)
    )
    return Overlay(
        path=path,
        written=str(data.get("written", "")),
        rows=tuple(rows),
        arch_lists=arch_lists,
        drivers=drivers,
        default_index=_default_index(data),
    )


def _default_index(data: Mapping[str, Any]) -> str | None:
    sources = data.get("sources")
    found = sources.get("default_index") if isinstance(sources, dict) else None
    return found if isinstance(found, str) and found else None


def read_from(torch: str) -> str | None:
    """The index `envdoctor update` read the default-index builds of an added release `torch` from
    (credentials left out, as the file keeps it); None for a release the overlay did not add."""
    found = current()
    if found is None or not any(row.get("torch") == torch for row in found.rows):
        return None
    return found.default_index


def read(path: str) -> Overlay | None:
    """The overlay at `path`; None when there is none; OverlayError when it is unusable."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise OverlayError(exc.strerror or str(exc)) from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise OverlayError(f"not JSON ({exc})") from None
    return parse(data, path)


def warn(path: str, why: str) -> None:
    sys.stderr.write(
        f"envdoctor: warning: ignoring the release overlay {path} ({why}); `envdoctor update` rewrites it\n"
    )


@cache
def current() -> Overlay | None:
    """The user's overlay, read once; None when there is none or it is unusable (said once on stderr)."""
    path = overlay_path()
    if path is None:
        return None
    try:
        return read(path)
    except OverlayError as exc:
        warn(path, str(exc))
        return None


def added_releases(builtin: tuple[Release, ...]) -> tuple[Release, ...]:
    """The overlay's releases that `builtin` lacks (the built-in data always wins)."""
    found = current()
    if found is None:
        return ()
    from envdoctor.knowledge.tables import parse_version, release_from_row

    known = {r.version for r in builtin}
    added: dict[Version, Release] = {}
    try:
        for row in found.rows:
            version = parse_version(row["torch"])
            if version is None or version in known:
                continue
            added[version] = release_from_row(dict(row))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        warn(found.path, f"a release row is incomplete: {type(exc).__name__} {exc}")
        return ()
    return tuple(added.values())


def arch_list(torch: str, variant: str, machine: str) -> AssumedArchList | None:
    """The carried-forward arch list of a release the overlay added, if it holds one."""
    found = current()
    if found is None:
        return None
    for row in found.arch_lists:
        if row.torch == torch and row.variant == variant and row.machine == machine:
            return row
    return None


def driver(cuda: str) -> AssumedDriver | None:
    """The carried-forward minimum drivers of a CUDA version the built-in table lacks."""
    found = current()
    if found is None:
        return None
    for row in found.drivers:
        if row.cuda == cuda:
            return row
    return None


def write(data: Mapping[str, Any], path: str) -> None:
    """Write the overlay atomically: a temporary file in the same folder, then os.replace, so a
    reader never sees half a file and an interrupted update leaves the old one in place."""
    import tempfile  # only `envdoctor update` writes; every query reads

    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".releases-overlay-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1, sort_keys=True)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


_FORGET: list[Callable[[], object]] = []  # the caches of what was derived from the overlay


def derived(clear: Callable[[], object]) -> None:
    """Register the cache-clear of a table derived from the overlay: `forget` empties it too (the
    modules that derive say so themselves, so the overlay needs to know none of them)."""
    _FORGET.append(clear)


def forget() -> None:
    """Drop what this process read (after an update wrote a new overlay, or between tests)."""
    current.cache_clear()
    for clear in _FORGET:
        clear()
