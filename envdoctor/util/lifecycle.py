"""The process's life: its time budget, the children it started, and how it ends.

Every child (the torch child, nvcc, the interpreter's self-report) runs in a session of its own, so
a timeout can kill its whole tree; that also means a Ctrl-C in the terminal never reaches it. So
envdoctor keeps the list here and kills every child's process group on every way out: a normal
exit, an exception, SIGINT, SIGTERM or SIGHUP (then one line on stderr and exit 130 at once).

A signal ends the process from its handler (os._exit) rather than by raising KeyboardInterrupt:
Python runs the handler at whatever bytecode the main thread is at, and an exception raised there
can be swallowed (inside a weakref callback of the import system: the check went on and exited 0)
or can mark the whole interpreter as killed by SIGINT although the CLI caught it (inside the
`exec` of a dataclass's generated __init__: exit -2 instead of 130). Only `interruptible` code
(`envdoctor fix`, which reports what it changed) gets the KeyboardInterrupt.

A closed stdout (`envdoctor rules | head -1`) is not a failure either: output goes to the null
device from then on and the run ends with the code it would have had.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # subprocess itself loads only with the first child (help and explain never start one)
    import subprocess

EXIT_INTERRUPTED = 130

_lock = threading.Lock()
_children: set[subprocess.Popen[Any]] = set()
_closing = False
_installed = False
_started: float | None = None  # when the console entry point began (install)
_checks_timed = 0  # how many check deadlines were given out (envdoctor fix runs two checks)


class Exiting(OSError):
    """No child is started once envdoctor has begun to exit."""


def deadline(timeout: float) -> float:
    """The time.monotonic() by which a check given `timeout` seconds must be done. The process's
    first check counts from the start of the process under the console entry point (so that
    `check --timeout 60` ends within 60 s, start-up included); every later one, and in-process
    callers, from now: `envdoctor fix`'s check after a 5-minute pip install gets its full budget
    too, or its probes would get half a second and call a working torch hung."""
    global _checks_timed
    first = _checks_timed == 0
    _checks_timed += 1
    return (_started if first and _started is not None else time.monotonic()) + timeout


def left(until: float, floor: float = 0.1) -> float:
    """Seconds left until the monotonic time `until`, at least `floor`."""
    return max(floor, until - time.monotonic())


MIN_QUESTION_SECONDS = 1.0  # a Python answers about itself in a tenth of that
MIN_PROBE_SECONDS = 0.5  # however late the probes start, enough to catch a hung import (ED003)


def question_timeout(until: float) -> float:
    """The limit for asking the examined interpreter about itself: most of what is left."""
    return max(MIN_QUESTION_SECONDS, 0.8 * left(until))


def probes_until(until: float) -> float:
    """The probes' deadline: `until`, or a moment from now when start-up already used it up."""
    return max(until, time.monotonic() + MIN_PROBE_SECONDS)


_at_exit = False

# Python runs signal handlers in the main thread, between any two bytecodes. A handler that ran
# while the main thread holds _lock would wait for it forever (kill_all takes it too), and one that
# raised inside `start()` (subprocess.Popen, after the fork) would leave a child nobody knows of.
# So while the main thread is inside _Held, a signal is noted and handled the moment it leaves.
_main_held = 0  # how deep the main thread is in _Held sections
_pending: int | None = None  # the signal that arrived meanwhile


class _Held:
    """_lock held; a signal arriving in the main thread meanwhile is handled on the way out."""

    def __enter__(self) -> None:
        global _main_held
        if threading.current_thread() is threading.main_thread():
            _main_held += 1
        _lock.acquire()

    def __exit__(self, *_exc: object) -> None:
        global _main_held, _pending
        _lock.release()
        if threading.current_thread() is not threading.main_thread():
            return
        _main_held -= 1
        if _main_held == 0 and _pending is not None:
            number, _pending = _pending, None
            handler = signal.getsignal(number)
            if callable(handler):
                handler(number, None)  # kills every child, the one just started included


def _deferred(number: int) -> bool:
    """True when the main thread holds _lock: the signal is handled once it lets go."""
    global _pending
    if _main_held and threading.current_thread() is threading.main_thread():
        _pending = number
        return True
    return False


