"""The real torch child in a real interpreter, started once per (interpreter, arguments) per test run.

Its answer for the same interpreter and arguments does not change within a run, while each start costs
an import of torch (seconds on a busy 2-core machine) plus the smoke test. Tests that need the real
child's facts, or a live `check` that needs some torch answer, share the runs kept here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from envdoctor.host.base import ChildOutcome
from envdoctor.host.live import LiveHost
from envdoctor.probes.base import CheckOptions
from envdoctor.probes.torch_build import child_args, child_timeout

# Taken at import, before any test patches LiveHost to answer from the runs kept here.
_LIVE_PYTHON_JSON = LiveHost.python_json

_RUNS: dict[tuple[str, tuple[str, ...]], ChildOutcome] = {}

# The arguments a plain `check` gives the child (no --timeout, --no-smoke or --smoke-size).
DEFAULT_ARGS: tuple[str, ...] = tuple(child_args(CheckOptions(), child_timeout(CheckOptions())))


def real_torch_child(
    interpreter: str, args: Sequence[str] = DEFAULT_ARGS, timeout: float = 120.0
) -> ChildOutcome:
    """The child's real outcome; a run that did not end cleanly is not kept, so the next asker retries."""
    key = (interpreter, tuple(args))
    if key not in _RUNS:
        outcome = _LIVE_PYTHON_JSON(LiveHost(), interpreter, "torch_probe.py", args, timeout)
        if outcome.returncode != 0:
            return outcome
        _RUNS[key] = outcome
    return _RUNS[key]


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
