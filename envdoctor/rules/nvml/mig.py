"""MIG as one process sees it: CUDA_VISIBLE_DEVICES naming several MIG slices (a process enumerates
one), a torch whose device_count() drops the UUIDs in CUDA_VISIBLE_DEVICES (1.13.x), and a container
that may not monitor MIG devices (NVIDIA_MIG_MONITOR_DEVICES unset: 'Insufficient Permissions')."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.knowledge import gpu_access as table
from envdoctor.knowledge import parse_version
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.gpu_access import GpuAccessFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import planned_fix
from envdoctor.rules.nvml.access import cuda_torch

_PERMISSION = "insufficient pe"  # "Insufficient Permissions", and the "Pemmissions" typo logs show


def visible_entries(value: str | None) -> tuple[str, ...]:
    """CUDA_VISIBLE_DEVICES' entries, blanks dropped ("MIG-a, MIG-b" -> ("MIG-a", "MIG-b"))."""
    return tuple(e.strip() for e in (value or "").split(",") if e.strip())


def mig_entries(value: str | None) -> tuple[str, ...]:
    """The MIG devices CUDA_VISIBLE_DEVICES names: MIG-<uuid>, or the older MIG-GPU-<uuid>/gi/ci."""
    return tuple(e for e in visible_entries(value) if e.upper().startswith("MIG-"))


@rule(
    code="ED177",
    name="mig-monitor-capability-missing",
    severity=Severity.ERROR,
    summary="MIG devices answer 'Insufficient Permissions' in a container without NVIDIA_MIG_MONITOR_DEVICES",
    needs=(GpuAccessFacts,),
    doc=RuleDoc(
        what="Inside a container, NVML's answers about the MIG devices of GPUs in MIG mode, and the "
        "NVIDIA_MIG_MONITOR_DEVICES variable the NVIDIA runtime reads.",
        why="Reading a MIG device's memory and profile needs the MIG monitor capability, which the "
        "runtime gives a container only with NVIDIA_MIG_MONITOR_DEVICES=all; without it the NVIDIA "
        "device plugin and gpu-feature-discovery fail with 'Insufficient Permissions' and the node "
        "advertises no GPU.",
        fix="Set NVIDIA_MIG_MONITOR_DEVICES=all on the device plugin's (or the tool's) pod; the pod "
        "must be privileged or have CAP_SYS_ADMIN.",
        example="nvidia-device-plugin on a MIG-enabled A100: 'error getting device memory info: "
        "Insufficient Permissions'.",
    ),
)
def mig_monitor_capability_missing(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    if access.container is None or (access.mig_monitor_devices or "").strip().lower() == "all":
        return
    refused = [
        (state, said[0])
        for state in access.gpu_states
        if state.mig_current
        for said in ([e for e in state.errors if _PERMISSION in e.lower()],)
        if said
    ]
    if not refused:
        return
    asked = access.mig_monitor_devices
    evidence = [
        *access.container_evidence,
        *(f"GPU {state.index} (MIG on): {error}" for state, error in refused),
        "NVIDIA_MIG_MONITOR_DEVICES is unset" if asked is None else f"NVIDIA_MIG_MONITOR_DEVICES={asked!r}",
    ]
    indices = ", ".join(str(state.index) for state, _ in refused)
    yield Hit(
        title="this container may not read the MIG devices: NVIDIA_MIG_MONITOR_DEVICES is not 'all'",
        detail=f"GPU {indices} is in MIG mode, and NVML's questions about its MIG devices answer "
        "'Insufficient Permissions': the NVIDIA runtime gives a container the MIG monitor "
        "capability only when NVIDIA_MIG_MONITOR_DEVICES=all, so a device plugin here advertises "
        "no GPU.",
        evidence=tuple(evidence),
        fixes=(table.mig_monitor_fix(),),
    )


@rule(
    code="ED182",
    name="mig-one-slice-per-process",
    severity=Severity.WARNING,
    summary="several MIG slices are named or created, but one CUDA process can use only one of them",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="The MIG devices CUDA_VISIBLE_DEVICES names (MIG-<uuid>, or the older "
        "MIG-GPU-<uuid>/gi/ci form), and the MIG devices NVML lists, against the devices torch sees.",
        why="With MIG, a CUDA process enumerates a single MIG device whatever CUDA_VISIBLE_DEVICES "
        "lists: torch.cuda.device_count() is 1, cuda:1 does not exist ('device >= 0 && device < "
        "num_gpus'), and data-parallel training over slices of one process cannot work.",
        fix="Run one process per MIG slice, each with CUDA_VISIBLE_DEVICES set to a single "
        "MIG-<uuid> from `nvidia-smi -L`; for more GPU in one process, use a larger MIG profile or "
        "disable MIG.",
        example="Two 3g.40gb slices of an A100 in CUDA_VISIBLE_DEVICES and DDP over cuda:0 and "
        "cuda:1: 'device >= 0 && device < num_gpus INTERNAL ASSERT FAILED'.",
    ),
)
def mig_one_slice_per_process(ctx: RuleContext) -> Iterator[Hit]:
    torch = cuda_torch(ctx)
    if torch is None:
        return
    named = mig_entries(torch.cuda_visible_devices)
    access = ctx.get(GpuAccessFacts)
    created = [uuid for state in (access.gpu_states if access else ()) for uuid in state.mig_devices]
    if len(named) >= 2:
        evidence = [f"CUDA_VISIBLE_DEVICES names {len(named)} MIG devices"]
        said = f"CUDA_VISIBLE_DEVICES names {len(named)} MIG devices ({', '.join(named[:3])}"
        said += ", ...)" if len(named) > 3 else ")"
    elif not named and len(created) >= 2 and torch.device_count == 1:
        evidence = [f"{len(created)} MIG devices exist", "CUDA_VISIBLE_DEVICES names none of them"]
        said = f"{len(created)} MIG devices exist on this machine"
    else:
        return
    if torch.device_count is not None:
        evidence.append(f"torch.cuda.device_count() = {torch.device_count}")
    first = named[0] if named else created[0]
    yield Hit(
        title="one CUDA process uses one MIG slice only",
        detail=f"{said}, but a CUDA process enumerates a single MIG device: torch sees one GPU, and "
        "multi-device or data-parallel code over the slices fails. Run one process per slice.",
        evidence=tuple(evidence),
        fixes=(
            Fix(
                summary="Give each process its own slice (one `export` per process; `nvidia-smi -L` "
                "lists the MIG UUIDs)",
                commands=(f"export CUDA_VISIBLE_DEVICES={first}",),
                link=table.mig_guide(),
            ),
        ),
    )


