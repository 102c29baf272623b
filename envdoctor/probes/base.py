"""What a probe is: a named, time-bounded collector of typed facts. Probes never judge."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import field
from typing import Any, Generic, TypeVar

from envdoctor.host.base import Host
from envdoctor.target import Target
from envdoctor.util.records import record

F = TypeVar("F")


class NotApplicable(Exception):
    """The probe has nothing to look at on this machine (a Windows probe on Linux, say)."""


@record
class CheckOptions:
    """Knobs a probe may read; later areas add theirs here."""

    smoke: bool = True
    smoke_size: int | None = None
    timeout: float = 60.0
    offline: bool = False  # no network at all (the sources probe's reachability checks)
    details: bool = False  # gather what only a bug report needs (the environment probe)
    # The time.monotonic() by which every probe must have answered (the process's --timeout,
    # counted from its start); None: each probe gets `timeout` from when the probes start.
    deadline: float | None = None

    def seconds_left(self, limit: float) -> float:
        """`limit`, cut to what is left before the deadline (never below a tenth of a second)."""
        if self.deadline is None:
            return limit
        return max(0.1, min(limit, self.deadline - time.monotonic()))

    def child_limit(self, probe_timeout: float, cap: float, share: float) -> float:
        """The limit for one program a probe runs: `share` of the probe's time (its own timeout or
        --timeout, the smaller) and of what the run has left, at most `cap` seconds. Shares that
        add up to less than 1 let the probe finish, and name what hung, before its deadline."""
        limit = min(probe_timeout, self.timeout)
        if self.deadline is not None:
            limit = min(limit, self.deadline - time.monotonic())
        return max(0.1, min(cap, limit * share))


@record
class ProbeContext:
    host: Host
    target: Target
    options: CheckOptions = field(default_factory=CheckOptions)


@record
class ProbeSpec(Generic[F]):
    """One probe. `describe` turns its facts into the short verdict of its area line; `details`,
    when given, into lines the console shows under it (the smoke test's block)."""

    name: str
    title: str
    facts_type: type[F]
    collect: Callable[[ProbeContext], F]
    describe: Callable[[F], str]
    timeout: float = 10.0
    slow: bool = False  # started first, so the others hide behind it
    details: Callable[[F], tuple[str, ...]] | None = None
    # Run only when the caller asks for details (`report`, `snapshot`), and no area line of its own.
    on_request: bool = False

    def describe_any(self, facts: Any) -> str:
        return self.describe(facts)

    def details_any(self, facts: Any) -> tuple[str, ...]:
        return self.details(facts) if self.details is not None else ()
