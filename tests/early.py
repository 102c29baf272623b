"""Slow, self-contained runs that tests need, started in the background before those tests run.

envdoctor starts its torch child before anything else loads; the suite does the same with its own
slow runs (a real torch child, a real `envdoctor check` process): a test declares the runs it needs
with `@pytest.mark.early(JOB, ...)`, conftest.py queues every run the selected tests declare right
after collection, in the order the tests come, and one background thread works through the queue
while the other tests run. A test then takes its run's result, waiting if it is not done yet; a run
no marker queued starts when it is first asked for. Each run happens once per test session.

With pytest-xdist the session is several worker processes that each collect every test: a run is
then claimed by the first worker to queue it (a file created exclusively in a folder the whole
session shares, SHARED_VARIABLE), and the others read its result from the file it writes there.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_LOCK = threading.Lock()

# The folder the processes of one test session share (set by conftest.py in the main process, so
# xdist's workers inherit it); unset, every run happens in this process.
SHARED_VARIABLE = "ENVDOCTOR_TEST_EARLY_DIR"
# A run claimed by another worker is waited for at most this long (its own limits are shorter).
_WAIT_S = 1800.0


def shared_folder() -> Path | None:
    value = os.environ.get(SHARED_VARIABLE)
    return Path(value) if value else None


# conftest.py's readers-writer lock in the shared folder: every test holds it shared, a test marked
# `exclusive` (it holds a wall-clock bound) holds it alone.
RUN_LOCK = "run.lock"


@contextlib.contextmanager
def beside_the_tests() -> Iterator[None]:
    """A background run holds the tests' lock shared, so that an exclusive test never runs beside
    one (a pip install or a torchrun job here made a bounded test miss its bound). Not through
    conftest's gate: a test holding the lock may be waiting for this very run, and the gate may
    be closed by an exclusive test waiting for that test."""
    folder = shared_folder()
    try:
        import fcntl
    except ImportError:  # Windows: no flock; the bounds have their own slack
        folder = None
    if folder is None:
        yield
        return
    with open(folder / RUN_LOCK, "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class Queue:
    """One background thread working through runs in the order they were queued, each beside the
    tests (beside_the_tests)."""

    def __init__(self, name: str = "early-run") -> None:
        self._name = name
        self._pool: ThreadPoolExecutor | None = None  # made when the first run is queued

    def submit(self, run: Callable[[], T]) -> Future[T]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._name)

        def guarded() -> T:
            with beside_the_tests():
                return run()

        return self._pool.submit(guarded)

    def stop(self, finish: bool = False) -> None:
        """Drop the runs that have not started (the one running ends on its own); with `finish`,
        work through them first: another process may be waiting for their results."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=finish, cancel_futures=not finish)


QUEUE = Queue()


def _publish(path: Path, outcome: tuple[str, Any]) -> None:
    """Write the result file whole or not at all: a reader never sees half of it."""
    try:
        data = pickle.dumps(outcome)
    except Exception as exc:  # an exception or value that does not pickle: its description does
        data = pickle.dumps(("error", RuntimeError(f"{outcome[0]} that does not pickle: {exc!r}")))
    partial = path.with_suffix(f".{os.getpid()}.part")
    partial.write_bytes(data)
    os.replace(partial, path)


def _read_published(path: Path, name: str) -> Any:
    deadline = time.monotonic() + _WAIT_S
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"early run {name!r}: no result from the worker that claimed it")
        time.sleep(0.05)
    kind, value = pickle.loads(path.read_bytes())
    if kind == "error":
        raise value
    return value


class Job(Generic[T]):
    """One named run: queued at most once, its result shared by every test that asks."""

    def __init__(self, name: str, run: Callable[[], T]) -> None:
        self.name = name
        self._run = run
        self._future: Future[T] | None = None
        self._elsewhere: Path | None = None  # the result file of the worker that claimed the run

    def __repr__(self) -> str:
        return f"Job({self.name!r})"

    def _paths(self, folder: Path) -> tuple[Path, Path]:
        key = hashlib.sha256(self.name.encode()).hexdigest()[:24]
        return folder / f"{key}.claim", folder / f"{key}.result"

    def _claim(self, folder: Path | None) -> Callable[[], T] | None:
        """What this process runs: the run (publishing its result when a folder is shared), or None
        when another process claimed it (then `_elsewhere` is where its result will be)."""
        if folder is None:
            return self._run
        claim, result = self._paths(folder)
        try:
            os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            self._elsewhere = result
            return None

        def run_and_publish() -> T:
            try:
                value = self._run()
            except BaseException as exc:
                _publish(result, ("error", exc))
                raise
            _publish(result, ("value", value))
            return value

        return run_and_publish

    def start(self, queue: Queue = QUEUE, folder: Path | None = None) -> None:
        """Queue the run in the background (nothing happens if it is queued or done already, here
        or in another worker of the session)."""
        with _LOCK:
            if self._future is not None or self._elsewhere is not None:
                return
            run = self._claim(folder if folder is not None else shared_folder())
            if run is not None:
                self._future = queue.submit(run)

    def result(self) -> T:
        """The run's result: waited for when it was queued, run here and now when it was not."""
        run = None
        with _LOCK:
            future = self._future
            if (future is None or future.cancelled()) and self._elsewhere is None:
                run = self._claim(shared_folder())
                if run is not None:
                    future = self._future = Future()
            elsewhere = self._elsewhere if future is None else None
        if elsewhere is not None:
            value: T = _read_published(elsewhere, self.name)
            return value
        assert future is not None
        if run is not None:
            try:
                future.set_result(run())
            except BaseException as exc:
                future.set_exception(exc)
        return future.result()

    def replace(self, value: T) -> None:
        """Keep `value` as the result from now on (a retried run that went better)."""
        done: Future[T] = Future()
        done.set_result(value)
        with _LOCK:
            self._future = done
            self._elsewhere = None


def stop_queue() -> None:
    """The session is over: drop the queued runs that have not started; where other workers share
    the session, finish them instead (one of them may be waiting for a result)."""
    QUEUE.stop(finish=shared_folder() is not None)  # not under _LOCK: a run may still take it
