"""Launching real `envdoctor cluster` jobs on loopback: torchrun, or ranks started by hand with the
variables srun, mpirun or a Kubernetes pod would set. Everything is bounded in time."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
TORCHRUN = str(Path(PYTHON).with_name("torchrun"))
# No smoke test and a short bandwidth loop: the fleet tests are about the job, not the GPU.
QUICK = ("--no-smoke", "--bandwidth-seconds", "0.1", "--bandwidth-mib", "1")
# The node's check without the package-index probe (it may look at the network).
NO_NETWORK = ("--skip", "mirrors")
# Only what the scenario needs: no torch child either (each rank imports torch already).
LIGHT = ("--only", "system,python")
# Makes `import numpy` fail, as on a machine without it, whether or not it is installed here.
NUMPY_BLOCKER = """\
import sys


class _NoNumpy:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by a test)", name=name)
        return None


sys.meta_path.insert(0, _NoNumpy())
"""


@dataclass(frozen=True)
class Proc:
    code: int | None  # None: still running when the test stopped waiting
    out: str
    err: str
    seconds: float

    def report(self) -> dict[str, object]:
        data: dict[str, object] = json.loads(self.out)
        return data


def free_port() -> int:
    """A port nothing listens on now (the kernel picks it; the race until use is tiny on loopback)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def startup_seconds() -> float:
    """How long a rank takes to start here and now (import torch and envdoctor's CLI): timeouts scale
    with it, so the tests hold on a loaded machine and stay short on an idle one."""
    started = time.monotonic()
    subprocess.run([PYTHON, "-c", "import torch, envdoctor.cli.root"], check=True, timeout=120, cwd=ROOT)
    return time.monotonic() - started


def job_timeout(ranks: int) -> float:
    """--timeout for a job of `ranks` processes on this machine that must wait for a missing rank:
    their start-up (sharing the CPUs), then the phases, which need a few seconds."""
    crowd = max(1.0, ranks / (os.cpu_count() or 1))
    return round(5.0 + 3.0 * startup_seconds() * crowd, 1)


# Taken at import: the jobs run in the background (tests/early.py) while other tests patch os.environ.
_ENVIRON = dict(os.environ)


def base_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in _ENVIRON.items() if not k.startswith(("ENVDOCTOR_TEST_", "NCCL_", "GLOO_"))}
    for name in (
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
        "MASTER_ADDR",
        "MASTER_PORT",
        "CI",
        "GITHUB_STEP_SUMMARY",
    ):
        env.pop(name, None)
    # ENVDOCTOR_TRACE: each rank's steps on stderr, which a failing test shows.
    env.update({"GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1", "ENVDOCTOR_TRACE": "1"})
    env.update(extra or {})
    return env


def start(argv: Sequence[str], env: Mapping[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        list(argv), cwd=ROOT, env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def wait_all(procs: Sequence[subprocess.Popen[str]], limit: float) -> list[Proc]:
    """Wait for every process until `limit` seconds from now; stragglers are killed, never left."""
    started = time.monotonic()
    done = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=max(0.1, started + limit - time.monotonic()))
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            code = None
        done.append(Proc(code, out, err, time.monotonic() - started))
    return done


def envdoctor_cluster(*args: str) -> list[str]:
    return [PYTHON, "-m", "envdoctor", "cluster", *args]
