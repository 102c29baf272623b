"""The state of the NVIDIA kernel modules and devices: CUDA's "unknown error" at start (nvidia_uvm
after a suspend), a missing /dev/nvidia-uvm, a GPU held in exclusive mode or prohibited, MIG without
an instance this process can see, retired pages or remapped rows waiting for a reset, and device
files this user may not open."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.knowledge import gpu_access as table
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.gpu_access import NVIDIA_UVM, DeviceNode, GpuAccessFacts, GpuState
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.nvml.access import cuda_torch

_BUSY = ("busy or unavailable", "cudaErrorDevicesUnavailable")
_EXCLUSIVE = ("exclusive_process", "exclusive_thread")


def torch_messages(torch: TorchFacts) -> tuple[str, ...]:
    """Everything torch said while starting CUDA: warnings, step errors, the smoke test's errors."""
    said = list(torch.warnings)
    said += [f"{error.type}: {error.message}" for error in torch.errors if error.message]
    if torch.smoke is not None:
        for device in torch.smoke.devices:
            said += [f"{s.error.type}: {s.error.message}" for s in device.steps if s.error is not None]
    return tuple(said)


def _first(messages: tuple[str, ...], patterns: tuple[str, ...]) -> str | None:
    for message in messages:
        if any(pattern.lower() in message.lower() for pattern in patterns):
            return message
    return None


def cuda_failed(torch: TorchFacts) -> bool:
    """torch could not use CUDA: is_available() False, no device, or a smoke step failed."""
    if torch.cuda_available is False or torch.device_count == 0:
        return True
    return torch.smoke is not None and any(d.gpu and d.problems for d in torch.smoke.devices)


@rule(
    code="ED125",
    name="cuda-unknown-error-at-init",
    severity=Severity.ERROR,
    summary="CUDA failed to start with 'unknown error' (cudaErrorUnknown): reload nvidia_uvm",
    needs=(TorchFacts,),
    consequence_of=("ED126",),
    doc=RuleDoc(
        what="torch's warnings and errors, and the smoke test's, for CUDA's 'unknown error' "
        "(cudaErrorUnknown, CUDA_ERROR_UNKNOWN) while initialising.",
        why="The message blames CUDA_VISIBLE_DEVICES, but the usual cause is the nvidia_uvm "
        "kernel module left broken by a suspend and resume (or its device file missing); NVML "
        "and nvidia-smi still look fine.",
        fix="Stop the programs using the GPU and reload the module with `sudo rmmod nvidia_uvm && "
        "sudo modprobe nvidia_uvm`, or reboot.",
        example="After waking a laptop: 'CUDA initialization: CUDA unknown error - this may be "
        "due to an incorrectly set up environment' and is_available() False.",
    ),
)
def cuda_unknown_error_at_init(ctx: RuleContext) -> Iterator[Hit]:
    torch = cuda_torch(ctx)
    if torch is None:
        return
    said = _first(torch_messages(torch), table.unknown_error_patterns())
    if said is None:
        return
    access = ctx.get(GpuAccessFacts)
    evidence = [said.splitlines()[0][:300]]
    modules = ""
    if access is not None and access.modules is not None:
        evidence.append("loaded modules: " + (", ".join(access.modules) or "none"))
        if "nvidia_uvm" not in access.modules:
            modules = " The nvidia_uvm module is not even loaded."
    host = " In a container, run it on the host." if access is not None and access.container else ""
    yield Hit(
        title="CUDA fails to start with 'unknown error'",
        detail="torch could not initialise CUDA: cudaErrorUnknown. Despite the message's hint at "
        "CUDA_VISIBLE_DEVICES, this is the state of the NVIDIA kernel modules, classically "
        f"nvidia_uvm after a suspend and resume.{modules}{host}",
        evidence=tuple(evidence),
        fixes=(table.unknown_error_fix(),),
    )


