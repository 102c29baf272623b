"""How long the toolkit and Windows probes take on this machine, alone (they run beside the torch child).

    python bench/toolkit_windows_probes.py [--rounds 21]

Prints the median and worst of each probe's collect() through the live host, with the number of
subprocesses it started. Targets: well under the ~1.1 s torch import they hide behind; the Windows
probe off Windows ~0 (it stops before touching anything).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Mapping, Sequence

from envdoctor.host.base import ChildOutcome, CommandResult
from envdoctor.host.live import LiveHost
from envdoctor.probes import toolkit, windows
from envdoctor.probes.base import NotApplicable, ProbeContext
from envdoctor.target import resolve_target


class CountingHost(LiveHost):
    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        super().__init__(environ)
        self.started = 0

    def run(self, argv: Sequence[str], timeout: float) -> CommandResult:
        self.started += 1
        return super().run(argv, timeout)

    def python_json(self, interpreter: str, script: str, args: Sequence[str], timeout: float) -> ChildOutcome:
        self.started += 1
        return super().python_json(interpreter, script, args, timeout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=21)
    rounds = parser.parse_args().rounds
    host = CountingHost()
    ctx = ProbeContext(host=host, target=resolve_target(host, sys.executable))
    for probe in (toolkit.PROBE, windows.PROBE):
        times = []
        host.started = 0
        for _ in range(rounds):
            started = time.perf_counter()
            with contextlib.suppress(NotApplicable):
                probe.collect(ctx)
            times.append(time.perf_counter() - started)
        print(
            f"{probe.name:8s} median {statistics.median(times) * 1000:7.2f} ms  "
            f"max {max(times) * 1000:7.2f} ms  subprocesses/run {host.started / rounds:.1f}"
        )


if __name__ == "__main__":
    main()
