"""How long the mirrors probe takes on this machine: file reads only, it must stay in milliseconds.

    python bench/mirrors_probe.py [--rounds 200]

Times `mirrors.collect` on the live host (every pip, conda and uv file of this machine and the
working folder) and prints the median and the slowest round. It runs beside the torch child, so
anything near the ~1 s torch import would show in `envdoctor check`; the target is < 20 ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from envdoctor.host.live import LiveHost
from envdoctor.probes import mirrors
from envdoctor.probes.base import ProbeContext
from envdoctor.target import resolve_target


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--python", default=sys.executable, help="the interpreter whose site file is read")
    args = parser.parse_args()
    host = LiveHost()
    ctx = ProbeContext(host=host, target=resolve_target(host, args.python))
    import envdoctor.rules.mirrors  # noqa: F401  (import cost is not the probe's)

    samples = []
    for _ in range(args.rounds):
        started = time.perf_counter()
        facts = mirrors.collect(ctx)
        samples.append(time.perf_counter() - started)
    files = len(facts.pip.files) + len(facts.conda.files) + len(facts.uv.files)
    print(f"mirrors probe: {files} files described, {args.rounds} rounds")
    print(f"median {statistics.median(samples) * 1000:.2f} ms, slowest {max(samples) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
