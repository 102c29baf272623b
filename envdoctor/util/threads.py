"""Background threads that never print a traceback.

Every thread envdoctor starts runs its work through `start`: an exception the work did not expect
goes to the thread's `on_error` (which turns it into an answer: an unreachable index, a failed
request), and failing that becomes one line on stderr with credentials masked. Python's own
handler would print the whole traceback, with whatever secret the exception's message holds.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable


def describe(exc: BaseException) -> str:
    """`Type: message (at function:line)`, credentials masked: for a note or a finding."""
    import traceback

    from envdoctor.util.redact import one_line

    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {frames[-1].name}:{frames[-1].lineno})" if frames else ""
    message = str(exc)
    return one_line(f"{type(exc).__name__}: {message}{where}" if message else f"{type(exc).__name__}{where}")


def note_crash(name: str, exc: BaseException) -> None:
    """One line on stderr for a background task that failed with nothing to answer in its place."""
    try:
        sys.stderr.write(f"envdoctor: note: the background task '{name}' failed: {describe(exc)}\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed: nothing more can be said
        pass


def contained(
    work: Callable[[], object], name: str, on_error: Callable[[BaseException], None] | None
) -> None:
    """Run `work`; an exception goes to `on_error`, or to a note when there is none or it fails."""
    try:
        work()
    except Exception as exc:
        if on_error is not None:
            try:
                on_error(exc)
                return
            except Exception as again:
                exc = again
        note_crash(name, exc)


def create(
    work: Callable[[], object], name: str, on_error: Callable[[BaseException], None] | None = None
) -> threading.Thread:
    """A daemon thread, not yet started, that runs `work` contained. Daemon: a thread stuck in
    native code (a name lookup, a driver call) cannot keep envdoctor from exiting."""
    return threading.Thread(target=contained, args=(work, name, on_error), name=name, daemon=True)


def start(
    work: Callable[[], object], name: str, on_error: Callable[[BaseException], None] | None = None
) -> threading.Thread:
    """`create`, started."""
    thread = create(work, name, on_error)
    thread.start()
    return thread


def excepthook(args: threading.ExceptHookArgs) -> None:
    """The process-wide last resort for a thread started elsewhere (a library's): one line."""
    if args.exc_type is SystemExit or args.exc_value is None:
        return
    note_crash(args.thread.name if args.thread is not None else "thread", args.exc_value)
