"""What a probe is: a named, time-bounded collector of typed facts. Probes never judge."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from envdoctor.host.base import Host
from envdoctor.target import Target

F = TypeVar("F")


class NotApplicable(Exception):
    """The probe has nothing to look at on this machine (a Windows probe on Linux, say)."""


@dataclass(frozen=True)
class CheckOptions:
    """Knobs a probe may read; later areas add theirs here."""

    smoke: bool = True
    smoke_size: int | None = None
    timeout: float = 60.0
    offline: bool = False  # no network at all (the sources probe's reachability checks)
    details: bool = False  # gather what only a bug report needs (the environment probe)


@dataclass(frozen=True)
class ProbeContext:
    host: Host
    target: Target
    options: CheckOptions = field(default_factory=CheckOptions)


@dataclass(frozen=True)
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
