"""How long `envdoctor install` takes from start to printed command (it must not import torch).

    python bench/install_startup.py [--runs 15]

Runs each command in a fresh interpreter several times and prints min / median wall time, next to
bare Python and `envdoctor --help` for scale. "this machine" detects the interpreter's Python and
the NVIDIA driver through child processes; "described machine" detects nothing.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CASES = {
    "bare python": [sys.executable, "-c", "pass"],
    "envdoctor --help": [sys.executable, "-m", "envdoctor", "--help"],
    "install (this machine)": [sys.executable, "-m", "envdoctor", "install"],
    "install (described machine)": [
        sys.executable,
        "-m",
        "envdoctor",
        "install",
        "--os",
        "windows",
        "--python",
        "3.10",
        "--driver",
        "560.94",
        "--gpu",
        "RTX 4070",
    ],
    "install --format json --manager uv": [
        sys.executable,
        "-m",
        "envdoctor",
        "install",
        "--format",
        "json",
        "--manager",
        "uv",
    ],
}


def measure(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    print(f"{'command':<38} {'min':>8} {'median':>8}   ({args.runs} runs)")
    for name, argv in CASES.items():
        times = measure(argv, args.runs)
        print(f"{name:<38} {min(times) * 1000:>6.0f}ms {statistics.median(times) * 1000:>6.0f}ms")


if __name__ == "__main__":
    main()
