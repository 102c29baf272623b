"""How this process reaches the GPU: container or WSL, the NVIDIA device files and kernel modules,
and each GPU's state as NVML reports it (compute mode, MIG, pages and rows waiting for a reboot).

Linux only (WSL included). Files are read only where they exist, and every read may fail: a
container without /proc/driver, an unreadable /proc/modules or a missing /dev are facts here, and
NVML's device-state queries run in a time-bounded child, only where an NVIDIA device file is there.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envdoctor.host.base import Host
from envdoctor.host.ending import ending_of_outcome
from envdoctor.knowledge import gpu_access as facts_table
from envdoctor.probes.base import NotApplicable, ProbeContext, ProbeSpec

_CHILD_TIMEOUT = 10.0
_READ_LIMIT = 1024 * 1024  # /proc/self/mountinfo of a busy host is large; more is not read
NVIDIACTL = "/dev/nvidiactl"
NVIDIA_UVM = "/dev/nvidia-uvm"
DXG = "/dev/dxg"  # WSL 2's GPU paravirtualisation device
PROC_DRIVER = "/proc/driver/nvidia/version"
PROC_MODULES = "/proc/modules"


@dataclass(frozen=True)
class GpuState:
    """One GPU's state from NVML; None where the query was unavailable or unsupported."""

    index: int
    uuid: str | None = None
    compute_mode: str | None = None  # default, exclusive_process, prohibited, exclusive_thread
    processes: tuple[int, ...] | None = None  # PIDs holding a CUDA context (in this PID namespace)
    mig_current: bool | None = None
    mig_pending: bool | None = None
    mig_devices: tuple[str, ...] = ()  # MIG-<uuid> of the MIG devices created on it
    retired_pages_pending: bool | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failed: bool | None = None
    unsupported: tuple[str, ...] = ()  # NVML queries this GPU or driver answered NotSupported
    unavailable: tuple[str, ...] = ()  # queries the installed pynvml does not have
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class GpuAccessFacts:
    container: str | None = None  # docker, podman, kubernetes, containerd, lxc
    container_evidence: tuple[str, ...] = ()
    nvidia_visible_devices: str | None = None  # the NVIDIA container runtime's variable, verbatim
    wsl: int | None = None  # 1 or 2
    wsl_libcuda: bool = False  # the Windows driver's libcuda.so.1 is in /usr/lib/wsl/lib
    linux_driver_in_wsl: tuple[str, ...] = ()  # a Linux driver's libcuda/libnvidia-ml inside WSL
    device_files: tuple[str, ...] = ()  # which of /dev/nvidiactl, /dev/nvidia0, /dev/nvidia-uvm, /dev/dxg
    proc_driver: str | None = None  # the first line of /proc/driver/nvidia/version
    modules: tuple[str, ...] | None = None  # loaded nvidia* kernel modules; None: unreadable
    gpu_states: tuple[GpuState, ...] = ()
    nvml_error: str | None = None  # why the state query gave nothing
    errors: tuple[str, ...] = ()  # files that exist but could not be read

    @property
    def has_nvidia_devices(self) -> bool:
        return any(path != DXG for path in self.device_files)

    @property
    def uvm_missing(self) -> bool:
        """The control device is there but the unified-memory device is not: CUDA cannot start."""
        return NVIDIACTL in self.device_files and NVIDIA_UVM not in self.device_files


def _read(host: Host, path: str, errors: list[str]) -> str | None:
    """A file's text where it exists; an unreadable one is recorded, not raised."""
    if not host.exists(path):
        return None
    try:
        return host.read_text(path, max_bytes=_READ_LIMIT)
    except (OSError, UnicodeDecodeError) as exc:
        errors.append(f"{path}: {getattr(exc, 'strerror', None) or exc}")
        return None


def detect_container(host: Host, errors: list[str] | None = None) -> tuple[str | None, tuple[str, ...]]:
    """The container runtime this process runs under, and what showed it (None: none seen)."""
    errors = [] if errors is None else errors
    for marker in facts_table.container_files():
        if host.exists(marker.marker):
            return marker.kind, (f"{marker.marker} exists",)
    for marker in facts_table.container_env():
        if host.env.get(marker.marker):
            return marker.kind, (f"${marker.marker} is set",)
    for path, markers in (
        ("/proc/1/cgroup", facts_table.cgroup_markers()),
        ("/proc/self/mountinfo", facts_table.mountinfo_markers()),
    ):
        text = _read(host, path, errors)
        for marker in markers:
            if text and marker.marker in text:
                return marker.kind, (f"{path} mentions {marker.marker!r}",)
    return None, ()


def _modules(host: Host, errors: list[str]) -> tuple[str, ...] | None:
    text = _read(host, PROC_MODULES, errors)
    if text is None:
        return None
    names = (line.split(" ", 1)[0] for line in text.splitlines())
    return tuple(sorted({name for name in names if name.startswith("nvidia")}))


