"""How this process reaches the GPU: container or WSL, the NVIDIA device files and kernel modules,
and each GPU's state as NVML reports it (compute mode, MIG, pages and rows waiting for a reboot);
what the container runtime gave the process (capabilities, libcuda, cuda-compat on the loader path,
SELinux), the NVIDIA Container Toolkit on a Docker host, a Slurm job's GPUs, the Windows side of
WSL 2, and the limits a DataLoader or an RDMA transport runs into (/dev/shm, ulimit -l and -n).

Linux only (WSL included). Files are read only where they exist, and every read may fail: a
container without /proc/driver, an unreadable /proc/modules or a missing /dev are facts here, and
NVML's device-state queries run in a time-bounded child, only where an NVIDIA device file is there.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any

from envdoctor.host.base import Host
from envdoctor.host.ending import ending_of_outcome
from envdoctor.knowledge import gpu_access as facts_table
from envdoctor.knowledge import resource_limits
from envdoctor.probes.base import NotApplicable, ProbeContext, ProbeSpec
from envdoctor.util.records import record

_CHILD_TIMEOUT = 10.0
_CMD_TIMEOUT = 3.0  # cmd.exe through WSL's interop answers in well under a second
_WINDOWS_VERSION = re.compile(r"Version (\d+)\.(\d+)\.(\d+)(?:\.(\d+))?")
_LIMIT_LINE = re.compile(r"^(?P<name>Max [A-Za-z ]+?)\s{2,}(?P<soft>\S+)\s+(?P<hard>\S+)")
_READ_LIMIT = 1024 * 1024  # /proc/self/mountinfo of a busy host is large; more is not read
NVIDIACTL = "/dev/nvidiactl"
NVIDIA_UVM = "/dev/nvidia-uvm"
DXG = "/dev/dxg"  # WSL 2's GPU paravirtualisation device
PROC_DRIVER = "/proc/driver/nvidia/version"
PROC_MODULES = "/proc/modules"


@record
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


@record
class DeviceNode:
    """One NVIDIA device file as this process sees it (stat and access(2), from the state child)."""

    path: str
    mode: int | None = None  # permission bits (0o660)
    uid: int | None = None
    gid: int | None = None
    group: str | None = None  # the group's name where this system knows it ("video")
    major: int | None = None
    minor: int | None = None
    usable: bool | None = None  # access(R_OK | W_OK): the kernel's verdict, SELinux included


@record
class CompatFolder:
    """A cuda-compat folder holding a libcuda.so.1 on the dynamic loader's path."""

    path: str
    via: str  # "LD_LIBRARY_PATH", or the /etc/ld.so.conf.d file that lists it
    library: str | None = None  # libcuda.so.1 resolved: its file name carries the compat version


@record
class Limit:
    """A resource limit of this process; None stands for unlimited."""

    soft: int | None
    hard: int | None


@record
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
    # What the container runtime was asked for and gave (the variables verbatim).
    driver_capabilities: str | None = None  # NVIDIA_DRIVER_CAPABILITIES
    mig_monitor_devices: str | None = None  # NVIDIA_MIG_MONITOR_DEVICES
    loader_path: tuple[str, ...] = ()  # LD_LIBRARY_PATH's entries, in order
    libcuda: tuple[str, ...] | None = None  # folders with a libcuda.so.1 the loader finds; None: not looked
    compat_folders: tuple[CompatFolder, ...] = ()  # cuda-compat folders among them
    device_nodes: tuple[DeviceNode, ...] = ()
    process_uid: int | None = None
    process_groups: tuple[int, ...] = ()
    selinux: str | None = None  # "enforcing" or "permissive"; None: no SELinux file visible
    selinux_label: str | None = None  # this process's SELinux context (/proc/self/attr/current)
    # A Docker host (outside any container): the daemon's client and the NVIDIA Container Toolkit.
    docker: str | None = None
    toolkit: tuple[str, ...] = ()  # the toolkit's programs found
    toolkit_no_cgroups: bool | None = None  # no-cgroups = true in its config.toml
    # A Slurm job: whether this runs in one, and the GPU variables Slurm set for it ("NAME=value").
    slurm_job: bool = False
    slurm_gpus: tuple[str, ...] = ()
    # WSL 2: the Windows driver's libraries in /usr/lib/wsl/lib, its loader-cache file, the build.
    wsl_libraries: tuple[str, ...] | None = None  # None: not looked (not WSL 2, or an older snapshot)
    wsl_ld_conf: bool | None = None
    windows_version: str | None = None  # "10.0.20231.1005", from cmd.exe's ver
    # Limits: /dev/shm's size, locked memory (bytes) and open files, and the RDMA devices.
    shm_bytes: int | None = None
    memlock: Limit | None = None
    open_files: Limit | None = None
    infiniband: tuple[str, ...] = ()

    @property
    def windows_build(self) -> int | None:
        """20231 from "10.0.20231.1005"."""
        parts = (self.windows_version or "").split(".")
        return int(parts[2]) if len(parts) >= 3 and parts[2].isdigit() else None

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


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def device_node_from_record(raw: Mapping[str, Any]) -> DeviceNode:
    group = raw.get("group")
    return DeviceNode(
        path=str(raw.get("path", "")),
        mode=_int(raw.get("mode")),
        uid=_int(raw.get("uid")),
        gid=_int(raw.get("gid")),
        group=group if isinstance(group, str) else None,
        major=_int(raw.get("major")),
        minor=_int(raw.get("minor")),
        usable=_flag(raw.get("usable")),
    )


