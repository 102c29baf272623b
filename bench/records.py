"""What one class costs to define: `@record` next to `@dataclass(frozen=True)`, in one run.

    python bench/records.py [--rounds 15] [--classes 200]

Each round defines `--classes` fresh classes of the shape envdoctor's facts have (five fields, two
with defaults, one a default_factory) with each decorator, interleaved round by round, and prints
the median time per class and the ratio. `install` defines about fifty records before it prints, so
the difference times fifty is what start-up gains on this Python (3.13 builds a dataclass's methods
in one exec, and the gap narrows there). bench/startup.py --baseline shows it on whole commands.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from envdoctor.util.records import record

SHAPE = {"name": "str", "version": "str | None", "path": "str", "dists": "tuple[str, ...]", "ok": "bool"}
DEFAULTS = {"ok": True, "dists": dataclasses.field(default_factory=tuple)}


def define(decorate: Callable[[type], Any], count: int) -> float:
    started = time.perf_counter()
    for i in range(count):
        body = {"__annotations__": dict(SHAPE), "__module__": __name__, "__qualname__": f"Fact{i}"}
        body.update(
            {
                k: (dataclasses.field(default_factory=tuple) if k == "dists" else v)
                for k, v in DEFAULTS.items()
            }
        )
        decorate(type(f"Fact{i}", (), body))
    return (time.perf_counter() - started) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--classes", type=int, default=200)
    args = parser.parse_args()
    ways: dict[str, Callable[[type], Any]] = {
        "@dataclass(frozen=True)": dataclasses.dataclass(frozen=True),
        "@record": record,
    }
    samples: dict[str, list[float]] = {name: [] for name in ways}
    for way in ways.values():
        define(way, 20)  # warm-up
    for _ in range(args.rounds):
        for name, way in ways.items():
            samples[name].append(define(way, args.classes))
    base = statistics.median(samples["@dataclass(frozen=True)"])
    print(f"Python {sys.version.split()[0]}; {args.rounds} rounds of {args.classes} classes each")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:<26}{median * 1000:>8.3f} ms per class{median / base:>8.2f}x")


if __name__ == "__main__":
    main()
