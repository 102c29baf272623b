"""The shared timing loop of the bench scripts: whole commands, interleaved round by round.

Interleaving makes drifting machine load hit every command alike; one warm-up run each fills the
page cache first and is not counted.
"""

from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import time
from collections.abc import Mapping, Sequence


def compile_bytecode(trees: Sequence[str]) -> None:
    """What `pip install` leaves behind: each module's bytecode beside it (in __pycache__). Where
    PYTHONDONTWRITEBYTECODE is set (this machine sets it) an editable install never gets it, and
    every measured run would compile every module it imports: not what a user's envdoctor does."""
    for tree in trees:
        compileall.compile_dir(tree, quiet=1)


def envdoctor_package() -> str:
    import envdoctor

    return os.path.dirname(envdoctor.__file__)


def time_once(argv: Sequence[str]) -> float:
    # As a user runs it from a plain shell: no active environment steers what is examined.
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    started = time.perf_counter()
    subprocess.run(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
    return time.perf_counter() - started


def interleaved(commands: Mapping[str, Sequence[str]], rounds: int) -> dict[str, list[float]]:
    for argv in commands.values():
        time_once(argv)
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, argv in commands.items():
            samples[name].append(time_once(argv))
    return samples


def print_ratios(samples: Mapping[str, list[float]], base: str) -> None:
    """Median and minimum of each command, and its median's ratio to `base`'s."""
    floor = statistics.median(samples[base])
    width = max(len(name) for name in samples) + 2
    print(f"{'command':<{width}}{'median s':>10}{'min s':>10}{'x ' + base:>18}")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:<{width}}{median:>10.3f}{min(values):>10.3f}{median / floor:>18.2f}")
