"""Which launcher started this process, and what it says: rank, world size, local rank, node, and
where the rendezvous store is (MASTER_ADDR:MASTER_PORT). A pure function of the environment.

torchrun (and torch.distributed.elastic) sets RANK, WORLD_SIZE, LOCAL_RANK, GROUP_RANK and runs the
store in its agent (TORCHELASTIC_USE_AGENT_STORE); a Kubeflow PyTorchJob or JobSet sets the env://
variables; srun sets SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID/SLURM_NODEID; Open MPI's mpirun sets
OMPI_COMM_WORLD_*; MPICH and Intel MPI (hydra) set PMI_RANK/PMI_SIZE, PMIx launchers PMIX_RANK.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping

from envdoctor.util.records import record


class LaunchError(Exception):
    """Not started by a launcher envdoctor understands, or its variables do not add up; one line."""


class LauncherKind(str, enum.Enum):
    TORCHRUN = "torchrun"
    ENV = "env"  # RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set by something else (Kubernetes, by hand)
    SLURM = "slurm"
    OPENMPI = "openmpi"
    PMI = "pmi"


@record
class Launch:
    kind: LauncherKind
    rank: int
    world_size: int
    local_rank: int
    master_addr: str
    master_port: int
    node_rank: int | None = None  # which node this is, when the launcher says
    agent_store: bool = False  # torchrun's agent hosts the store; rank 0 only connects to it
    run_id: str = "envdoctor"  # namespaces envdoctor's keys in a store others may share
    notes: tuple[str, ...] = ()  # how MASTER_ADDR/PORT were chosen when the environment had none

    @property
    def is_leader(self) -> bool:
        """The process that runs the node's check: local rank 0."""
        return self.local_rank == 0


_HINT = (
    "start it with the job's launcher: torchrun --nnodes N --nproc-per-node G -m envdoctor cluster, "
    "srun python -m envdoctor cluster, mpirun ... python -m envdoctor cluster, or set RANK, WORLD_SIZE, "
    "MASTER_ADDR and MASTER_PORT"
)


def _int(env: Mapping[str, str], name: str, default: int | None = None) -> int:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        if default is None:
            raise LaunchError(f"{name} is not set; {_HINT}")
        return default
    try:
        return int(raw.strip())
    except ValueError:
        raise LaunchError(f"{name}={raw!r} is not a whole number") from None


def _optional_int(env: Mapping[str, str], name: str) -> int | None:
    return _int(env, name) if env.get(name, "").strip() else None


def first_host(nodelist: str) -> str:
    """The first host of a Slurm host list: "gpu[03-05,9],login1" -> "gpu03"."""
    depth, end = 0, len(nodelist)
    for index, char in enumerate(nodelist):  # the first top-level item
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            end = index
            break
    item = nodelist[:end].strip()
    # Each bracket group's first value, zero padding kept: [03-05,9] -> 03.
    return re.sub(r"\[([^\]]*)\]", lambda m: re.split(r"[-,]", m.group(1))[0], item)


def _master(env: Mapping[str, str], kind: LauncherKind) -> tuple[str, int, tuple[str, ...]]:
    notes: list[str] = []
    addr = env.get("MASTER_ADDR", "").strip()
    if not addr and kind is LauncherKind.SLURM:
        nodelist = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or ""
        if nodelist:
            addr = first_host(nodelist)
            notes.append(f"MASTER_ADDR {addr}: the first node of the Slurm allocation")
    if not addr:
        raise LaunchError(f"MASTER_ADDR is not set: the address of the node rank 0 runs on ({kind.value})")
    raw_port = env.get("MASTER_PORT", "").strip()
    if not raw_port and kind is LauncherKind.SLURM and env.get("SLURM_JOB_ID", "").strip().isdigit():
        # Below Linux's ephemeral range, and the same on every node of the job.
        port = 15000 + int(env["SLURM_JOB_ID"]) % 10000
        notes.append(f"MASTER_PORT {port}: derived from SLURM_JOB_ID")
    else:
        port = _int(env, "MASTER_PORT")
    if not 1 <= port <= 65535:
        raise LaunchError(f"MASTER_PORT={port} is not a TCP port (1-65535)")
    return addr, port, tuple(notes)


def _kind(env: Mapping[str, str]) -> LauncherKind:
    if env.get("TORCHELASTIC_RUN_ID") or (env.get("GROUP_RANK") and env.get("RANK")):
        return LauncherKind.TORCHRUN
    if env.get("RANK") and env.get("WORLD_SIZE"):
        return LauncherKind.ENV
    if env.get("SLURM_PROCID") and env.get("SLURM_NTASKS"):
        return LauncherKind.SLURM
    if env.get("OMPI_COMM_WORLD_RANK") and env.get("OMPI_COMM_WORLD_SIZE"):
        return LauncherKind.OPENMPI
    if (env.get("PMI_RANK") and env.get("PMI_SIZE")) or (env.get("PMIX_RANK") and env.get("PMI_SIZE")):
        return LauncherKind.PMI
    raise LaunchError(f"no launcher found; {_HINT}")


def detect(env: Mapping[str, str]) -> Launch:
    kind = _kind(env)
    if kind in (LauncherKind.TORCHRUN, LauncherKind.ENV):
        rank, world = _int(env, "RANK"), _int(env, "WORLD_SIZE")
        local_rank = _int(env, "LOCAL_RANK", 0)
        node_rank = _optional_int(env, "GROUP_RANK")
    elif kind is LauncherKind.SLURM:
        rank, world = _int(env, "SLURM_PROCID"), _int(env, "SLURM_NTASKS")
        local_rank = _int(env, "SLURM_LOCALID", 0)
        node_rank = _optional_int(env, "SLURM_NODEID")
    elif kind is LauncherKind.OPENMPI:
        rank, world = _int(env, "OMPI_COMM_WORLD_RANK"), _int(env, "OMPI_COMM_WORLD_SIZE")
        local_rank = _int(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0)
        node_rank = None
    else:
        rank = _int(env, "PMI_RANK") if env.get("PMI_RANK") else _int(env, "PMIX_RANK")
        world = _int(env, "PMI_SIZE")
        local_rank = _int(env, "MPI_LOCALRANKID", 0)
        node_rank = None
    if world < 1 or not 0 <= rank < world:
        raise LaunchError(f"rank {rank} does not fit a world of {world} ({kind.value} variables)")
    addr, port, notes = _master(env, kind)
    run_id = (
        env.get("TORCHELASTIC_RUN_ID")
        or (f"slurm-{env['SLURM_JOB_ID']}.{env.get('SLURM_STEP_ID', '0')}" if env.get("SLURM_JOB_ID") else "")
        or "envdoctor"
    )
    return Launch(
        kind=kind,
        rank=rank,
        world_size=world,
        local_rank=local_rank,
        master_addr=addr,
        master_port=port,
        node_rank=node_rank,
        agent_store=env.get("TORCHELASTIC_USE_AGENT_STORE") == "True",
        run_id=run_id,
        notes=notes,
    )
