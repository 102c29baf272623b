"""Ranks meet in the launcher's rendezvous store (torch's TCPStore) and exchange bytes there.

Every value is JSON of a typed record (serde) or a compressed snapshot: no pickle, no NumPy, and a
rank that never writes blocks no one, because readers only ever check whether a key exists and
poll against their own deadline. Each user of the store (the main flow, the heartbeat, the process
group) gets its own connection: TCPStore serialises the operations of one connection, so a wait in
one would stall the others.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import zlib
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, TypeVar

from envdoctor.fleet.facts import Rendezvous
from envdoctor.fleet.launcher import Launch
from envdoctor.util import threads
from envdoctor.util.serde import DataError, from_data, to_data

T = TypeVar("T")
HEARTBEAT_SECONDS = 0.2


class StoreError(Exception):
    """The store could not be reached or used; the message says how."""


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip(": ")


class Exchange:
    """One connection to the store, under envdoctor's own key prefix."""

    def __init__(self, store: Any, prefix_store: Any) -> None:
        self.raw = store  # kept alive: the prefix store does not own it
        self.store = prefix_store

    def put(self, key: str, value: bytes) -> None:
        self.store.set(key, value)

    def has(self, keys: Sequence[str]) -> bool:
        return bool(self.store.check(list(keys)))

    def get(self, key: str) -> bytes | None:
        """The value, or None when nobody wrote it yet (never waits)."""
        if not self.has([key]):
            return None
        return bytes(self.store.get(key))

    def add(self, key: str, amount: int) -> int:
        return int(self.store.add(key, amount))

    def put_record(self, key: str, record: object) -> None:
        self.put(key, json.dumps(to_data(record)).encode("utf-8"))

    def get_record(self, key: str, kind: type[T]) -> T | None:
        raw = self.get(key)
        if raw is None:
            return None
        try:
            return from_data(kind, json.loads(raw.decode("utf-8")), key)
        except (ValueError, DataError):
            return None

    def put_blob(self, key: str, text: str) -> None:
        self.put(key, zlib.compress(text.encode("utf-8"), 6))

    def get_blob(self, key: str) -> str | None:
        raw = self.get(key)
        return None if raw is None else zlib.decompress(raw).decode("utf-8")


def _resolve(address: str, port: int) -> None:
    try:
        socket.getaddrinfo(address, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise StoreError(f"MASTER_ADDR {address} does not resolve ({exc.strerror or exc})") from None


def connect(
    dist: Any, launch: Launch, timeout: float, serve: bool, prefix: str = ""
) -> tuple[Exchange | None, Rendezvous]:
    """A connection to the job's store; `serve`: this process hosts it (rank 0 without an agent)."""
    started = time.monotonic()
    role = "server" if serve else "agent" if launch.agent_store else "client"

    def outcome(reached: bool, error: str | None = None) -> Rendezvous:
        return Rendezvous(
            launcher=launch.kind.value,
            address=launch.master_addr,
            port=launch.master_port,
            role=role,
            reached=reached,
            error=error,
            seconds=round(time.monotonic() - started, 2),
        )

    try:
        if not serve:
            _resolve(launch.master_addr, launch.master_port)
        store = dist.TCPStore(
            launch.master_addr,
            launch.master_port,
            None,
            serve,
            timedelta(seconds=max(1.0, timeout)),
            wait_for_workers=False,
            multi_tenant=serve,
        )
        store.set_timeout(timedelta(seconds=max(1.0, timeout)))
    except StoreError as exc:
        return None, outcome(False, str(exc))
    except Exception as exc:  # torch raises RuntimeError/DistNetworkError/DistStoreError, by version
        return None, outcome(False, _describe(exc))
    prefixed = dist.PrefixStore(f"envdoctor/{launch.run_id}/{prefix}", store)
    return Exchange(store, prefixed), outcome(True)


class Heartbeat:
    """Adds 1 to beat/<rank> every HEARTBEAT_SECONDS, on its own connection: rank 0 tells a rank that
    is alive but stuck from one whose process is gone."""

    def __init__(self, exchange: Exchange, rank: int) -> None:
        self._exchange = exchange
        self._key = f"beat/{rank}"
        self._stop = threading.Event()
        self._thread = threads.create(self._run, "envdoctor-heartbeat")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._exchange.add(self._key, 1)
            except Exception:  # the store went away: rank 0 is gone or finished
                return
            self._stop.wait(HEARTBEAT_SECONDS)


def alive_ranks(exchange: Exchange, ranks: Sequence[int], window: float) -> set[int]:
    """Which of `ranks` beat at least twice during `window` seconds (two samples, one window apart)."""

    def sample() -> dict[int, int]:
        found = {}
        for rank in ranks:
            key = f"beat/{rank}"
            if exchange.has([key]):
                found[rank] = exchange.add(key, 0)
        return found

    before = sample()
    time.sleep(window)
    after = sample()
    return {rank for rank in ranks if after.get(rank, 0) >= before.get(rank, 0) + 2}