def track(start: Any) -> subprocess.Popen[Any]:
    """Start a child with `start()` and remember it until `forget`; refused while exiting.

    The first child also registers kill_all at exit, for callers that never ran `install`
    (envdoctor.require in someone's program)."""
    global _at_exit
    with _Held():
        if _closing:
            raise Exiting("envdoctor is exiting")
        if not _at_exit:
            atexit.register(kill_all, True, False)  # at exit too, a daemon thread may hold an import lock
            _at_exit = True
        proc: subprocess.Popen[Any] = start()
        _children.add(proc)
        return proc


def forget(proc: subprocess.Popen[Any]) -> None:
    with _Held():
        _children.discard(proc)


def _psutil(may_import: bool) -> Any:
    """psutil, or None. A signal handler may not import: it runs on the main thread between two
    bytecodes, perhaps inside the import machinery while a probe thread holds psutil's module
    lock, and an import there waits for ever (seen: `check` hung after SIGTERM)."""
    found = sys.modules.get("psutil")
    if found is not None or not may_import:
        return found
    try:
        import psutil

        return psutil
    except ImportError:
        return None


def _descendants(pid: int, may_import: bool = True) -> list[Any]:
    """Every process below `pid` (psutil.Process objects), read before anything is killed: a
    grandchild that left the child's session (setsid) is still its descendant while the child
    lives, and no group kill reaches it."""
    psutil = _psutil(may_import)
    if psutil is None:
        return []
    try:
        return list(psutil.Process(pid).children(recursive=True))
    except Exception:  # the process gone, no permission: the group kill remains
        return []


def _kill_processes(found: list[Any]) -> None:
    for process in found:
        with contextlib.suppress(Exception):
            process.kill()


def kill_tree(proc: subprocess.Popen[Any], may_import: bool = True) -> None:
    """SIGKILL the child's process group (its own session: grandchildren included), and every
    descendant that left it (a `setsid` grandchild of a hung nvcc)."""
    below = _descendants(proc.pid, may_import) if proc.poll() is None else []
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except OSError:  # already gone
        pass
    _kill_processes(below)


# Set when this process adopts the orphans of its children (Linux's child subreaper, for the
# console entry point only): a grandchild whose parent died before the kill comes back to us.
_adopting = False


