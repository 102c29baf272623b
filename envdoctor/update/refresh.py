"""Refresh the release data: gather what the indexes show, assemble the rows, write the overlay.

Only releases newer than the built-in data are written; an overlay already there keeps the
releases this run did not see again (an index that did not answer takes nothing away).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from packaging.version import Version

from envdoctor import knowledge
from envdoctor.knowledge import Release
from envdoctor.knowledge import overlay as overlay_file
from envdoctor.update.assemble import NewRelease, assemble
from envdoctor.update.gather import Failure, gather
from envdoctor.util.urls import safe_url

DEFAULT_DEADLINE = 30.0


class UpdateError(Exception):
    """Nothing could be refreshed; the message is one line for the user."""


@dataclass(frozen=True)
class Sources:
    pytorch_index: str  # ".../whl": variant pages below it
    default_index: str | None  # a simple index (".../simple"); None: PyTorch's pages only
    default_origin: str = ""  # where the default index came from, for the output


@dataclass(frozen=True)
class Outcome:
    path: str
    data: Mapping[str, Any]
    new: tuple[NewRelease, ...]
    assumed: tuple[str, ...]  # one line each: what was carried forward
    failures: tuple[Failure, ...]
    pages: int  # project pages that answered
    metadata: int  # metadata files read
    seconds: float


def _kept(path: str, fresh: set[str]) -> tuple[list[Any], list[Any], list[Any]]:
    """The rows of the overlay already there that this run did not see again, their arch lists,
    and its driver rows."""
    try:
        before = overlay_file.read(path)
    except overlay_file.OverlayError:
        return [], [], []
    if before is None:
        return [], [], []
    rows = [dict(row) for row in before.rows if row.get("torch") not in fresh]
    kept = {row["torch"] for row in rows}
    arch_lists = [
        {
            "torch": a.torch,
            "variant": a.variant,
            "machine": a.machine,
            "arch_list": a.arch_list,
            "from": a.origin,
            "source": list(a.references),
            "assumed": True,
        }
        for a in before.arch_lists
        if a.torch in kept
    ]
    drivers = [
        {"cuda": d.cuda, "linux": d.linux, "windows": d.windows, "from": d.origin, "assumed": True}
        for d in before.drivers
    ]
    return rows, arch_lists, drivers


def refresh(
    sources: Sources,
    path: str,
    deadline_s: float = DEFAULT_DEADLINE,
    known: tuple[Release, ...] | None = None,
) -> Outcome:
    """Read the indexes and write the overlay at `path`; UpdateError when no index answered."""
    started = time.monotonic()
    known = knowledge.builtin_releases() if known is None else known
    seen, found = gather(
        sources.pytorch_index,
        sources.default_index,
        known,
        knowledge.python_versions(),
        started + deadline_s,
    )
    if seen.pages == 0:
        shown = "; ".join(f"{safe_url(f.url)}: {f.error}" for f in seen.failures[:2])
        raise UpdateError(f"no index answered ({shown or 'no pages'}); nothing was written")
    built = assemble(seen, found, known)
    kept_rows, kept_arch_lists, kept_drivers = _kept(path, {row["torch"] for row in built.rows})
    drivers = {row["cuda"]: row for row in kept_drivers}
    drivers.update(built.drivers)
    data: dict[str, Any] = {
        "schema": overlay_file.SCHEMA,
        "written": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "built_in_data": f"up to {known[-1].torch}, {knowledge.releases_as_of()}",
        "sources": {
            "pytorch_index": safe_url(sources.pytorch_index),
            "default_index": safe_url(sources.default_index) if sources.default_index else None,
        },
        "releases": sorted(kept_rows + built.rows, key=lambda r: Version(str(r["torch"]))),
        "arch_lists": kept_arch_lists + built.arch_lists,
        "drivers": [drivers[c] for c in sorted(drivers, key=Version)],
    }
    try:
        overlay_file.write(data, path)
    except OSError as exc:
        raise UpdateError(f"{path} cannot be written ({exc.strerror or exc})") from None
    overlay_file.forget()
    return Outcome(
        path=path,
        data=data,
        new=tuple(built.new),
        assumed=tuple(built.assumed),
        failures=tuple(seen.failures + found.failures),
        pages=seen.pages,
        metadata=found.read,
        seconds=time.monotonic() - started,
    )
