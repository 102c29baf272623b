"""The process limits and shared memory that DataLoader workers and RDMA transports need: the sizes
below which the threads failed, and the commands that raise them (resource_limits.json)."""

from __future__ import annotations

from typing import Any

from envdoctor.knowledge import load_table
from envdoctor.model.findings import Fix

_TABLE = "resource_limits.json"


def _row(name: str) -> dict[str, Any]:
    found: dict[str, Any] = load_table(_TABLE)[name]
    return found


def _fixes(name: str) -> tuple[Fix, ...]:
    return tuple(
        Fix(summary=row["summary"], commands=tuple(row.get("commands", ())), link=row.get("link"))
        for row in _row(name)["fixes"]
    )


def limits_file() -> str:
    return str(load_table(_TABLE)["limits_file"])


def shm_path() -> str:
    return str(_row("shm")["path"])


def shm_min_bytes() -> int:
    return int(_row("shm")["min_bytes"])


def shm_fixes() -> tuple[Fix, ...]:
    return _fixes("shm")


def memlock_name() -> str:
    return str(_row("memlock")["name"])


def memlock_min_bytes() -> int:
    return int(_row("memlock")["min_bytes"])


def infiniband_dir() -> str:
    return str(_row("memlock")["infiniband"])


def memlock_fixes() -> tuple[Fix, ...]:
    return _fixes("memlock")


def nofile_name() -> str:
    return str(_row("nofile")["name"])


def nofile_min() -> int:
    return int(_row("nofile")["min"])


def nofile_alone_below() -> int:
    """A soft open-files limit so low that it is named before any DataLoader fails."""
    return int(_row("nofile")["alone_below"])


def nofile_fixes() -> tuple[Fix, ...]:
    return _fixes("nofile")
