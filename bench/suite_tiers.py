"""The suite's two tiers side by side in one run: the fast tier (`pytest -m "not slow"`, the inner
loop, issue 23 §4: <= 60 s wall on a 2-core machine) and everything (the README's test command).

    python bench/suite_tiers.py [--rounds 1]

Each round runs both, one after the other, with pytest-xdist's default of the project (-n 2), and
prints each tier's wall time (median over rounds) and the fast tier's share of the whole.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIERS = {"fast tier (-m 'not slow')": ["-m", "not slow"], "everything": []}


def wall(args: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
        env=dict(os.environ),
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    rounds = parser.parse_args().rounds
    samples: dict[str, list[float]] = {name: [] for name in TIERS}
    for _ in range(rounds):
        for name, args in TIERS.items():
            samples[name].append(wall(args))
    whole = statistics.median(samples["everything"])
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:<28}{median:>9.1f} s{median / whole:>8.2f} x everything")


if __name__ == "__main__":
    main()