@rule(
    code="ED126",
    name="nvidia-uvm-device-missing",
    severity=Severity.ERROR,
    summary="/dev/nvidia-uvm is missing, so CUDA cannot start although the driver is loaded",
    needs=(GpuAccessFacts, TorchFacts),
    doc=RuleDoc(
        what="Whether /dev/nvidiactl exists but /dev/nvidia-uvm does not (and whether the "
        "nvidia_uvm module is loaded), while torch's CUDA failed to start.",
        why="CUDA needs the unified-memory device; without it every CUDA program fails with "
        "'unknown error' or finds no device, while nvidia-smi works.",
        fix="Load the module and create the device file: `sudo modprobe nvidia-uvm` or "
        "`sudo nvidia-modprobe -u -c=0`; for a container, on the host.",
        example="A podman container without /dev/nvidia-uvm: 'RuntimeError: CUDA unknown error'.",
    ),
)
def nvidia_uvm_device_missing(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    torch = cuda_torch(ctx)
    if torch is None or access.wsl or not access.uvm_missing or not cuda_failed(torch):
        return
    evidence = ["/dev/nvidiactl exists", f"{NVIDIA_UVM} does not"]
    loaded = ""
    if access.modules is not None:
        evidence.append("loaded modules: " + (", ".join(access.modules) or "none"))
        loaded = (
            " The nvidia_uvm module is loaded, but its device file was not created."
            if "nvidia_uvm" in access.modules
            else " The nvidia_uvm module is not loaded."
        )
    where = (
        f" In this {access.container} container the device must be passed in too, after it "
        "exists on the host."
        if access.container
        else ""
    )
    yield Hit(
        title=f"{NVIDIA_UVM} is missing, so CUDA cannot start",
        detail=f"The driver is loaded (/dev/nvidiactl exists) but CUDA's unified-memory device "
        f"{NVIDIA_UVM} is not there.{loaded}{where}",
        evidence=tuple(evidence),
        fixes=(table.uvm_fix(),),
    )


def _held(state: GpuState) -> bool:
    return state.compute_mode == "prohibited" or (state.compute_mode in _EXCLUSIVE and bool(state.processes))


@rule(
    code="ED127",
    name="gpu-held-in-exclusive-mode",
    severity=Severity.ERROR,
    summary="the GPU is in exclusive-process mode and another process holds it (or compute is prohibited)",
    needs=(GpuAccessFacts, TorchFacts),
    doc=RuleDoc(
        what="NVML's compute mode and the processes holding a CUDA context on each GPU, when "
        "torch's CUDA failed or said 'busy or unavailable'.",
        why="In exclusive-process mode a GPU admits one process; a second one gets 'CUDA-capable "
        "device(s) is/are busy or unavailable' although is_available() may be True. In "
        "prohibited mode no process may use it.",
        fix="Wait for or stop the process holding the GPU, pick a free GPU with "
        "CUDA_VISIBLE_DEVICES, or ask the administrator to set the default compute mode "
        "(`sudo nvidia-smi -i N -c DEFAULT`).",
        example="A cluster node whose GPUs are Exclusive_Process, with a finished job's process "
        "still alive: 'all CUDA-capable devices are busy or unavailable'.",
    ),
)
def gpu_held_in_exclusive_mode(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    torch = cuda_torch(ctx)
    held = [state for state in access.gpu_states if _held(state)]
    if torch is None or not held:
        return
    busy = _first(torch_messages(torch), _BUSY)
    # torch's own child holds a context while it runs: only its failure proves another process.
    if busy is None and not (len(held) == len(access.gpu_states) and cuda_failed(torch)):
        return
    parts = []
    for state in held:
        if state.compute_mode == "prohibited":
            parts.append(f"GPU {state.index} is in prohibited compute mode")
        else:
            pids = ", ".join(str(pid) for pid in state.processes or ())
            mode = (state.compute_mode or "").replace("_", "-")
            parts.append(f"GPU {state.index} is {mode} and held by PID {pids}")
    evidence = [
        f"GPU {s.index}: compute mode {s.compute_mode}, processes {list(s.processes or ())}" for s in held
    ]
    if busy is not None:
        evidence.append(busy.splitlines()[0][:300])
    indices = ",".join(str(s.index) for s in held)
    yield Hit(
        title="the GPU is reserved: " + "; ".join(parts),
        detail="; ".join(parts) + ". A GPU in exclusive-process mode admits one CUDA process, so "
        "torch gets 'CUDA-capable device(s) is/are busy or unavailable'. The compute mode is "
        "the administrator's setting; the process holding the GPU may be a finished job's leftover.",
        evidence=tuple(evidence),
        fixes=(
            Fix(
                summary="See which processes hold the GPU; stop them or wait for them, or use a free GPU",
                commands=("nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name --format=csv",),
            ),
            Fix(
                summary="As an administrator, let several processes share the GPU again",
                commands=(f"sudo nvidia-smi -i {indices} -c DEFAULT",),
                link="https://docs.nvidia.com/deploy/nvidia-smi/index.html",
            ),
        ),
    )


@rule(
    code="ED128",
    name="mig-without-visible-instance",
    severity=Severity.ERROR,
    summary="MIG is enabled but this process can see no MIG instance",
    needs=(GpuAccessFacts, TorchFacts),
    doc=RuleDoc(
        what="NVML's MIG mode and the MIG devices created on each GPU, against "
        "CUDA_VISIBLE_DEVICES, when torch finds no CUDA device.",
        why="A GPU in MIG mode runs CUDA only inside a MIG instance: with none created, or with "
        "CUDA_VISIBLE_DEVICES naming the whole GPU instead of a MIG-<uuid>, CUDA sees no device.",
        fix="Create a GPU and compute instance (`sudo nvidia-smi mig -cgi <profile> -C`), set "
        "CUDA_VISIBLE_DEVICES to a MIG-<uuid> from `nvidia-smi -L`, or disable MIG.",
        example="An A100 with MIG enabled and no instances: torch.cuda.device_count() is 0.",
    ),
)
def mig_without_visible_instance(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    torch = cuda_torch(ctx)
    mig = [state for state in access.gpu_states if state.mig_current]
    if torch is None or not mig or not (torch.cuda_available is False or torch.device_count == 0):
        return
    visible = torch.cuda_visible_devices
    empty = [s for s in mig if not s.mig_devices]
    created = [uuid for s in mig for uuid in s.mig_devices]
    evidence = [f"GPU {s.index}: MIG on, {len(s.mig_devices)} MIG device(s)" for s in mig]
    if visible is not None:
        evidence.append(f"CUDA_VISIBLE_DEVICES={visible!r}")
    if created and (visible is None or "MIG-" not in visible):
        named = f"CUDA_VISIBLE_DEVICES={visible!r} names" if visible is not None else "nothing names"
        yield Hit(
            title="MIG instances exist, but CUDA_VISIBLE_DEVICES does not name one",
            detail=f"{len(created)} MIG device(s) exist, yet {named} a MIG device, so CUDA sees "
            "none here. A process uses one MIG device, named by its MIG-<uuid>.",
            evidence=tuple(evidence),
            fixes=(
                Fix(
                    summary="Name the MIG device to use (`nvidia-smi -L` lists them)",
                    commands=(f"export CUDA_VISIBLE_DEVICES={created[0]}",),
                    link="https://docs.nvidia.com/datacenter/tesla/mig-user-guide/index.html",
                ),
            ),
        )
    if empty:
        indices = ",".join(str(s.index) for s in empty)
        yield Hit(
            title=f"MIG is enabled on GPU {indices} but no MIG instance exists",
            detail="In MIG mode CUDA runs only inside a MIG instance, and none is created, so "
            "torch finds no CUDA device.",
            evidence=tuple(evidence),
            fixes=(
                Fix(
                    summary="Create a GPU instance with its compute instance (pick a profile from "
                    "the list), then name it in CUDA_VISIBLE_DEVICES",
                    commands=(
                        "sudo nvidia-smi mig -lgip",
                        f"sudo nvidia-smi mig -i {indices} -cgi <profile> -C",
                    ),
                    link="https://docs.nvidia.com/datacenter/tesla/mig-user-guide/index.html",
                ),
                Fix(
                    summary="Turn MIG off (stop the GPU's processes first)",
                    commands=(f"sudo nvidia-smi -i {indices} -mig 0",),
                ),
            ),
        )


@rule(
    code="ED129",
    name="gpu-reset-pending",
    severity=Severity.WARNING,
    summary="retired pages, remapped rows or a MIG mode change wait for a GPU reset or reboot",
    needs=(GpuAccessFacts,),
    doc=RuleDoc(
        what="nvmlDeviceGetRetiredPagesPendingStatus, nvmlDeviceGetRemappedRows (pending, "
        "failed) and a pending MIG mode, on GPUs whose driver answers them.",
        why="Memory the driver retired or remapped after ECC errors, or a MIG change, takes "
        "effect only after a GPU reset or reboot; until then the GPU runs degraded or not as "
        "configured. A failed row remapping is a hardware fault.",
        fix="Stop the GPU's processes and reset it (`sudo nvidia-smi -r -i N`) or reboot; after a "
        "failed remapping, contact the vendor.",
        example="An A100 after uncorrectable ECC errors: nvidia-smi -q shows Pending Page "
        "Blacklist: Yes / Remapping Pending: Yes.",
    ),
)
def gpu_reset_pending(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    for state in access.gpu_states:
        reasons = []
        if state.retired_pages_pending:
            reasons.append("retired memory pages are pending")
        if state.remapped_rows_pending:
            reasons.append("remapped memory rows are pending")
        if (
            state.mig_pending is not None
            and state.mig_current is not None
            and state.mig_pending != state.mig_current
        ):
            reasons.append(f"MIG mode changes to {'on' if state.mig_pending else 'off'}")
        if not reasons and not state.remapped_rows_failed:
            continue
        fixes = [
            Fix(
                summary="Stop the processes on this GPU, then reset it (or reboot the machine)",
                commands=(f"sudo nvidia-smi -r -i {state.index}",),
                link="https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html",
            )
        ]
        detail = f"GPU {state.index}: " + "; ".join(reasons or ["row remapping failed"]) + "."
        if state.remapped_rows_failed:
            detail += (
                " A row remapping failed: the GPU's memory has more faults than it can repair, "
                "a hardware fault to report to the vendor."
            )
        else:
            detail += " These take effect only after a GPU reset or a reboot."
        yield Hit(
            title=f"GPU {state.index} needs a reset or reboot",
            detail=detail,
            evidence=tuple(reasons) + (("remapped_rows_failed",) if state.remapped_rows_failed else ()),
            fixes=tuple(fixes),
        )


def dac_allows(node: DeviceNode, uid: int | None, groups: tuple[int, ...]) -> bool | None:
    """Whether owner, group and mode alone let a process (uid, groups) read and write `node`;
    None when the facts do not say."""
    if uid == 0:
        return True
    if node.mode is None or uid is None:
        return None
    if node.uid == uid:
        return node.mode & 0o600 == 0o600
    if node.gid is not None and node.gid in groups:
        return node.mode & 0o060 == 0o060
    return node.mode & 0o006 == 0o006


@rule(
    code="ED175",
    name="gpu-device-files-not-permitted",
    severity=Severity.ERROR,
    summary="this user may not open the NVIDIA device files (their group and mode leave it out)",
    needs=(GpuAccessFacts,),
    doc=RuleDoc(
        what="Each NVIDIA device file's owner, group and mode against this process's user and groups, "
        "and whether access(2) lets the process read and write it.",
        why="CUDA and NVML open /dev/nvidia*; a file that is root:video 0660 shuts out a user who is "
        "not in 'video', so torch sees no GPU (NVML: 'Insufficient Permissions') while root or sudo "
        "works. In a container, the image's user must have the host's group id of those files.",
        fix="Add the user to the files' group (`sudo usermod -aG <group> $USER`, then log in again); "
        "in a container, run with `--group-add <gid>` or as a user in that group.",
        example="openSUSE with /dev/nvidia0 as crw-rw---- root video: torch.cuda.is_available() is "
        "True only under sudo.",
    ),
)
def gpu_device_files_not_permitted(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    shut = [
        n
        for n in access.device_nodes
        if n.usable is False and dac_allows(n, access.process_uid, access.process_groups) is False
    ]
    if not shut:
        return
    groups = sorted({(n.group or str(n.gid)) for n in shut if n.gid is not None})
    gids = sorted({n.gid for n in shut if n.gid is not None})
    evidence = [
        f"{n.path}: {oct(n.mode or 0)[2:].rjust(4, '0')} uid {n.uid} gid {n.gid}"
        + (f" ({n.group})" if n.group else "")
        for n in shut
    ]
    evidence.append(f"this process: uid {access.process_uid}, groups {list(access.process_groups)}")
    group = groups[0] if groups else "<group>"
    if access.container:
        commands = tuple(f"docker run --group-add {gid} ... IMAGE" for gid in gids) or (
            "docker run --group-add <gid> ... IMAGE",
        )
        fix = Fix(summary=table.permission_summary(True), commands=commands)
        where = (
            f" In this {access.container} container the files keep the host's group id"
            f" ({', '.join(str(g) for g in gids)}), which the image's user lacks."
        )
    else:
        fix = Fix(summary=table.permission_summary(False), commands=(f"sudo usermod -aG {group} $USER",))
        where = ""
    yield Hit(
        title="this user may not open the NVIDIA device files",
        detail=f"{', '.join(n.path for n in shut)} belong to group {', '.join(groups) or '?'} and let "
        "only their owner and group in; this process is neither, so CUDA and NVML cannot open the "
        f"GPU (NVML: 'Insufficient Permissions') although root can.{where}",
        evidence=tuple(evidence),
        fixes=(fix,),
    )