@record
class _StateAnswer:
    gpus: tuple[GpuState, ...] = ()
    error: str | None = None
    nodes: tuple[DeviceNode, ...] = ()
    uid: int | None = None
    groups: tuple[int, ...] = ()


def _gpu_states(ctx: ProbeContext, nodes: tuple[str, ...]) -> _StateAnswer:
    host = ctx.host
    timeout = ctx.options.child_limit(PROBE.timeout, _CHILD_TIMEOUT, share=0.8)
    outcome = host.python_json(host.own_python, "gpu_state_probe.py", nodes, timeout)
    records = [r for r in outcome.records if r.get("record") == "gpu_state"]
    if not records:
        ending = ending_of_outcome(outcome, limit=timeout)
        return _StateAnswer(error=f"the NVML state query {ending.describe()}")
    record = records[-1]
    gpus = tuple(gpu_state_from_record(raw) for raw in record.get("gpus") or () if isinstance(raw, dict))
    error = record.get("error")
    raw_process = record.get("process")
    process: Mapping[str, Any] = raw_process if isinstance(raw_process, dict) else {}
    return _StateAnswer(
        gpus=gpus,
        error=str(error) if error else None,
        nodes=tuple(device_node_from_record(n) for n in record.get("nodes") or () if isinstance(n, dict)),
        uid=_int(process.get("uid")),
        groups=_int_tuple(process.get("groups")) or (),
    )


def _ld_conf_folders(host: Host, errors: list[str]) -> tuple[tuple[str, str], ...]:
    """(folder, the file that lists it) for every folder /etc/ld.so.conf.d names."""
    folder = facts_table.ld_conf_dir()
    if not host.is_dir(folder):
        return ()
    try:
        names = sorted(n for n in host.list_dir(folder) if n.endswith(".conf"))
    except OSError as exc:
        errors.append(f"{folder}: {getattr(exc, 'strerror', None) or exc}")
        return ()
    found = []
    for name in names:
        path = posixpath.join(folder, name)
        for line in (_read(host, path, errors) or "").splitlines():
            entry = line.split("#", 1)[0].strip()
            if entry.startswith("/"):
                found.append((entry, path))
    return tuple(found)


def _libcuda(
    host: Host, loader_path: tuple[str, ...], errors: list[str]
) -> tuple[tuple[str, ...], tuple[CompatFolder, ...]]:
    """The folders holding a libcuda.so.1 the loader can reach, and the cuda-compat ones among them."""
    candidates = [(entry, "LD_LIBRARY_PATH") for entry in loader_path]
    candidates += list(_ld_conf_folders(host, errors))
    candidates += [(folder, "standard") for folder in facts_table.loader_dirs()]
    holding: list[str] = []
    compat: list[CompatFolder] = []
    for folder, via in candidates:
        library = posixpath.join(folder, "libcuda.so.1")
        if folder in holding or not host.exists(library):
            continue
        holding.append(folder)
        if facts_table.compat_folder(folder):
            resolved = host.realpath(library)
            name = resolved.rsplit("/", 1)[-1] if resolved != library else None
            compat.append(CompatFolder(folder, via, name))
    return tuple(holding), tuple(compat)


def _selinux(host: Host, errors: list[str]) -> tuple[str | None, str | None]:
    enforce = (_read(host, facts_table.selinux_enforce_file(), errors) or "").strip()
    mode = {"1": "enforcing", "0": "permissive"}.get(enforce)
    # Without SELinux the kernel answers EINVAL for this file: that is "no label", not an error.
    label = (_read(host, facts_table.selinux_label_file(), []) or "").strip("\x00\n ")
    return mode, (label or None)


