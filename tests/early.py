"""Slow, self-contained runs that tests need, started in the background before those tests run.

envdoctor starts its torch child before anything else loads; the suite does the same with its own
slow runs (a real torch child, a real `envdoctor check` process): a test declares the runs it needs
with `@pytest.mark.early(JOB, ...)`, conftest.py queues every run the selected tests declare right
after collection, in the order the tests come, and one background thread works through the queue
while the other tests run. A test then takes its run's result, waiting if it is not done yet; a run
no marker queued starts when it is first asked for. Each run happens once per test session.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

T = TypeVar("T")

_LOCK = threading.Lock()


class Queue:
    """One background thread working through runs in the order they were queued."""

    def __init__(self, name: str = "early-run") -> None:
        self._name = name
        self._pool: ThreadPoolExecutor | None = None  # made when the first run is queued

    def submit(self, run: Callable[[], T]) -> Future[T]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._name)
        return self._pool.submit(run)

    def stop(self) -> None:
        """Drop the runs that have not started; the one running ends on its own."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


QUEUE = Queue()


class Job(Generic[T]):
    """One named run: queued at most once, its result shared by every test that asks."""

    def __init__(self, name: str, run: Callable[[], T]) -> None:
        self.name = name
        self._run = run
        self._future: Future[T] | None = None

    def __repr__(self) -> str:
        return f"Job({self.name!r})"

    def start(self, queue: Queue = QUEUE) -> None:
        """Queue the run in the background (nothing happens if it is queued or done already)."""
        with _LOCK:
            if self._future is not None:
                return
            self._future = queue.submit(self._run)

    def result(self) -> T:
        """The run's result: waited for when it was queued, run here and now when it was not."""
        with _LOCK:
            future = self._future
            if future is None or future.cancelled():
                future = self._future = Future()
                mine = True
            else:
                mine = False
        if mine:
            try:
                future.set_result(self._run())
            except BaseException as exc:
                future.set_exception(exc)
        return future.result()

    def replace(self, value: T) -> None:
        """Keep `value` as the result from now on (a retried run that went better)."""
        done: Future[T] = Future()
        done.set_result(value)
        with _LOCK:
            self._future = done


def stop_queue() -> None:
    """The session is over: drop the queued runs that have not started."""
    with _LOCK:
        QUEUE.stop()