def adopt_orphans() -> None:
    """Make the console entry point a child subreaper (Linux): descendants orphaned by a killed
    child become our children, and kill_all ends them at exit. Never for envdoctor used as a
    library (envdoctor.require): the host program's orphans are not ours to adopt."""
    global _adopting
    if _adopting or not _installed or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        pr_set_child_subreaper = 36  # linux/prctl.h
        libc = ctypes.CDLL(None, use_errno=True)
        _adopting = libc.prctl(pr_set_child_subreaper, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        pass


def _adopted(may_import: bool) -> list[Any]:
    """What is still below us once every child we started is killed: orphans of a killed tree,
    adopted as subreaper."""
    psutil = _psutil(may_import) if _adopting else None
    if psutil is None:
        return []
    try:
        return list(psutil.Process().children(recursive=True))
    except Exception:
        return []


def kill_all(closing: bool = True, may_import: bool = True) -> None:
    """Kill every child still running; with `closing` (at exit), start no more, and end what the
    killed trees left behind. `may_import`: False in a signal handler (see _psutil)."""
    global _closing
    with _Held():
        _closing = _closing or closing
        running = list(_children)
        _children.clear()
    for proc in running:
        if proc.poll() is None:
            kill_tree(proc, may_import)
    if closing:
        _kill_processes(_adopted(may_import))


_interruptible = 0  # depth of `interruptible` sections: a signal raises KeyboardInterrupt there


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Inside: a signal kills the children, says so, and raises KeyboardInterrupt for the caller
    to report and clean up; the caller must let nothing else than its own code run meanwhile."""
    global _interruptible
    _interruptible += 1
    try:
        yield
    finally:
        _interruptible -= 1


_said_interrupted = False


def interruption_said() -> bool:
    """Whether the signal handler already said "interrupted" on stderr (fix then does not)."""
    return _said_interrupted


def _say_interrupted(number: int) -> None:
    global _said_interrupted
    _said_interrupted = True
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = str(number)
    # RuntimeError: the main thread was itself writing to stderr (a reentrant call)
    with contextlib.suppress(OSError, ValueError, AttributeError, RuntimeError):
        sys.stderr.write(f"\nenvdoctor: interrupted ({name}); stopped every process it had started\n")
        sys.stderr.flush()


def _on_signal(number: int, _frame: object) -> None:
    """Every child's process group killed at once, one line, exit 130 at once; inside
    `interruptible` (envdoctor fix) a KeyboardInterrupt instead, so fix reports what it changed."""
    if _deferred(number):
        return
    if _interruptible and not _closing:
        kill_all(closing=False, may_import=False)  # what follows (fix's report) may still run a program
        _say_interrupted(number)
        raise KeyboardInterrupt
    kill_all(closing=True, may_import=False)  # and no probe thread starts another one before the exit
    _say_interrupted(number)
    os._exit(EXIT_INTERRUPTED)


def closing() -> None:
    """From here on (exit and its clean-up) a signal ends the process with 130, children killed
    and one line, even inside `interruptible`."""
    global _interruptible
    _interruptible = 0
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None:
            with contextlib.suppress(ValueError, OSError):
                signal.signal(number, _on_signal)


class _QuietStdout:
    """stdout that, once the reader has gone (EPIPE), sends the rest to the null device.

    Everything else (encoding, errors, buffer, isatty) is the real stream's, so click and rich
    treat it as the terminal or pipe it is.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def _gone(self) -> None:
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._stream.fileno())
            os.close(null)
        except (OSError, ValueError):
            pass

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._gone()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._gone()
            with contextlib.suppress(OSError, ValueError):
                self._stream.flush()  # the buffered rest now goes to the null device

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_stdout() -> None:
    """A missing or closing stdout costs nothing: writes to it never fail."""
    if sys.stdout is None:  # started with stdout closed (`envdoctor rules >&-`)
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    elif not isinstance(sys.stdout, _QuietStdout):
        sys.stdout = _QuietStdout(sys.stdout)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115


EXIT_INTERNAL = 2  # the documented "envdoctor could not run as asked"
TRACEBACK_VARIABLE = "ENVDOCTOR_TRACEBACK"  # set: an internal error shows where, credentials masked


def internal_error(exc: BaseException) -> int:
    """Say in one line on stderr that envdoctor failed where it should not have, credentials
    masked, and give the exit code to end with. The traceback, masked too, only when asked for."""
    import traceback

    from envdoctor.util.redact import redact_text
    from envdoctor.util.threads import describe

    try:
        if os.environ.get(TRACEBACK_VARIABLE):
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            sys.stderr.write(redact_text(text))
        sys.stderr.write(
            f"envdoctor: error: envdoctor failed unexpectedly: {describe(exc)}. This is a bug in envdoctor;"
            f" {TRACEBACK_VARIABLE}=1 shows where (credentials masked).\n"
        )
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed: the exit code says it
        pass
    return EXIT_INTERNAL


def _thread_last_resort(args: threading.ExceptHookArgs) -> None:
    """threading.excepthook, for a thread started outside util.threads (a library's)."""
    from envdoctor.util import threads

    threads.excepthook(args)


def _last_resort(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
    """sys.excepthook: whatever escaped the entry point's own handling."""
    if isinstance(exc, KeyboardInterrupt):
        return
    internal_error(exc.with_traceback(tb))


def install() -> None:
    """For the console entry point: children killed at exit and on SIGINT/SIGTERM/SIGHUP."""
    global _installed, _started
    if _installed:
        return
    _installed = True
    _started = time.monotonic()
    guard_stdout()
    from envdoctor.util.redact import learn_environment

    learn_environment(os.environ)  # its credentials are masked in any shape they later turn up in
    threading.excepthook = _thread_last_resort  # a thread's exception: one line, never a traceback
    sys.excepthook = _last_resort
    if threading.current_thread() is not threading.main_thread():
        return
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None:
            signal.signal(number, _on_signal)