def _toolkit(host: Host, errors: list[str]) -> tuple[str | None, tuple[str, ...], bool | None]:
    docker = next((path for path in facts_table.docker_paths() if host.exists(path)), None)
    found = tuple(path for path in facts_table.toolkit_binaries() if host.exists(path))
    config = _read(host, facts_table.toolkit_config(), errors)
    no_cgroups = None
    if config is not None:
        for line in config.splitlines():
            key, _, value = line.split("#", 1)[0].partition("=")
            if key.strip() == "no-cgroups":
                no_cgroups = value.strip().lower() == "true"
    return docker, found, no_cgroups


def _slurm(host: Host) -> tuple[bool, tuple[str, ...]]:
    job = bool(host.env.get(facts_table.slurm_job_env()))
    gpus = tuple(f"{name}={host.env[name]}" for name in facts_table.slurm_gpu_env() if host.env.get(name))
    return job, gpus


def _windows_version(host: Host) -> str | None:
    """The Windows build under WSL 2, from cmd.exe's `ver` through interop; None when unreachable."""
    cmd = facts_table.wsl_cmd()
    if not host.exists(cmd):
        return None
    result = host.run([cmd, "/c", "ver"], _CMD_TIMEOUT)
    found = _WINDOWS_VERSION.search(result.stdout) if result.ok else None
    return ".".join(part for part in found.groups() if part) if found else None


def parse_limits(text: str) -> dict[str, Limit]:
    """/proc/self/limits' rows by name ("Max locked memory"); "unlimited" becomes None."""
    found: dict[str, Limit] = {}
    for line in text.splitlines():
        row = _LIMIT_LINE.match(line)
        if row is None:
            continue
        pair = (row["soft"], row["hard"])
        values = [None if v == "unlimited" else int(v) if v.isdigit() else -1 for v in pair]
        if -1 not in values:
            found[row["name"].strip()] = Limit(values[0], values[1])
    return found


def _infiniband(host: Host, errors: list[str]) -> tuple[str, ...]:
    folder = resource_limits.infiniband_dir()
    if not host.is_dir(folder):
        return ()
    try:
        return tuple(sorted(host.list_dir(folder)))
    except OSError as exc:
        errors.append(f"{folder}: {getattr(exc, 'strerror', None) or exc}")
        return ()


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
    answer = _StateAnswer()
    if NVIDIACTL in devices:  # no device file, no GPU NVML could show: no child to start
        nodes = tuple(p for p in facts_table.device_nodes() if host.exists(p))
        answer = _gpu_states(ctx, nodes)
    loader_path = tuple(e for e in host.env.get("LD_LIBRARY_PATH", "").split(":") if e)
    libcuda, compat = _libcuda(host, loader_path, errors)
    selinux, label = _selinux(host, errors)
    docker, toolkit, no_cgroups = (None, (), None) if container or wsl else _toolkit(host, errors)
    slurm_job, slurm_gpus = _slurm(host)
    limits_text = _read(host, resource_limits.limits_file(), errors)
    limits = parse_limits(limits_text) if limits_text else {}
    shm = host.disk_usage(resource_limits.shm_path()) if host.exists(resource_limits.shm_path()) else None
    wsl_lib = facts_table.wsl_lib_dir()
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
        gpu_states=answer.gpus,
        nvml_error=answer.error,
        errors=tuple(errors),
        driver_capabilities=host.env.get(facts_table.driver_capabilities_env()),
        mig_monitor_devices=host.env.get(facts_table.mig_monitor_env()),
        loader_path=loader_path,
        libcuda=libcuda,
        compat_folders=compat,
        device_nodes=answer.nodes,
        process_uid=answer.uid,
        process_groups=answer.groups,
        selinux=selinux,
        selinux_label=label,
        docker=docker,
        toolkit=toolkit,
        toolkit_no_cgroups=no_cgroups,
        slurm_job=slurm_job,
        slurm_gpus=slurm_gpus,
        wsl_libraries=tuple(
            name for name in facts_table.wsl_libraries() if host.exists(posixpath.join(wsl_lib, name))
        )
        if wsl == 2
        else None,
        wsl_ld_conf=host.exists(facts_table.wsl_ld_conf()) if wsl == 2 else None,
        windows_version=_windows_version(host) if wsl == 2 else None,
        shm_bytes=shm.total_bytes if shm is not None else None,
        memlock=limits.get(resource_limits.memlock_name()),
        open_files=limits.get(resource_limits.nofile_name()),
        infiniband=_infiniband(host, errors),
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