def _linux_driver_in_wsl(host: Host) -> tuple[str, ...]:
    """libcuda/libnvidia-ml files of a Linux driver inside WSL: links into /usr/lib/wsl/lib are fine."""
    found = []
    wsl_lib = facts_table.wsl_lib_dir()
    for folder in facts_table.linux_driver_dirs():
        for name in facts_table.linux_driver_libraries():
            path = posixpath.join(folder, name)
            if host.exists(path) and not host.realpath(path).startswith(wsl_lib + "/"):
                found.append(path)
    return tuple(found)


def _int_tuple(value: Any) -> tuple[int, ...] | None:
    if not isinstance(value, list):
        return None
    return tuple(int(item) for item in value if isinstance(item, int))


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(str(item) for item in value) if isinstance(value, list) else ()


def gpu_state_from_record(raw: Mapping[str, Any]) -> GpuState:
    mode = raw.get("compute_mode")
    uuid = raw.get("uuid")
    return GpuState(
        index=int(raw.get("index", 0)),
        uuid=uuid if isinstance(uuid, str) else None,
        compute_mode=facts_table.compute_mode_name(mode) if isinstance(mode, int) else None,
        processes=_int_tuple(raw.get("processes")),
        mig_current=_flag(raw.get("mig_current")),
        mig_pending=_flag(raw.get("mig_pending")),
        mig_devices=_texts(raw.get("mig_devices")),
        retired_pages_pending=_flag(raw.get("retired_pages_pending")),
        remapped_rows_pending=_flag(raw.get("remapped_rows_pending")),
        remapped_rows_failed=_flag(raw.get("remapped_rows_failed")),
        unsupported=_texts(raw.get("unsupported")),
        unavailable=_texts(raw.get("unavailable")),
        errors=_texts(raw.get("errors")),
    )


def _gpu_states(ctx: ProbeContext) -> tuple[tuple[GpuState, ...], str | None]:
    host = ctx.host
    timeout = ctx.options.child_limit(PROBE.timeout, _CHILD_TIMEOUT, share=0.8)
    outcome = host.python_json(host.own_python, "gpu_state_probe.py", (), timeout)
    records = [r for r in outcome.records if r.get("record") == "gpu_state"]
    if not records:
        ending = ending_of_outcome(outcome, limit=timeout)
        return (), f"the NVML state query {ending.describe()}"
    record = records[-1]
    gpus = tuple(gpu_state_from_record(raw) for raw in record.get("gpus") or () if isinstance(raw, dict))
    error = record.get("error")
    return gpus, (str(error) if error else None)


def collect(ctx: ProbeContext) -> GpuAccessFacts:
    host = ctx.host
    plat = host.platform()
    if plat.system != "Linux":
        raise NotApplicable("containers, WSL and NVIDIA device files are looked at on Linux only")
    errors: list[str] = []
    container, evidence = detect_container(host, errors)
    proc_version = _read(host, "/proc/version", errors) or ""
    wsl = facts_table.wsl_version(plat.release, proc_version)
    devices = tuple(p for p in (NVIDIACTL, "/dev/nvidia0", NVIDIA_UVM, DXG) if host.exists(p))
    driver_text = _read(host, PROC_DRIVER, errors)
    states: tuple[GpuState, ...] = ()
    nvml_error = None
    if NVIDIACTL in devices:  # no device file, no GPU NVML could show: no child to start
        states, nvml_error = _gpu_states(ctx)
    return GpuAccessFacts(
        container=container,
        container_evidence=evidence,
        nvidia_visible_devices=host.env.get(facts_table.visible_devices_env()),
        wsl=wsl,
        wsl_libcuda=wsl == 2 and host.exists(posixpath.join(facts_table.wsl_lib_dir(), "libcuda.so.1")),
        linux_driver_in_wsl=_linux_driver_in_wsl(host) if wsl == 2 else (),
        device_files=devices,
        proc_driver=driver_text.strip().splitlines()[0][:200]
        if driver_text and driver_text.strip()
        else None,
        modules=_modules(host, errors),
        gpu_states=states,
        nvml_error=nvml_error,
        errors=tuple(errors),
    )


def describe(facts: GpuAccessFacts) -> str:
    parts = []
    if facts.wsl:
        parts.append(f"WSL {facts.wsl}")
    if facts.container:
        parts.append(f"in a {facts.container} container")
    nvidia = [p.rsplit("/", 1)[-1] for p in facts.device_files]
    parts.append("device files: " + (", ".join(nvidia) if nvidia else "none"))
    if facts.modules:
        parts.append("modules: " + ", ".join(facts.modules))
    busy = [s for s in facts.gpu_states if s.compute_mode not in (None, "default")]
    if busy:
        parts.append(", ".join(f"GPU {s.index} {s.compute_mode}" for s in busy))
    if any(s.mig_current for s in facts.gpu_states):
        parts.append("MIG on")
    return "; ".join(parts)


PROBE = ProbeSpec(
    name="gpu_access",
    title="GPU access",
    facts_type=GpuAccessFacts,
    collect=collect,
    describe=describe,
    timeout=15.0,
)
