"""What is installed in the examined interpreter, and where each distribution came from.

Read by a stdlib child (child/installed_state.py) in that interpreter, never by envdoctor's own
importlib: the examined environment is usually another one. Every distribution is recorded, so that
a restore can put back the dependencies a fix moved too; `family` picks the ones the report shows.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from envdoctor.host.base import Host
from envdoctor.util.pep503 import normalize_name
from envdoctor.util.records import record

STATE_SCHEMA = "envdoctor.fix-state/1"
_FAMILY = frozenset({"torch", "torchvision", "torchaudio", "triton", "pytorch-triton", "pytorch-triton-rocm"})
_READ_TIMEOUT = 60.0


class StateError(Exception):
    """The installed state could not be read or written; the message is one line for the user."""


def in_family(name: str) -> bool:
    """torch, its companions, triton and the nvidia-* CUDA wheels: what a torch fix moves."""
    key = normalize_name(name)
    return key in _FAMILY or key.startswith("nvidia-")


@record
class Installed:
    name: str
    version: str
    installer: str | None = None  # the INSTALLER file: pip, uv, conda, ...
    url: str | None = None  # direct_url.json's url: a wheel file, a folder, a VCS checkout
    editable: bool = False

    @property
    def key(self) -> str:
        return normalize_name(self.name)

    @property
    def origin(self) -> str:
        by = f"installed by {self.installer}" if self.installer else "installer unknown"
        if self.editable:
            return f"{by}, editable from {self.url}"
        return f"{by} from {self.url}" if self.url else f"{by} from an index"


@record
class EnvState:
    python: str
    dists: tuple[Installed, ...]

    def get(self, name: str) -> Installed | None:
        key = normalize_name(name)
        return next((d for d in self.dists if d.key == key), None)

    @property
    def family(self) -> tuple[Installed, ...]:
        return tuple(d for d in self.dists if in_family(d.name))


def state_from_records(python: str, records: Sequence[Mapping[str, Any]]) -> EnvState:
    """The child's records as a state; StateError when it did not finish (its last record is "done")."""
    errors = [str(r.get("error")) for r in records if r.get("record") == "error"]
    if errors:
        raise StateError(f"{python}: cannot list its packages ({errors[0]})")
    if not any(r.get("record") == "done" for r in records):
        raise StateError(f"{python}: the package listing did not finish")
    dists = []
    for item in records:
        if item.get("record") != "dist":
            continue
        name, version = item.get("name"), item.get("version")
        if not isinstance(name, str) or not isinstance(version, str):
            continue
        installer, url = item.get("installer"), item.get("url")
        dists.append(
            Installed(
                name=name,
                version=version,
                installer=installer if isinstance(installer, str) else None,
                url=url if isinstance(url, str) else None,
                editable=item.get("editable") is True,
            )
        )
    return EnvState(python, tuple(sorted(dists, key=lambda d: d.key)))


def read_state(host: Host, python: str, timeout: float = _READ_TIMEOUT) -> EnvState:
    outcome = host.python_json(python, "installed_state.py", (), timeout)
    if outcome.start_error or outcome.timed_out:
        why = outcome.start_error or f"no answer within {timeout:.0f} s"
        raise StateError(f"{python}: cannot list its packages ({why})")
    return state_from_records(python, outcome.records)


def state_to_data(state: EnvState, recorded_at: str) -> dict[str, Any]:
    return {
        "schema": STATE_SCHEMA,
        "recorded_at": recorded_at,
        "python": state.python,
        "family": [_dist_data(d) for d in state.family],
        "all": [_dist_data(d) for d in state.dists],
    }


def _dist_data(dist: Installed) -> dict[str, Any]:
    return {
        "name": dist.name,
        "version": dist.version,
        "installer": dist.installer,
        "url": dist.url,
        "editable": dist.editable,
    }


def save_state(folder: str, state: EnvState, stamp: str) -> str:
    """Write the state as JSON into `folder` (created if need be), atomically; its path."""
    try:
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"state-{stamp}.json")
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".state-", suffix=".json")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(state_to_data(state, stamp), out, indent=2, sort_keys=True)
            out.write("\n")
        os.replace(temporary, path)
    except OSError as exc:
        raise StateError(f"cannot record the installed packages in {folder} ({exc.strerror or exc})") from exc
    return path
