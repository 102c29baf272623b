"""Refresh the release data: gather what the indexes show, assemble the rows, write the overlay.

Only releases newer than the built-in data are written. "Could not read" never becomes "does not
exist": an overlay already there keeps the releases this run did not see again, a release seen
again keeps, from the overlay before, every build whose page did not answer this time (a failed
cpu page must not take 2.14.1's CPU build away), and a release seen for the first time while
pages failed takes those pages' builds from the newest known release, marked assumed. The overlay
records which pages were read and which were not; an update that missed some says so and exits 1.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from packaging.version import Version

from envdoctor import knowledge
from envdoctor.knowledge import Release
from envdoctor.knowledge import overlay as overlay_file
from envdoctor.update.assemble import NOT_ON_DEFAULT_INDEX, NewRelease, assemble, variant_order
from envdoctor.update.gather import Failure, Page, gather
from envdoctor.util.records import record
from envdoctor.util.urls import safe_url

DEFAULT_DEADLINE = 30.0


class UpdateError(Exception):
    """Nothing could be refreshed; the message is one line for the user."""


@record
class Sources:
    pytorch_index: str  # ".../whl": variant pages below it
    default_index: str | None  # a simple index (".../simple"); None: PyTorch's pages only
    default_origin: str = ""  # where the default index came from, for the output


@record
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


def _previous_rows(path: str) -> dict[str, Mapping[str, Any]]:
    """The overlay already there, by release (read once per update), or nothing."""
    try:
        before = overlay_file.read(path)
    except overlay_file.OverlayError:
        return {}
    if before is None:
        return {}
    return {str(row.get("torch")): row for row in before.rows}


def _stand_in_row(release: Release) -> dict[str, Any]:
    """A release of the data as an overlay row: what a new release's unread pages are taken to hold."""
    return {
        "torch": release.torch,
        "platforms": {
            name: {"variants": list(builds.variants), "pypi": builds.pypi}
            for name, builds in release.platforms
        },
        "cuda": list(release.cuda),
        "rocm": list(release.rocm),
        "python": list(release.python),
    }


def _with_unread_builds(
    row: dict[str, Any],
    previous: Mapping[str, Any] | None,
    unread: tuple[Page, ...],
    stand_in: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """`row` as this run built it, plus what was known from pages that did not answer now: the
    overlay before's row for this release, else (a release this run saw for the first time) the
    newest known release's builds, marked assumed. The variants of unread PyTorch pages, the default
    index's build where its page was unread, the companions where their pages were (never from a
    stand-in: another release's companions). Also one line per platform whose builds were carried."""
    source = previous if previous is not None else stand_in
    if source is None or not unread:
        return row, []
    variants = {p.variant for p in unread if p.source == "pytorch" and p.project == "torch"}
    default_unread = any(p.source == "default" and p.project == "torch" for p in unread)
    merged = copy.deepcopy(row)
    platforms: dict[str, Any] = merged.setdefault("platforms", {})
    carried: list[str] = []
    for name, builds in (source.get("platforms") or {}).items():
        keep = [v for v in builds.get("variants", []) if v in variants]
        if default_unread and builds.get("pypi") and builds["pypi"] != NOT_ON_DEFAULT_INDEX:
            keep.append(builds["pypi"])
        now = platforms.get(name, {"variants": []})
        added = sorted(set(keep) - set(now["variants"]), key=variant_order)
        if not added:
            continue
        now = platforms.setdefault(name, {"variants": [], "pypi": builds.get("pypi", "")})
        now["variants"] = sorted(set(now["variants"]) | set(keep), key=variant_order)
        if default_unread and builds.get("pypi"):
            now["pypi"] = builds["pypi"]
        if "python" in builds:
            now["python"] = sorted(
                set(now.get("python", merged.get("python", []))) | set(builds["python"]), key=Version
            )
        if previous is None:
            merged.setdefault("assumed_fields", []).append(f"platforms.{name}.variants")
            carried.append(
                f"torch {row['torch']}: {', '.join(added)} on {name} taken to exist, as for "
                f"{source['torch']} (their pages did not answer)"
            )
    if previous is None and not carried:
        return row, []
    for key in ("cuda", "rocm", "python"):
        merged[key] = sorted(set(merged.get(key, [])) | set(source.get(key, [])), key=Version)
    if previous is not None:
        for project in ("torchvision", "torchaudio"):
            if merged.get(project) is None and any(p.project == project for p in unread):
                merged[project] = previous.get(project)
    return merged, carried


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
    unread = tuple(f.page for f in (*seen.failures, *found.failures) if f.page is not None)
    stand_in = _stand_in_row(known[-1]) if known else None
    fresh_rows: list[dict[str, Any]] = []
    carried: list[str] = []
    previous = _previous_rows(path)
    for row in built.rows:
        merged, lines = _with_unread_builds(row, previous.get(row["torch"]), unread, stand_in)
        fresh_rows.append(merged)
        carried += lines
    kept_rows, kept_arch_lists, kept_drivers = _kept(path, {row["torch"] for row in fresh_rows})
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
        "releases": sorted(kept_rows + fresh_rows, key=lambda r: Version(str(r["torch"]))),
        "arch_lists": kept_arch_lists + built.arch_lists,
        "drivers": [drivers[c] for c in sorted(drivers, key=Version)],
        "pages": {
            "read": [safe_url(url) for url in seen.read],
            "not_read": [{"url": safe_url(f.url), "error": f.error} for f in seen.failures],
        },
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
        assumed=(*built.assumed, *carried),
        failures=tuple(seen.failures + found.failures),
        pages=seen.pages,
        metadata=found.read,
        seconds=time.monotonic() - started,
    )
