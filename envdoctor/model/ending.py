"""How a child process ended without its report, and the one way envdoctor says so.

A recorded fact (a probe keeps it, a rule quotes it), so it lives with the shared types; the host
builds one from what a child left (host/ending.py).

Every probe that runs a child (the torch check, NVML, the DLL check, the interpreter's self-report)
and the rules that quote its ending describe it through ChildEnding, so "crashed (signal 11)" reads
the same in a probe line, a finding and an error message.
"""

from __future__ import annotations

from envdoctor.model.types import TextEnum
from envdoctor.util.records import record


class EndingKind(TextEnum):
    NOT_STARTED = "not_started"  # the program could not be executed at all
    TIMEOUT = "timeout"  # still running at its time limit: stopped
    SIGNAL = "signal"  # killed by a signal: a native crash (11 is a segfault)
    EXITED = "exited"  # exited by itself (any code) before it reported


@record
class ChildEnding:
    kind: EndingKind
    exit_code: int | None = None
    signal: int | None = None
    start_error: str | None = None  # "not found", "permission denied", ...
    limit: float | None = None  # the time limit it ran under, when the words should say it
    stderr_tail: str = ""

    @classmethod
    def of(
        cls,
        *,
        exit_code: int | None,
        signal: int | None,
        timed_out: bool,
        start_error: str | None,
        stderr_tail: str = "",
        limit: float | None = None,
    ) -> ChildEnding:
        """The ending from the raw fields a host reports; a start failure outranks the rest."""
        if start_error:
            kind = EndingKind.NOT_STARTED
        elif timed_out:
            kind = EndingKind.TIMEOUT
        elif signal:
            kind = EndingKind.SIGNAL
        else:
            kind = EndingKind.EXITED
        return cls(kind, exit_code, signal, start_error, limit, stderr_tail)

    def describe(self, stage: str | None = None) -> str:
        """A verb phrase: "crashed during import (signal 11)", "hung for 15 s", "exited with code 3",
        "could not start: not found". `stage` is what the child was doing when it ended."""
        during = f" during {stage}" if stage else ""
        if self.kind is EndingKind.NOT_STARTED:
            return f"could not start: {self.start_error}"
        if self.kind is EndingKind.TIMEOUT:
            limit = f" for {_seconds(self.limit)} s" if self.limit is not None else ""
            return f"hung{limit}{during}"
        if self.kind is EndingKind.SIGNAL:
            return f"crashed{during} (signal {self.signal})"
        return f"exited{during} with code {self.exit_code}"

    def last_output(self, lines: int = 1, width: int | None = None) -> str:
        """The last `lines` lines the child wrote on stderr, joined by " | ", each cut at `width`."""
        tail = self.stderr_tail.strip().splitlines()[-lines:]
        return " | ".join(line[:width] for line in tail)


def _seconds(value: float) -> str:
    """ "15" for 15.0 or 14.6; "1.7" for 1.67 and "0.5" for 0.5: limits derived from a short
    --timeout are fractions, and "hung for 0 s" would say nothing."""
    return f"{value:.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"
