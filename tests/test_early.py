"""The suite's early runs (tests/early.py): each runs once, in the background when queued, and every
test that asks gets the same result."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.early import SHARED_VARIABLE, Job, Queue


def test_a_queued_run_happens_once_in_the_background() -> None:
    threads: list[str] = []

    def work() -> int:
        threads.append(threading.current_thread().name)
        return 42

    queue = Queue("test-queue")  # not the suite's own queue: nothing to wait behind
    job = Job("answer", work)
    job.start(queue)
    job.start(queue)  # queued already: nothing more happens
    assert job.result() == 42 and job.result() == 42
    assert len(threads) == 1 and threads[0].startswith("test-queue")
    queue.stop()


def test_a_run_nobody_queued_runs_when_asked_and_a_failure_is_raised() -> None:
    calls: list[int] = []
    job = Job("inline", lambda: calls.append(1) or len(calls))
    assert job.result() == 1 and job.result() == 1 and calls == [1]
    job.replace(7)
    assert job.result() == 7

    def broken() -> int:
        raise RuntimeError("no torch here")

    with pytest.raises(RuntimeError, match="no torch here"):
        Job("broken", broken).result()


def test_workers_that_share_a_folder_run_a_job_once(tmp_path: Path) -> None:
    """Under pytest-xdist each worker holds its own Job object for the same run: the first to queue
    it runs it, the others read its result."""
    calls: list[str] = []
    queue = Queue("test-queue")
    mine = Job("shared", lambda: calls.append("mine") or "mine ran")
    theirs = Job("shared", lambda: calls.append("theirs") or "theirs ran")  # another worker's copy
    mine.start(queue, folder=tmp_path)
    theirs.start(queue, folder=tmp_path)
    assert theirs.result() == "mine ran" and mine.result() == "mine ran"
    assert calls == ["mine"]
    queue.stop()


def test_a_failure_in_the_worker_that_ran_reaches_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SHARED_VARIABLE, str(tmp_path))

    def broken() -> int:
        raise RuntimeError("no torch here")

    mine, theirs = Job("broken, shared", broken), Job("broken, shared", lambda: 1)
    with pytest.raises(RuntimeError, match="no torch here"):
        mine.result()  # nobody queued it: run here, and its failure published
    with pytest.raises(RuntimeError, match="no torch here"):
        theirs.result()
