"""What one rank says about itself, and the node check its node's first rank runs.

This is the distributed check's edge to the machine (like envdoctor/host for `check`): the
launcher's variables, network interfaces, InfiniBand devices, whether NumPy imports, and the torch
this process imported.
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Mapping
from typing import Any

from envdoctor.fleet.facts import EnvVar, RankInfo
from envdoctor.fleet.launcher import Launch
from envdoctor.host.base import Host
from envdoctor.model.findings import Interpreter
from envdoctor.probes import CheckOptions, ProbeContext
from envdoctor.settings import Settings
from envdoctor.snapshot import Snapshot
from envdoctor.util import threads
from envdoctor.util.redact import redact_text

ENV_PREFIXES = ("NCCL_", "GLOO_", "TORCH_NCCL_", "TORCH_DISTRIBUTED_")
INFINIBAND = "/sys/class/infiniband"
LOOPBACK = ("127.", "::1", "localhost")


def interfaces() -> tuple[str, ...]:
    try:
        return tuple(sorted(name for _, name in socket.if_nameindex()))
    except (OSError, AttributeError):  # not on every platform
        return ()


def loopback_interface() -> str | None:
    found = interfaces()
    return next((name for name in ("lo", "lo0") if name in found), None)


def is_loopback(address: str) -> bool:
    return address.startswith(LOOPBACK)


def numpy_error() -> str | None:
    """Why `import numpy` fails here; None when it imports."""
    try:
        import numpy  # noqa: F401
    except Exception as exc:  # ImportError, or a broken install raising anything
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    return None


def _nccl_version(torch: Any, dist: Any) -> str | None:
    try:
        if not dist.is_nccl_available():
            return None
        version = torch.cuda.nccl.version()
    except Exception:
        return None
    if isinstance(version, tuple):
        return ".".join(str(v) for v in version)
    return str(version)


def describe(torch: Any, dist: Any, launch: Launch, host: Host) -> RankInfo:
    env = host.env
    gpus = 0
    try:
        gpus = int(torch.cuda.device_count()) if torch.cuda.is_available() else 0
    except Exception:
        gpus = 0
    try:
        infiniband = host.list_dir(INFINIBAND)
    except OSError:
        infiniband = ()
    name = socket.gethostname()
    return RankInfo(
        rank=launch.rank,
        local_rank=launch.local_rank,
        node=name,
        host=name,
        node_rank=launch.node_rank,
        device=f"cuda:{launch.local_rank}" if launch.local_rank < gpus else "cpu",
        gpu_count=gpus,
        torch=str(getattr(torch, "__version__", "")) or None,
        nccl=_nccl_version(torch, dist),
        numpy_error=numpy_error(),
        env=_env(env),
        interfaces=interfaces(),
        infiniband=tuple(sorted(infiniband)),
    )


def _env(env: Mapping[str, str]) -> tuple[EnvVar, ...]:
    return tuple(
        EnvVar(name, redact_text(value))
        for name, value in sorted(env.items())
        if name.startswith(ENV_PREFIXES)
    )


class NodeCheck:
    """The node's own check (the probes of `check`), run in the background by the node's first rank
    while it imports torch and meets the others."""

    def __init__(self, host: Host, settings: Settings, options: CheckOptions) -> None:
        self._started = time.monotonic()
        self._host = host
        self._settings = settings
        self._options = options
        self._snapshot: Snapshot | None = None
        self._error: str | None = None
        self._thread = threads.create(self._run, "envdoctor-node-check")

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            from envdoctor.engine import run_probes, selected_probes
            from envdoctor.target import Target, read_python_info

            interpreter = Interpreter(sys.executable, "the interpreter the launcher started")
            target = Target(interpreter, read_python_info(self._host, interpreter.path))
            ctx = ProbeContext(host=self._host, target=target, options=self._options)
            probes = run_probes(ctx, selected_probes(self._settings))
            self._snapshot = Snapshot(self._host.platform(), interpreter, probes)
        except Exception as exc:  # a node whose check crashes still reports, with why
            self._error = f"{type(exc).__name__}: {exc}"

    def result(self, timeout: float) -> tuple[Snapshot | None, str | None]:
        self._thread.join(max(0.0, timeout))
        if self._thread.is_alive():
            waited = time.monotonic() - self._started
            return None, f"the node's check did not finish within {waited:.0f} s"
        return self._snapshot, self._error
