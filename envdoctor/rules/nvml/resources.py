"""What a job is given besides the GPU's driver: a Slurm job that asked for no GPU, a container's
small /dev/shm (DataLoader workers die of a bus error), a locked-memory limit too low for RDMA
(NCCL and UCX over InfiniBand), and an open-files limit a DataLoader runs out of."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.knowledge import gpu_access as table
from envdoctor.knowledge import resource_limits as limits
from envdoctor.knowledge.signatures import ErrorEvidence
from envdoctor.model.findings import Severity
from envdoctor.probes.gpu_access import GpuAccessFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.nvml.access import cuda_torch
from envdoctor.rules.nvml.device_state import cuda_failed


def human_bytes(size: int) -> str:
    """1 GiB, 64 MiB, 8 KiB: the unit a limit is usually written in."""
    for unit, scale in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale:
            value = size / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size} bytes"


OUT_OF_FILES = "dataloader-out-of-file-descriptors"
SHM_BUS_ERROR = "dataloader-bus-error-shared-memory"
RDMA_PIN = "rdma-registration-cannot-allocate"


@rule(
    code="ED178",
    name="slurm-job-without-gpu",
    severity=Severity.ERROR,
    summary="this runs in a Slurm job that was allocated no GPU",
    needs=(GpuAccessFacts, TorchFacts),
    doc=RuleDoc(
        what="Whether this process runs in a Slurm job ($SLURM_JOB_ID), the GPU variables Slurm sets "
        "for an allocation (SLURM_JOB_GPUS, SLURM_STEP_GPUS, SLURM_GPUS_ON_NODE ...), and "
        "CUDA_VISIBLE_DEVICES=NoDevFiles, while torch's CUDA finds no device.",
        why="On a GPU node Slurm hands a job only the GPUs it requested: without --gres or --gpus the "
        "job's cgroup hides the devices (nvidia-smi cannot reach the driver) or Slurm sets "
        "CUDA_VISIBLE_DEVICES=NoDevFiles, so torch sees no GPU on a machine full of them.",
        fix="Request the GPU in the submission: #SBATCH --gres=gpu:1 (or --gpus=1), or srun --gres=gpu:1.",
        example="An sbatch script on a partition of GPU nodes without --gres: nvidia-smi says it "
        "couldn't communicate with the NVIDIA driver and torch.cuda.is_available() is False.",
    ),
)
def slurm_job_without_gpu(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    torch = cuda_torch(ctx)
    if not access.slurm_job or torch is None or not cuda_failed(torch):
        return
    visible = torch.cuda_visible_devices
    no_devices = (visible or "").strip() == table.slurm_no_devices()
    if access.slurm_gpus and not no_devices:
        return  # GPUs were allocated: something else keeps torch from them
    evidence = ["$SLURM_JOB_ID is set"]
    evidence += list(access.slurm_gpus) or ["no SLURM_*GPUS* variable: no GPU was allocated"]
    if visible is not None:
        evidence.append(f"CUDA_VISIBLE_DEVICES={visible!r}")
    said = (
        f" Slurm set CUDA_VISIBLE_DEVICES={visible}, which makes CUDA ignore every GPU."
        if no_devices
        else " Slurm sets no GPU variable for this job, and its cgroup hides the node's GPUs."
    )
    yield Hit(
        title="this Slurm job was allocated no GPU",
        detail="The process runs in a Slurm job that did not request a GPU, so the node's GPUs are "
        f"not this job's.{said} Requesting one in the submission is the fix; a driver or torch "
        "reinstall is not.",
        evidence=tuple(evidence),
        fixes=(table.slurm_fix(),),
    )


@rule(
    code="ED184",
    name="container-shm-too-small",
    severity=Severity.WARNING,
    summary="this container's /dev/shm is too small for DataLoader workers (Docker's default is 64 MiB)",
    needs=(GpuAccessFacts, TorchFacts),
    doc=RuleDoc(
        what="The size of /dev/shm inside a container where torch is installed, against 1 GiB, and "
        "DataLoader's 'killed by signal: Bus error' where one was captured or pasted.",
        why="DataLoader workers (num_workers > 0) hand every batch to the main process through "
        "shared memory; Docker gives a container 64 MiB of it, and workers die of SIGBUS ('out of "
        "shared memory') as soon as batches outgrow it.",
        fix="Start the container with --shm-size=8g (or --ipc=host); in Kubernetes mount a "
        "memory-backed emptyDir at /dev/shm; or lower num_workers.",
        example="docker run --gpus all fastdotai/fastai-course: 'DataLoader worker (pid 47) is "
        "killed by signal: Bus error'; --shm-size=3G fixes it.",
    ),
)
def container_shm_too_small(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    torch = ctx.need(TorchFacts)
    if access.container is None or access.shm_bytes is None or not torch.imported:
        return
    if access.shm_bytes >= limits.shm_min_bytes():
        return
    evidence = ctx.get(ErrorEvidence)
    said = evidence.get(SHM_BUS_ERROR) if evidence is not None else None
    found = [*access.container_evidence, f"/dev/shm: {human_bytes(access.shm_bytes)}"]
    if said is not None:
        found.append(f"{said.source}: {said.excerpt}")
    yield Hit(
        title=f"/dev/shm in this {access.container} container is only {human_bytes(access.shm_bytes)}",
        detail=f"DataLoader workers pass batches through /dev/shm, which has "
        f"{human_bytes(access.shm_bytes)} here (Docker's default is 64 MiB); with num_workers > 0 "
        "they die with 'DataLoader worker ... is killed by signal: Bus error'.",
        evidence=tuple(found),
        fixes=limits.shm_fixes(),
    )


@rule(
    code="ED185",
    name="memlock-limit-too-low-for-rdma",
    severity=Severity.WARNING,
    summary="the locked-memory limit (ulimit -l) is too low for the InfiniBand/RoCE devices here",
    needs=(GpuAccessFacts,),
    doc=RuleDoc(
        what="The soft 'Max locked memory' limit in /proc/self/limits on a machine with devices in "
        "/sys/class/infiniband, against 1 GiB (unlimited is what NCCL and UCX ask for).",
        why="RDMA pins every buffer it registers; with a small locked-memory limit NCCL's "
        "ibv_reg_mr and UCX's ibv_create_cq fail with 'Cannot allocate memory' and multi-node "
        "training falls back to sockets or stops.",
        fix="Set memlock to unlimited in /etc/security/limits.conf and log in again (check ulimit -l "
        "inside mpirun or srun); start containers with --ulimit memlock=-1.",
        example="nccl-tests over InfiniBand with ulimit -l 8192: 'Call to ibv_reg_mr_iova2 failed "
        "with error Cannot allocate memory'.",
    ),
)
def memlock_limit_too_low_for_rdma(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    limit = access.memlock
    if not access.infiniband or limit is None or limit.soft is None:
        return  # no RDMA device, not read, or unlimited
    if limit.soft >= limits.memlock_min_bytes():
        return
    evidence = ctx.get(ErrorEvidence)
    said = evidence.get(RDMA_PIN) if evidence is not None else None
    found = [
        f"RDMA devices: {', '.join(access.infiniband)}",
        f"Max locked memory: {human_bytes(limit.soft)} (soft)",
    ]
    if said is not None:
        found.append(f"{said.source}: {said.excerpt}")
    yield Hit(
        title=f"the locked-memory limit is {human_bytes(limit.soft)}, too low for RDMA",
        detail=f"This machine has RDMA devices ({', '.join(access.infiniband)}), and this process may "
        f"lock only {human_bytes(limit.soft)} of memory; NCCL and UCX pin their buffers there and "
        "fail with 'Cannot allocate memory'. They ask for an unlimited limit.",
        evidence=tuple(found),
        fixes=limits.memlock_fixes(),
    )


@rule(
    code="ED186",
    name="open-files-limit-too-low-for-dataloader",
    severity=Severity.WARNING,
    summary="the soft open-files limit is too low for DataLoader workers ('received 0 items of ancdata')",
    needs=(GpuAccessFacts, ErrorEvidence),
    doc=RuleDoc(
        what="DataLoader's 'received 0 items of ancdata' or 'unable to open shared memory object' in a "
        "captured or pasted error, against the soft 'Max open files' limit (below 4096); without "
        "such an error, a soft limit below 1024 where torch is installed.",
        why="With the file_descriptor sharing strategy (Linux's default) every tensor a worker sends "
        "holds an open file; at the limit the socket silently drops one and the loader fails with "
        "'received 0 items of ancdata'.",
        fix="Raise the limit in the shell that starts the job (`ulimit -n $(ulimit -Hn)`), or call "
        "torch.multiprocessing.set_sharing_strategy('file_system') after importing torch.",
        example="A DataLoader with num_workers=8 over large graphs under ulimit -n 1024: "
        "'RuntimeError: received 0 items of ancdata'.",
    ),
)
def open_files_limit_too_low_for_dataloader(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    said = ctx.need(ErrorEvidence).get(OUT_OF_FILES)
    limit = access.open_files
    if limit is None or limit.soft is None or limit.soft >= limits.nofile_min():
        return
    torch = ctx.get(TorchFacts)
    if said is None and (limit.soft >= limits.nofile_alone_below() or torch is None or not torch.installed):
        return
    hard = "unlimited" if limit.hard is None else str(limit.hard)
    shown = f"Max open files: {limit.soft} (soft), {hard} (hard)"
    if said is None:
        yield Hit(
            title=f"the open-files limit is {limit.soft}: DataLoader workers will run out of files",
            detail=f"This process may open only {limit.soft} files (hard limit {hard}). With the "
            "file_descriptor sharing strategy (Linux's default) each tensor a DataLoader worker "
            "sends holds one, and the loader fails with 'received 0 items of ancdata'.",
            evidence=(shown,),
            fixes=limits.nofile_fixes(),
        )
        return
    yield Hit(
        title=f"DataLoader workers ran out of open files: the soft limit is {limit.soft}",
        detail=f"The error ('{said.excerpt}') is what a DataLoader gives when its workers exhaust the "
        f"open-files limit: {limit.soft} here (hard limit {hard}). With the file_descriptor sharing "
        "strategy each tensor in flight holds a file descriptor.",
        evidence=(f"{said.source}: {said.excerpt}", shown),
        fixes=limits.nofile_fixes(),
    )
