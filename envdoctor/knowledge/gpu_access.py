"""How a process reaches the GPU: container and WSL markers, the fixes that pass a GPU in, and the
device and kernel-module states NVML and CUDA report (gpu_access.json, sources there)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from envdoctor.knowledge import load_table
from envdoctor.model.findings import Fix

_TABLE = "gpu_access.json"


@dataclass(frozen=True)
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
