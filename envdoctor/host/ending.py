"""A ChildEnding from what the host saw of a child: its outcome, or a plain command's result."""

from __future__ import annotations

from envdoctor.host.base import ChildOutcome, CommandResult
from envdoctor.model.ending import ChildEnding, EndingKind

__all__ = ["ChildEnding", "EndingKind", "ending_of_outcome", "ending_of_result"]


def ending_of_outcome(outcome: ChildOutcome, limit: float | None = None) -> ChildEnding:
    return ChildEnding.of(
        exit_code=outcome.returncode,
        signal=outcome.signal,
        timed_out=outcome.timed_out,
        start_error=outcome.start_error,
        stderr_tail=outcome.stderr_tail,
        limit=limit,
    )


def ending_of_result(result: CommandResult, limit: float | None = None) -> ChildEnding:
    """A plain command's ending (a negative exit code is the signal that killed it on POSIX); its
    last words are on stderr, or on stdout for tools that print errors there."""
    code = result.returncode
    died_of = -code if code is not None and code < 0 else None
    return ChildEnding.of(
        exit_code=code,
        signal=died_of,
        timed_out=result.timed_out,
        start_error=result.start_error,
        stderr_tail=result.stderr.strip() or result.stdout.strip(),
        limit=limit,
    )
