"""Snapshots: what the probes saw on one machine (redacted), to re-diagnose anywhere with --from.

The fixtures are snapshots too. Format "envdoctor.snapshot/1"; additive changes only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from envdoctor import __version__
from envdoctor.model import Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes import PROBES_BY_NAME
from envdoctor.redact import redact
from envdoctor.serde import DataError, from_data, to_data

SCHEMA = "envdoctor.snapshot/1"


class SnapshotError(Exception):
    """A file that cannot be used as a snapshot; the message is one line naming the file."""


@dataclass(frozen=True)
class Snapshot:
    platform: PlatformInfo
    interpreter: Interpreter
    probes: tuple[ProbeResult, ...]
    envdoctor_version: str = __version__
    created: str = ""
    description: str = ""  # fixtures: the situation, in words
    sources: tuple[str, ...] = ()  # fixtures: where the values come from (issues, docs)


def snapshot_to_data(snapshot: Snapshot) -> dict[str, Any]:
    clean = redact(snapshot)
    return {
        "schema": SCHEMA,
        "envdoctor_version": clean.envdoctor_version,
        "created": clean.created or datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "description": clean.description,
        "sources": list(clean.sources),
        "platform": to_data(clean.platform),
        "interpreter": to_data(clean.interpreter),
        "probes": [
            {
                "probe": p.probe,
                "status": p.status.value,
                "seconds": round(p.seconds, 3),
                "error": p.error,
                "facts": to_data(p.facts) if p.facts is not None else None,
            }
            for p in clean.probes
        ],
    }


def dumps(snapshot: Snapshot) -> str:
    return json.dumps(snapshot_to_data(snapshot), indent=2, sort_keys=False) + "\n"


def snapshot_from_data(data: object, name: str) -> Snapshot:
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise SnapshotError(
            f'{name}: not an envdoctor snapshot (expected "schema": "{SCHEMA}", found {found!r})'
        )
    try:
        platform = from_data(PlatformInfo, data.get("platform"), "$.platform")
        interpreter = from_data(Interpreter, data.get("interpreter"), "$.interpreter")
        raw_probes = data.get("probes")
        if not isinstance(raw_probes, list):
            raise DataError("$.probes: expected a list")
        probes = []
        for i, raw in enumerate(raw_probes):
            where = f"$.probes[{i}]"
            if not isinstance(raw, dict) or not isinstance(raw.get("probe"), str):
                raise DataError(f'{where}: expected an object with a "probe" name')
            spec = PROBES_BY_NAME.get(raw["probe"])
            if spec is None:
                continue  # a probe from a newer envdoctor: its facts cannot be judged here
            status = from_data(ProbeStatus, raw.get("status"), f"{where}.status")
            facts = raw.get("facts")
            probes.append(
                ProbeResult(
                    probe=spec.name,
                    status=status,
                    seconds=from_data(float, raw.get("seconds", 0.0), f"{where}.seconds"),
                    facts=None if facts is None else from_data(spec.facts_type, facts, f"{where}.facts"),
                    error=raw.get("error") if isinstance(raw.get("error"), str) else None,
                )
            )
        return Snapshot(
            platform=platform,
            interpreter=interpreter,
            probes=tuple(probes),
            envdoctor_version=str(data.get("envdoctor_version", "")),
            created=str(data.get("created", "")),
            description=str(data.get("description", "")),
            sources=tuple(str(s) for s in data.get("sources") or ()),
        )
    except DataError as exc:
        raise SnapshotError(f"{name}: not a valid snapshot: {exc}") from None


def load(path: str) -> Snapshot:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except IsADirectoryError:
        raise SnapshotError(f"{path}: is a folder; expected a snapshot JSON file") from None
    except FileNotFoundError:
        raise SnapshotError(f"{path}: no such file; expected a snapshot JSON file") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SnapshotError(f"{path}: cannot be read ({reason})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SnapshotError(
            f"{path}: not JSON ({exc}); expected a file written by `envdoctor snapshot`"
        ) from None
    return snapshot_from_data(data, path)
