"""How a process reaches the GPU: container and WSL markers, the fixes that pass a GPU in, and the
device and kernel-module states NVML and CUDA report (gpu_access.json, sources there)."""

from __future__ import annotations

from functools import cache
from typing import Any

from envdoctor.knowledge import load_table
from envdoctor.knowledge.provenance import references
from envdoctor.model.findings import Fix
from envdoctor.util.records import record

_TABLE = "gpu_access.json"


@record
class Marker:
    """A file, variable or text that, when present, names the container runtime `kind`."""

    marker: str
    kind: str


def _table() -> dict[str, Any]:
    return load_table(_TABLE)


def _containers() -> dict[str, Any]:
    found: dict[str, Any] = _table()["containers"]
    return found


def _wsl() -> dict[str, Any]:
    found: dict[str, Any] = _table()["wsl"]
    return found


def _device_state() -> dict[str, Any]:
    found: dict[str, Any] = _table()["device_state"]
    return found


@cache
def container_files() -> tuple[Marker, ...]:
    return tuple(Marker(row["path"], row["kind"]) for row in _containers()["files"])


@cache
def container_env() -> tuple[Marker, ...]:
    return tuple(Marker(row["name"], row["kind"]) for row in _containers()["env"])


@cache
def cgroup_markers() -> tuple[Marker, ...]:
    return tuple(Marker(row["marker"], row["kind"]) for row in _containers()["cgroup_markers"])


@cache
def mountinfo_markers() -> tuple[Marker, ...]:
    return tuple(Marker(row["marker"], row["kind"]) for row in _containers()["mountinfo_markers"])


def _fix(row: dict[str, Any]) -> Fix:
    return Fix(summary=row["summary"], commands=tuple(row.get("commands", ())), link=row.get("link"))


def gpu_access_fixes(kind: str | None) -> tuple[Fix, ...]:
    """How to give a container of `kind` the host's GPUs; every runtime's way when the kind is not
    one of them (a bare containerd or LXC: the user knows which front end started it)."""
    rows = _containers()["gpu_access"]
    mine = [row for row in rows if row["kind"] == kind]
    return tuple(_fix(row) for row in (mine or rows))


def visible_devices_env() -> str:
    return str(_containers()["visible_devices_env"])


def visible_devices_none(value: str | None) -> bool:
    """Whether NVIDIA_VISIBLE_DEVICES asks for no GPU at all (unset counts: nothing asked)."""
    return value is None or value.strip().lower() in _containers()["visible_devices_none"]


def driver_in_image_fix() -> Fix:
    return _fix(_containers()["driver_in_image"])


def wsl_version(kernel_release: str, proc_version: str) -> int | None:
    """2 for a WSL 2 kernel ("5.15.133.1-microsoft-standard-WSL2"), 1 for WSL 1's
    ("4.4.0-19041-Microsoft"), None when this is no WSL kernel."""
    text = f"{kernel_release} {proc_version}".lower()
    if any(marker in text for marker in _wsl()["wsl2_release_markers"]):
        return 2
    if _wsl()["wsl1_release_marker"] in text:
        return 1
    return None


def wsl_lib_dir() -> str:
    return str(_wsl()["lib_dir"])


def linux_driver_dirs() -> tuple[str, ...]:
    return tuple(_wsl()["linux_driver_dirs"])


def linux_driver_libraries() -> tuple[str, ...]:
    return tuple(_wsl()["linux_driver_libraries"])


def wsl1_fix() -> Fix:
    return _fix(_wsl()["wsl1_fix"])


def linux_driver_in_wsl_fix() -> Fix:
    return _fix(_wsl()["linux_driver_fix"])


def windows_driver_fix(minimum: str | None = None) -> Fix:
    row = _wsl()["windows_driver"]
    need = f" (at least {minimum})" if minimum else ""
    summary = str(row["summary"]).replace("NVIDIA driver on Windows", f"NVIDIA driver{need} on Windows")
    return Fix(summary=summary, link=row["link"])


def unknown_error_patterns() -> tuple[str, ...]:
    return tuple(_device_state()["unknown_error_patterns"])


def unknown_error_fix() -> Fix:
    return _fix(_device_state()["unknown_error_fix"])


def uvm_fix() -> Fix:
    return _fix(_device_state()["uvm_fix"])


def compute_mode_name(code: int) -> str:
    """NVML's compute mode number as a word: 3 -> "exclusive_process"."""
    return str(_device_state()["compute_modes"].get(str(code), f"mode {code}"))


def nvml_functions() -> tuple[str, ...]:
    """The NVML device-state queries envdoctor makes, each documented in the table."""
    return tuple(row["name"] for row in _device_state()["nvml_functions"])


# -- what a container is given: capabilities, the loader's folders, the toolkit on the host ----------


def driver_capabilities_env() -> str:
    return str(_containers()["driver_capabilities"]["env"])


def capabilities_include_compute(value: str | None) -> bool | None:
    """Whether NVIDIA_DRIVER_CAPABILITIES asks for the CUDA driver library; None when unset (the
    runtime's default then applies, which is "utility,compute" for CUDA images)."""
    if value is None:
        return None
    wanted = {part.strip().lower() for part in value.split(",")}
    return bool(wanted & set(_containers()["driver_capabilities"]["compute"]))


def driver_capabilities_fix() -> Fix:
    return _fix(_containers()["driver_capabilities"]["fix"])


def loader_dirs() -> tuple[str, ...]:
    """The folders the dynamic loader (or the NVIDIA runtime's mounts) put a driver's libcuda in."""
    return tuple(_containers()["loader_dirs"])


def ld_conf_dir() -> str:
    return str(_containers()["ld_conf_dir"])


