"""`envdoctor fleet SNAPSHOT...`: many nodes' snapshots, streamed one file at a time.

Each file is read and reduced to a digest of its facts (digest.facts_digest); only a file whose
digest was not seen before is parsed, converted to typed facts and diagnosed. Memory holds the
groups, the digests and the node names, never the snapshots. A file that is not a snapshot is
named and skipped.
"""

from __future__ import annotations

import json
import os
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice

from envdoctor.fleet.digest import digest_files, facts_digest
from envdoctor.fleet.facts import FleetFacts, FleetMode, Unreadable
from envdoctor.fleet.nodes import Grouper, diagnose_snapshot, natural_key, stack_of
from envdoctor.settings import Settings
from envdoctor.snapshot import SCHEMA, SnapshotError, snapshot_from_data
from envdoctor.util.records import record

SUFFIX = ".json"
SERIAL = 1000  # files digested here before helper processes start: small fleets never pay for them
CHUNK = 256  # files per task of a helper process


class InputError(Exception):
    """A path given on the command line that names nothing usable; one line, exit 2."""


@record
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


def iter_entries(paths: Sequence[str]) -> Iterator[Entry]:
    """The snapshot files named by `paths` (files, or folders searched for *.json), one at a time:
    nothing is listed ahead, so memory does not grow with the number of files."""
    for path in paths:
        if not os.path.exists(path):
            raise InputError(f"{path}: no such file or folder; expected snapshots or folders of them")
    for path in paths:
        if not os.path.isdir(path):
            yield Entry(path, _node_name(path, None))
            continue
        found = False
        for file in _walk(path):
            found = True
            yield Entry(file, _node_name(file, path))
        if not found:
            raise InputError(f"{path}: no *.json snapshot files in this folder")


def list_entries(paths: Sequence[str]) -> list[Entry]:
    return list(iter_entries(paths))


def count_entries(paths: Sequence[str]) -> int:
    """How many files iter_entries will give (for a progress bar's total)."""
    return sum(1 for path in paths for _ in (_walk(path) if os.path.isdir(path) else (path,)))


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


def _digested_here(entries: Iterable[Entry]) -> Iterator[tuple[Entry, bytes | None, bytes | None]]:
    for entry in entries:
        raw, _ = _read(entry.path)
        yield entry, raw, None if raw is None else facts_digest(raw)


def _digested(entries: Iterable[Entry], workers: int) -> Iterator[tuple[Entry, bytes | None, bytes | None]]:
    """(entry, its bytes when read here, its digest): the first SERIAL files here, the rest by
    `workers` helper processes, a few chunks ahead at most (memory stays flat), in order."""
    stream = iter(entries)
    yield from _digested_here(islice(stream, SERIAL))
    if workers < 2:
        yield from _digested_here(stream)
        return
    try:
        import multiprocessing
        from concurrent.futures import Future, ProcessPoolExecutor

        # fork starts a helper in milliseconds; elsewhere helpers import only envdoctor.fleet.digest.
        fork = sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods()
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork") if fork else None)
    except (OSError, ImportError, ValueError):  # no processes to be had: do it all here
        yield from _digested_here(stream)
        return
    window: deque[tuple[list[Entry], Future[list[bytes | None]]]] = deque()

    def submit() -> None:
        chunk = list(islice(stream, CHUNK))
        if chunk:
            window.append((chunk, pool.submit(digest_files, [e.path for e in chunk])))

    with pool:
        for _ in range(2 * workers):
            submit()
        while window:
            chunk, future = window.popleft()
            submit()
            try:
                digests = future.result()
            except Exception:  # a helper died (killed, out of memory): this chunk is done here
                yield from _digested_here(chunk)
                continue
            for entry, digest in zip(chunk, digests):
                yield entry, None, digest


def diagnose_files(
    entries: Iterable[Entry],
    settings: Settings,
    progress: Callable[[int], None] | None = None,
    workers: int | None = None,
) -> FleetFacts:
    """Every node's verdict and stack, grouped; `progress(done)` is called now and then. Past the
    first SERIAL files, `workers` helper processes (default: one per CPU, up to 4) digest the rest."""
    workers = min(4, os.cpu_count() or 1) if workers is None else workers
    grouper = Grouper()
    seen: dict[bytes, int] = {}  # facts digest -> group index
    unreadable: list[Unreadable] = []
    number = 0
    for number, (entry, raw, digest) in enumerate(_digested(entries, workers), 1):
        if progress is not None and number % 200 == 0:
            progress(number)
        index = None if digest is None else seen.get(digest)
        if index is not None:  # the same facts as a node diagnosed before: only the name is new
            grouper.add_to(index, entry.node)
            continue
        if raw is None:  # digested elsewhere, or unreadable: read it here
            raw, why = _read(entry.path)
            if raw is None:
                unreadable.append(Unreadable(entry.path, why or "unreadable"))
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
        index = grouper.add(stack_of(snapshot), check, entry.node)
        if digest is not None:
            seen[digest] = index
    if progress is not None:
        progress(number)
    return FleetFacts(mode=FleetMode.OFFLINE, groups=grouper.groups(), unreadable=tuple(unreadable))
