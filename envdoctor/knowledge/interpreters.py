"""Which Python interpreters torch has wheels for (interpreters.json, with releases.json): the
Python versions of a release on a platform, releases older than releases.json, free-threaded
(3.13t, ...) builds, and the word size no wheel exists for.

Unknown releases answer None ("not in envdoctor's data"), never a guess.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from packaging.version import InvalidVersion, Version

from envdoctor import knowledge
from envdoctor.knowledge import load_table
from envdoctor.knowledge.provenance import references
from envdoctor.util.records import record


def _version(text: str) -> Version | None:
    try:
        return Version(text.split("+", 1)[0])
    except InvalidVersion:
        return None


def _minor_key(minor: str) -> tuple[int, ...]:
    return tuple(int(p) for p in minor.split(".") if p.isdigit())


@cache
def _table() -> dict[str, Any]:
    return load_table("interpreters.json")


@cache
def _older() -> dict[str, tuple[str, ...]]:
    rows = _table()["older_releases"]["rows"]
    return {str(r["torch"]): tuple(str(p) for p in r["python"]) for r in rows}


def pythons(torch: str, platform: str) -> tuple[str, ...] | None:
    """The Python minors ("3.11") torch `torch` has wheels for on `platform`; None: unknown release."""
    row = knowledge.release(torch)
    if row is not None:
        builds = row.builds(platform)
        if builds is None:
            return ()
        return tuple(builds.python or row.python)
    wanted = _version(torch)
    if wanted is None:
        return None
    for version, found in _older().items():
        if Version(version) == wanted:
            return found
    return None


@record
class Span:
    """The releases that have a wheel for one Python on one platform."""

    first: str | None  # the oldest known release with one
    last: str | None  # the newest known release with one


def span(python: str, platform: str) -> Span:
    """Which known releases have a wheel for Python `python` ("3.13") on `platform`."""
    found = [v for v in _older() if python in _older()[v]]
    found += [r.torch for r in knowledge.known_releases() if python in (pythons(r.torch, platform) or ())]
    ordered = sorted(found, key=Version)
    return Span(ordered[0] if ordered else None, ordered[-1] if ordered else None)


def newest_python(platform: str) -> str | None:
    """The newest Python minor any known release has a wheel for on `platform`."""
    found = {p for r in knowledge.known_releases() for p in (pythons(r.torch, platform) or ())}
    return max(found, key=_minor_key) if found else None


def free_threaded_from(python: str) -> str | None:
    """The first release with free-threaded builds for Python `python` ("3.13"); None: none known."""
    for row in _table()["free_threaded"]["rows"]:
        if str(row["python"]) == python:
            return str(row["from"])
    return None


def free_threaded_pythons() -> tuple[str, ...]:
    return tuple(str(r["python"]) for r in _table()["free_threaded"]["rows"])


def wheel_bits() -> int:
    """The word size every torch wheel is built for (64): no wheel exists for a 32-bit Python."""
    return int(_table()["word_size"]["bits"])


def placeholder_release() -> str:
    """The release pip finds on the default index when no wheel fits the interpreter (0.1.2)."""
    return str(_table()["word_size"]["placeholder"])


def sources(section: str) -> tuple[str, ...]:
    """The public references of one section of interpreters.json."""
    return references(_table()[section].get("source"))


def minor_key(minor: str) -> tuple[int, ...]:
    """ "3.13" as (3, 13), to compare Python minors."""
    return _minor_key(minor)
