"""Snapshots: what the probes saw on one machine (redacted), to re-diagnose anywhere with --from.

The fixtures are snapshots too. Format "envdoctor.snapshot/1"; additive changes only.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from envdoctor.model.findings import Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes import PROBES_BY_NAME, ProbeSpec
from envdoctor.util import limits
from envdoctor.util.records import record
from envdoctor.util.redact import redact
from envdoctor.util.serde import DataError, from_data, to_data
from envdoctor.version import __version__

SCHEMA = "envdoctor.snapshot/1"


class SnapshotError(Exception):
    """A file that cannot be used as a snapshot; the message is one line naming the file."""


@record
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
        seen: set[str] = set()
        for i, raw in enumerate(raw_probes):
            where = f"$.probes[{i}]"
            if not isinstance(raw, dict) or not isinstance(raw.get("probe"), str):
                raise DataError(f'{where}: expected an object with a "probe" name')
            if raw["probe"] in seen:
                raise DataError(f"{where}: a second result for probe {raw['probe']!r}")
            seen.add(raw["probe"])
            spec = PROBES_BY_NAME.get(raw["probe"]) or _plugin_probe(raw["probe"])
            if spec is None:
                continue  # a probe from a newer envdoctor: its facts cannot be judged here
            status = from_data(ProbeStatus, raw.get("status"), f"{where}.status")
            facts = raw.get("facts")
            if status is ProbeStatus.OK and facts is None:
                raise DataError(f'{where}.facts: a probe with status "ok" needs its facts')
            seconds = from_data(float, raw.get("seconds", 0.0), f"{where}.seconds")
            if seconds < 0:
                raise DataError(f"{where}.seconds: expected a duration, got {seconds:g}")
            probes.append(
                ProbeResult(
                    probe=spec.name,
                    status=status,
                    seconds=seconds,
                    facts=None if facts is None else from_data(spec.facts_type, facts, f"{where}.facts"),
                    error=_optional_text(raw, "error", where),
                )
            )
        return Snapshot(
            platform=platform,
            interpreter=interpreter,
            probes=tuple(probes),
            envdoctor_version=_text(data, "envdoctor_version"),
            created=_text(data, "created"),
            description=_text(data, "description"),
            sources=from_data(tuple[str, ...], _or_empty(data.get("sources")), "$.sources"),
        )
    except DataError as exc:
        raise SnapshotError(f"{name}: not a valid snapshot: {exc}") from None


def _text(data: dict[str, Any], key: str) -> str:
    return from_data(str, data.get(key, ""), f"$.{key}")


def _or_empty(value: object) -> object:
    return [] if value is None else value


def _optional_text(data: dict[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    return None if value is None else from_data(str, value, f"{where}.{key}")


def load(path: str) -> Snapshot:
    try:
        # A regular file of sensible size only: a FIFO or /dev/zero is an error, never a hang.
        text = limits.read_text(path, limits.SNAPSHOT_LIMIT)
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
    except RecursionError:
        raise SnapshotError(f"{path}: not a snapshot (JSON nested too deeply)") from None
    return snapshot_from_data(data, path)


def _plugin_probe(name: str) -> ProbeSpec[Any] | None:
    """A plugin's probe of that name, when the plugin is installed here (its facts then load)."""
    from envdoctor.plugin.loader import PluginError, plugins

    try:
        loaded = plugins()
    except PluginError:  # clashing plugins: the command says so where it loads them
        return None
    return next((p for p in loaded.probes if p.name == name), None)
