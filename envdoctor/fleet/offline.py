"""`envdoctor fleet SNAPSHOT...`: many nodes' snapshots, streamed one file at a time.

Each file is read and reduced to a digest of its facts (nodes.facts_digest); only a file whose
digest was not seen before is parsed, converted to typed facts and diagnosed. Memory holds the
groups, the digests and the node names, never the snapshots. A file that is not a snapshot is
named and skipped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from envdoctor.fleet.facts import FleetFacts, FleetMode, Unreadable
from envdoctor.fleet.nodes import Grouper, diagnose_snapshot, facts_digest, natural_key, stack_of
from envdoctor.settings import Settings
from envdoctor.snapshot import SCHEMA, SnapshotError, snapshot_from_data

SUFFIX = ".json"


class InputError(Exception):
    """A path given on the command line that names nothing usable; one line, exit 2."""


@dataclass(frozen=True)
class Entry:
    path: str
    node: str  # the node's name: the file's path under the folder given, without ".json"


def _node_name(path: str, root: str | None) -> str:
    relative = os.path.relpath(path, root) if root is not None else os.path.basename(path)
    name = relative[: -len(SUFFIX)] if relative.lower().endswith(SUFFIX) else relative
    return name.replace(os.sep, "/")


def _walk(root: str) -> Iterator[str]:
    """JSON files under `root`, in natural order per folder (node2 before node10)."""
    try:
        with os.scandir(root) as scan:
            entries = sorted(scan, key=lambda e: natural_key(e.name))
    except OSError as exc:
        raise InputError(f"{root}: cannot be listed ({exc.strerror or exc})") from None
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            yield from _walk(entry.path)
        elif entry.name.lower().endswith(SUFFIX):
            yield entry.path


def list_entries(paths: Sequence[str]) -> list[Entry]:
    """The snapshot files named by `paths` (files, or folders searched for *.json)."""
    entries: list[Entry] = []
    for path in paths:
        if os.path.isdir(path):
            found = [Entry(p, _node_name(p, path)) for p in _walk(path)]
            if not found:
                raise InputError(f"{path}: no *.json snapshot files in this folder")
            entries += found
        elif os.path.exists(path):
            entries.append(Entry(path, _node_name(path, None)))
        else:
            raise InputError(f"{path}: no such file or folder; expected snapshots or folders of them")
    return entries


def _read(path: str) -> tuple[bytes | None, str | None]:
    try:
        with open(path, "rb") as handle:
            return handle.read(), None
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"


def _parse(raw: bytes) -> tuple[dict[str, object] | None, str | None]:
    """The file's JSON object, or why it is no snapshot."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"not valid JSON ({exc}); the file is damaged or was cut short"
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        return None, f'not an envdoctor snapshot (expected "schema": "{SCHEMA}", found {found!r})'
    return data, None


def diagnose_files(
    entries: Sequence[Entry],
    settings: Settings,
    progress: Callable[[int], None] | None = None,
) -> FleetFacts:
    """Every node's verdict and stack, grouped; `progress(done)` is called now and then."""
    grouper = Grouper()
    seen: dict[bytes, int] = {}  # facts digest -> group index
    unreadable: list[Unreadable] = []
    for number, entry in enumerate(entries, 1):
        if progress is not None and number % 200 == 0:
            progress(number)
        raw, why = _read(entry.path)
        if raw is None:
            unreadable.append(Unreadable(entry.path, why or "unreadable"))
            continue
        digest = facts_digest(raw)
        index = seen.get(digest)
        if index is not None:  # the same facts as a node diagnosed before: only the name is new
            grouper.add_to(index, entry.node)
            continue
        data, why = _parse(raw)
        if data is None:
            unreadable.append(Unreadable(entry.path, why or "unreadable"))
            continue
        try:
            snapshot = snapshot_from_data(data, entry.path)
        except SnapshotError as exc:
            unreadable.append(Unreadable(entry.path, str(exc).removeprefix(f"{entry.path}: ")))
            continue
        check = diagnose_snapshot(snapshot, settings, entry.path)
        seen[digest] = grouper.add(stack_of(snapshot), check, entry.node)
    if progress is not None:
        progress(len(entries))
    return FleetFacts(mode=FleetMode.OFFLINE, groups=grouper.groups(), unreadable=tuple(unreadable))