def mig_monitor_env() -> str:
    return str(_containers()["mig_monitor"]["env"])


def mig_monitor_fix() -> Fix:
    return _fix(_containers()["mig_monitor"]["fix"])


def docker_paths() -> tuple[str, ...]:
    return tuple(_containers()["toolkit"]["docker"])


def toolkit_binaries() -> tuple[str, ...]:
    return tuple(_containers()["toolkit"]["binaries"])


def toolkit_config() -> str:
    return str(_containers()["toolkit"]["config"])


def toolkit_install_fix(distro_like: tuple[str, ...]) -> Fix:
    """The toolkit's install for a Debian- or RHEL-like host; NVIDIA's guide for the rest."""
    toolkit = _containers()["toolkit"]
    families = {"debian": ("debian", "ubuntu"), "rhel": ("rhel", "fedora", "centos")}
    for row in toolkit["install"]:
        if set(distro_like) & set(families.get(row["family"], ())):
            commands = tuple(row["commands"])
            return Fix(summary=toolkit["install_summary"], commands=commands, link=toolkit["link"])
    return Fix(summary=toolkit["install_summary"], link=toolkit["link"])


def cgroup_lost_fixes() -> tuple[Fix, ...]:
    rows = _containers()["cgroup_lost"]
    return (_fix(rows["restart"]), _fix(rows["workaround"]))


def no_cgroups_fix() -> Fix:
    return _fix(_containers()["cgroup_lost"]["no_cgroups"])


def selinux_enforce_file() -> str:
    return str(_containers()["selinux"]["enforce"])


def selinux_label_file() -> str:
    return str(_containers()["selinux"]["label"])


def selinux_container_label(label: str | None) -> bool:
    """Whether an SELinux process label is a confined container's ("...:container_t:s0:c1,c2")."""
    if not label:
        return False
    parts = label.split(":")
    return len(parts) >= 3 and parts[2] in _containers()["selinux"]["container_types"]


def selinux_fixes() -> tuple[Fix, ...]:
    return tuple(_fix(row) for row in _containers()["selinux"]["fixes"])


def consumer_gpu(name: str | None) -> bool:
    """A GeForce or TITAN: CUDA forward compatibility is for data-center GPUs only."""
    text = (name or "").lower()
    return any(marker in text for marker in _containers()["forward_compat"]["consumer_markers"])


def compat_folder(path: str) -> bool:
    """Whether a library's folder is a cuda-compat one (/usr/local/cuda-12.9/compat)."""
    return path.rstrip("/").rsplit("/", 1)[-1] == str(_containers()["forward_compat"]["compat_folder"])


def host_driver_fix(minimum: str | None = None) -> Fix:
    row = _containers()["forward_compat"]["host_driver_fix"]
    need = f" (to {minimum} or newer)" if minimum else ""
    summary = str(row["summary"]).replace("on the host", f"on the host{need}", 1)
    return Fix(summary=summary, link=row["link"])


def compat_fix() -> Fix:
    return _fix(_containers()["forward_compat"]["compat_fix"])


# -- WSL 2: the Windows driver's libraries, the kernel, the Windows build ------------------------------


def wsl_libraries() -> tuple[str, ...]:
    return tuple(_wsl()["libraries"])


def wsl_ld_conf() -> str:
    return str(_wsl()["ld_conf"])


def wsl_libcuda_path_summary() -> str:
    return str(_wsl()["libcuda_path"]["summary"])


def wsl_ld_conf_fix() -> Fix:
    row = _wsl()["libcuda_path"]
    return Fix(summary=row["ldconfig_summary"], commands=tuple(row["ldconfig_commands"]), link=row["link"])


def wsl_cmd() -> str:
    return str(_wsl()["cmd"])


def wsl_min_kernel() -> str:
    return str(_wsl()["min_kernel"])


def wsl_kernel_fix() -> Fix:
    return _fix(_wsl()["kernel_fix"])


def wsl_broken_builds() -> tuple[int, ...]:
    return tuple(int(row["build"]) for row in _wsl()["broken_builds"])


def wsl_broken_build_fix() -> Fix:
    return _fix(_wsl()["broken_build_fix"])


def dxgdmal_library() -> str:
    return str(_wsl()["dxgdmal"]["library"])


def dxgdmal_from_driver() -> int:
    return int(_wsl()["dxgdmal"]["from_driver"])


def dxgdmal_fix() -> Fix:
    return _fix(_wsl()["dxgdmal"]["fix"])


# -- device files, MIG, Slurm ---------------------------------------------------------------------------


def device_nodes() -> tuple[str, ...]:
    return tuple(_device_state()["device_nodes"])


def permission_summary(in_container: bool) -> str:
    row = _device_state()["permission"]
    return str(row["container_summary" if in_container else "host_summary"])


def _mig() -> dict[str, Any]:
    found: dict[str, Any] = _table()["mig"]
    return found


def uuid_parse_range() -> tuple[str, str]:
    """The torch releases whose device_count() dropped UUIDs in CUDA_VISIBLE_DEVICES: [from, fixed)."""
    row = _mig()["uuid_parse"]
    return str(row["torch_from"]), str(row["torch_fixed"])


def mig_guide() -> str:
    return references(_mig()["one_per_process_source"])[0]


def _slurm() -> dict[str, Any]:
    found: dict[str, Any] = _table()["slurm"]
    return found


def slurm_job_env() -> str:
    return str(_slurm()["job_env"])


def slurm_gpu_env() -> tuple[str, ...]:
    return tuple(_slurm()["gpu_env"])


def slurm_no_devices() -> str:
    return str(_slurm()["no_devices"])


def slurm_fix() -> Fix:
    return _fix(_slurm()["fix"])