@rule(
    code="ED183",
    name="torch-drops-uuid-visible-devices",
    severity=Severity.WARNING,
    summary="this torch's device_count() ignores the GPU-/MIG- UUIDs in CUDA_VISIBLE_DEVICES and reports 0",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="A torch release from 1.13.0 up to (not including) 2.0.0 with CUDA_VISIBLE_DEVICES "
        "naming devices by UUID (GPU-<uuid>, MIG-<uuid>) and torch.cuda.device_count() at 0.",
        why="Those releases count devices through NVML and parse CUDA_VISIBLE_DEVICES as integers "
        "only, so UUID entries are dropped: device_count() is 0 and code that checks it skips the "
        "GPU, although tensors still move to cuda:0.",
        fix="Upgrade torch to 2.0 or newer (its parser understands UUIDs), or name the GPUs by index "
        "in CUDA_VISIBLE_DEVICES where the scheduler allows it.",
        example="HTCondor sets CUDA_VISIBLE_DEVICES=GPU-<uuid>; under torch 1.13.0 "
        "torch.cuda.device_count() prints 0.",
    ),
)
def torch_drops_uuid_visible_devices(ctx: RuleContext) -> Iterator[Hit]:
    torch = cuda_torch(ctx)
    if torch is None or torch.device_count != 0:
        return
    uuids = [e for e in visible_entries(torch.cuda_visible_devices) if e.upper().startswith(("GPU-", "MIG-"))]
    version = parse_version(torch.public_version)
    start, fixed = (parse_version(v) for v in table.uuid_parse_range())
    if not uuids or version is None or start is None or fixed is None or not start <= version < fixed:
        return
    fixes = []
    upgrade = planned_fix(ctx, f"Upgrade torch to {fixed} or newer", want_cuda=True)
    if upgrade is not None:
        fixes.append(upgrade)
    fixes.append(
        Fix(
            summary="Meanwhile: tensors on cuda:0 still work; code that checks device_count() needs "
            "the GPU named by index instead (where the scheduler allows it)",
            commands=("nvidia-smi -L",),
        )
    )
    yield Hit(
        title=f"torch {torch.public_version} ignores the UUIDs in CUDA_VISIBLE_DEVICES: device_count() is 0",
        detail=f"CUDA_VISIBLE_DEVICES names {', '.join(uuids[:3])}; torch {start.base_version} up to "
        f"{fixed.base_version} counts devices through NVML and reads that variable as integers only, so "
        "it reports no device, although CUDA itself uses the GPU (torch.rand(1).cuda() works).",
        evidence=(
            f"torch {torch.version}",
            f"CUDA_VISIBLE_DEVICES={torch.cuda_visible_devices!r}",
            "device_count() = 0",
        ),
        fixes=tuple(fixes),
    )
