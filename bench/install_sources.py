"""How long `envdoctor install` takes with the sources pip really uses (issue 10: <= 0.5 s with local
sources, <= 2.5 s when an index does not answer).

    python bench/install_sources.py [--rounds 7]

Every case runs `envdoctor install` in a fresh interpreter, interleaved round by round with bare
Python so drifting load hits all alike; ratios are to bare Python in the same run.
- local sources: a find-links folder holding this Python's torch and torchvision CPU wheels (empty
  stand-in files: only their names are read), so the plan needs no network at all;
- unreachable index: pip's index-url is a port on 127.0.0.1 that accepts connections and never
  answers, and no local source holds the build, so the plan waits for the bounded check (2 s);
- --offline: the same configuration, the network not asked.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from timing import compile_bytecode, envdoctor_package

ENVDOCTOR = [sys.executable, "-m", "envdoctor", "install", "--python", sys.executable]
# Variables that would put another configuration in front of the bench's own.
DROPPED = ("VIRTUAL_ENV", "CONDA_PREFIX", "ENVDOCTOR_OFFLINE")


def _env(extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED and not k.startswith("PIP_")}
    env.update(extra)
    return env


def _time(argv: Sequence[str], env: Mapping[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(env), check=False
    )
    return time.perf_counter() - started


def _cases(
    folder: Path, silent_port: int, baseline: str | None
) -> dict[str, tuple[list[str], dict[str, str]]]:
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    wheels = folder / "wheels"
    wheels.mkdir()
    for name in (
        f"torch-2.13.0+cpu-{tag}-{tag}-manylinux_2_28_x86_64.whl",
        f"torchvision-0.28.0+cpu-{tag}-{tag}-manylinux_2_28_x86_64.whl",
    ):
        (wheels / name).write_bytes(b"")
    local_conf = folder / "local.conf"
    local_conf.write_text(f"[global]\nfind-links = {wheels}\n", encoding="utf-8")
    silent_conf = folder / "silent.conf"
    silent_conf.write_text(f"[global]\nindex-url = http://127.0.0.1:{silent_port}/simple\n", encoding="utf-8")
    cases = {
        "bare python": ([sys.executable, "-c", "pass"], _env({})),
        "install, local sources": (ENVDOCTOR, _env({"PIP_CONFIG_FILE": str(local_conf)})),
        "install, unreachable index": (ENVDOCTOR, _env({"PIP_CONFIG_FILE": str(silent_conf)})),
        "install --offline, same": ([*ENVDOCTOR, "--offline"], _env({"PIP_CONFIG_FILE": str(silent_conf)})),
    }
    if baseline is not None:  # another envdoctor (before source-aware plans), local configuration
        argv = [baseline, "-m", "envdoctor", "install", "--python", sys.executable]
        cases["baseline install, local"] = (argv, _env({"PIP_CONFIG_FILE": str(local_conf)}))
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--baseline", help="the interpreter of another envdoctor install, for comparison")
    args = parser.parse_args()
    compile_bytecode([envdoctor_package()])
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)  # accepts, never answers
    with tempfile.TemporaryDirectory() as tmp:
        cases = _cases(Path(tmp), listener.getsockname()[1], args.baseline)
        for argv, env in cases.values():  # warm-up, not counted
            _time(argv, env)
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.rounds):
            for name, (argv, env) in cases.items():
                samples[name].append(_time(argv, env))
    listener.close()
    floor = statistics.median(samples["bare python"])
    width = max(len(n) for n in samples) + 2
    print(f"{'case':<{width}}{'median s':>10}{'min s':>10}{'max s':>10}{'x bare python':>15}")
    for name, values in samples.items():
        median = statistics.median(values)
        print(
            f"{name:<{width}}{median:>10.3f}{min(values):>10.3f}{max(values):>10.3f}{median / floor:>15.1f}"
        )


if __name__ == "__main__":
    main()
