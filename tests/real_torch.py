"""The real torch child in a real interpreter, run once per (interpreter, arguments) per test run.

Its answer for the same interpreter and arguments does not change within a run, while each start costs
an import of torch (seconds on a busy 2-core machine) plus the smoke test. Tests that need the real
child's facts, or a live `check` that needs some torch answer, share the runs kept here; the runs of
this interpreter are early jobs (tests/early.py): `@pytest.mark.early(DEFAULT_RUN)` starts one before
the test that needs it.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from envdoctor.host.base import ChildOutcome
from envdoctor.host.live import LiveHost
from envdoctor.probes.base import CheckOptions
from envdoctor.probes.torch_build import child_args, child_timeout
from tests.early import Job

# Taken at import, before any test patches LiveHost or the environment: a run in the background
# must not see what the test running at that moment has set.
_LIVE_PYTHON_JSON = LiveHost.python_json
_ENVIRON = dict(os.environ)
_TIMEOUT = 120.0

# The arguments a plain `check` gives the child (no --timeout, --no-smoke or --smoke-size).
DEFAULT_ARGS: tuple[str, ...] = tuple(child_args(CheckOptions(), child_timeout(CheckOptions())))
NO_SMOKE: tuple[str, ...] = ("--no-smoke",)
SMALL_SMOKE: tuple[str, ...] = (*DEFAULT_ARGS, "--smoke-size", "64")

_JOBS: dict[tuple[str, tuple[str, ...]], Job[ChildOutcome]] = {}
_JOBS_LOCK = threading.Lock()


def _run(interpreter: str, args: tuple[str, ...], timeout: float) -> ChildOutcome:
    return _LIVE_PYTHON_JSON(LiveHost(_ENVIRON), interpreter, "torch_probe.py", args, timeout)


def torch_run(args: Sequence[str], interpreter: str = sys.executable) -> Job[ChildOutcome]:
    """The shared run of the torch child with these arguments."""
    key = (interpreter, tuple(args))
    with _JOBS_LOCK:
        if key not in _JOBS:
            _JOBS[key] = Job(f"torch_probe.py {' '.join(key[1])}", lambda: _run(*key, _TIMEOUT))
        return _JOBS[key]


DEFAULT_RUN = torch_run(DEFAULT_ARGS)
NO_SMOKE_RUN = torch_run(NO_SMOKE)
SMALL_SMOKE_RUN = torch_run(SMALL_SMOKE)


def real_torch_child(
    interpreter: str, args: Sequence[str] = DEFAULT_ARGS, timeout: float = _TIMEOUT
) -> ChildOutcome:
    """The child's real outcome. A run that did not end cleanly is run again for the next asker."""
    job = torch_run(args, interpreter)
    outcome = job.result()
    if outcome.returncode != 0:
        outcome = _run(interpreter, tuple(args), timeout)
        if outcome.returncode == 0:
            job.replace(outcome)
    return outcome


@dataclass
class RealTorchChild:
    """What a test's live checks asked of the torch child (`asked`), and how the shared run is chosen.

    `max_smoke_size`: answer a `--smoke-size N` above it from the real run at this size instead. A test
    that only checks that a documented command line is accepted sets it: on a CPU-only machine a big
    smoke test costs many seconds and exercises the CPU path the smoke tests already cover.
    """

    asked: list[tuple[str, ...]] = field(default_factory=list)
    max_smoke_size: int | None = None

    def answered_args(self, args: Sequence[str]) -> tuple[str, ...]:
        out = list(args)
        if self.max_smoke_size is not None and "--smoke-size" in out:
            at = out.index("--smoke-size") + 1
            if int(out[at]) > self.max_smoke_size:
                out[at] = str(self.max_smoke_size)
        return tuple(out)
