"""Torch extensions (torch_extensions.json): how each names the build it is, where a build for a
given torch comes from, and which pairs of releases belong together; plus the small tables of
native runtime libraries (runtime_libraries.json) and NumPy's C-API versions (numpy_abi.json)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from envdoctor.knowledge.provenance import Provenance, provenance, references
from envdoctor.knowledge.tables import load_table, parse_version
from envdoctor.util.records import record

_TABLE = "torch_extensions.json"
_RUNTIME = "runtime_libraries.json"
_NUMPY_ABI = "numpy_abi.json"


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@record
class Pair:
    version: str  # the extension's release
    torch: str  # the torch release (or "X.Y" series) it was built against


@record
class ExtensionRow:
    name: str
    # How a build for a given torch is had: "find_links" (a page per torch and variant), "index" (a
    # package index per variant), "pairs" (a release per torch), "rebuild" (compile it against the
    # installed torch) or "resolver" (its wheels pin torch: pip finds the release that accepts it).
    get: str
    modules: tuple[str, ...] = ()
    find_links: str | None = None
    index: str | None = None
    rebuild: str | None = None  # what to build from, when not its own sdist (a git URL)
    build_options: tuple[str, ...] = ()
    pairs: tuple[Pair, ...] = ()
    ops: Mapping[str, Any] | None = None  # set: a pure-Python install of it lacks its compiled ops
    provenance: Provenance | None = None

    @property
    def lite_before(self) -> str | None:
        value = (self.ops or {}).get("lite_before")
        return str(value) if value else None

    @property
    def instead(self) -> str | None:
        value = (self.ops or {}).get("instead")
        return str(value) if value else None


def _row(raw: Mapping[str, Any]) -> ExtensionRow:
    return ExtensionRow(
        name=str(raw["name"]),
        get=str(raw.get("get", "rebuild")),
        modules=tuple(str(m) for m in raw.get("modules") or ()),
        find_links=raw.get("find_links"),
        index=raw.get("index"),
        rebuild=raw.get("rebuild"),
        build_options=tuple(str(o) for o in raw.get("build_options") or ()),
        pairs=tuple(Pair(str(p["version"]), str(p["torch"])) for p in raw.get("pairs") or ()),
        ops=raw.get("ops"),
        provenance=provenance(raw),
    )


@cache
def _rows() -> dict[str, ExtensionRow]:
    return {_key(raw["name"]): _row(raw) for raw in load_table(_TABLE)["extensions"]}


def extension(name: str) -> ExtensionRow | None:
    return _rows().get(_key(name))


def _series(version: str) -> tuple[int, ...]:
    parsed = parse_version(version.split("+", 1)[0])
    return parsed.release if parsed is not None else ()


def _same_release(pair_torch: str, torch: str) -> bool:
    """A pair's torch "2.9" matches any 2.9.x; "2.9.1" only 2.9.1."""
    wanted, have = _series(pair_torch), _series(torch)
    return bool(wanted) and have[: len(wanted)] == wanted


def built_for(name: str, version: str) -> str | None:
    """The torch release (or series) the table pairs with this release of extension `name`."""
    row = extension(name)
    public = version.split("+", 1)[0]
    for pair in row.pairs if row is not None else ():
        if pair.version == public:
            return pair.torch
    return None


def release_for(name: str, torch: str) -> str | None:
    """The newest release of extension `name` the table pairs with this torch; None when unknown."""
    row = extension(name)
    found = [p for p in (row.pairs if row is not None else ()) if _same_release(p.torch, torch)]
    if not found:
        return None
    return max(found, key=lambda p: _series(p.version)).version


@record
class CondaBreak:
    package: str
    versions: tuple[str, ...]
    pin: str
    symbol: str
    provenance: Provenance


@cache
def conda_breaks() -> tuple[CondaBreak, ...]:
    return tuple(
        CondaBreak(
            package=str(raw["package"]),
            versions=tuple(str(v) for v in raw["versions"]),
            pin=str(raw["pin"]),
            symbol=str(raw["symbol"]),
            provenance=provenance(raw),
        )
        for raw in load_table(_RUNTIME)["conda_breaks"]
    )


def conda_break(package: str, version: str | None) -> CondaBreak | None:
    """The known break of conda package `package` at `version` (its X.Y release), if any."""
    for row in conda_breaks():
        if row.package == package and version and any(version.startswith(v) for v in row.versions):
            return row
    return None


@cache
def _gcc() -> dict[str, str]:
    return {str(raw["symbol"]): str(raw["gcc"]) for raw in load_table(_RUNTIME)["glibcxx"]}


def gcc_for(symbol: str) -> str | None:
    """The first GCC whose libstdc++ defines symbol version `symbol` (GLIBCXX_3.4.30 -> 12.1)."""
    return _gcc().get(symbol)


def glibcxx_source() -> tuple[str, ...]:
    return references(load_table(_RUNTIME)["glibcxx_source"])


@cache
def _numpy_api() -> tuple[tuple[int, str], ...]:
    return tuple((int(raw["api"]), str(raw["numpy"])) for raw in load_table(_NUMPY_ABI)["c_api"])


def numpy_for_api(api: int) -> str | None:
    """The first NumPy release that provides C-API version `api` (0xe -> 1.20); None when unknown."""
    return next((numpy for number, numpy in _numpy_api() if number == api), None)
