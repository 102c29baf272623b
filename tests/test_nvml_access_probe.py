"""The gpu_access probe's view of what a container runtime, a Docker host, a Slurm job, WSL 2's
Windows side and the process limits give torch, on fake machines; and the state child's device-file
and MIG-permission answers against the real filesystem and a stand-in pynvml."""

from __future__ import annotations

import io
import json
import os
import runpy
import sys
import types
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from envdoctor.host.base import CommandResult, DiskInfo
from envdoctor.model.findings import PlatformInfo
from envdoctor.probes import gpu_access
from envdoctor.probes.gpu_access import CompatFolder, DeviceNode, Limit, parse_limits
from tests.host_builder import Machine
from tests.support import context

WSL2 = PlatformInfo("Linux", "5.15.153.1-microsoft-standard-WSL2", "#1 SMP", "x86_64")
CHILD = Path(gpu_access.__file__).resolve().parent.parent / "child" / "gpu_state_probe.py"
CMD = "/mnt/c/Windows/System32/cmd.exe"
LIMITS = """Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            1024                 1048576              files
Max locked memory         8388608              8388608              bytes
Max realtime timeout      unlimited            unlimited            us
"""


def _collect(machine: Machine) -> gpu_access.GpuAccessFacts:
    return gpu_access.collect(context(machine.host))


def test_a_container_runtime_s_variables_loader_folders_and_device_files() -> None:
    machine = Machine(
        env={
            "NVIDIA_DRIVER_CAPABILITIES": "utility",
            "NVIDIA_MIG_MONITOR_DEVICES": "all",
            "LD_LIBRARY_PATH": "/usr/local/cuda-12.9/compat:/opt/app/lib:",
        }
    )
    machine.file("/.dockerenv").file("/dev/nvidiactl").file("/dev/nvidia0").file("/dev/nvidia-uvm")
    machine.file("/usr/local/cuda-12.9/compat/libcuda.so.575.57.08")
    machine.file("/usr/local/cuda-12.9/compat/libcuda.so.1")  # there, and a link to the versioned file
    machine.link(
        "/usr/local/cuda-12.9/compat/libcuda.so.1", "/usr/local/cuda-12.9/compat/libcuda.so.575.57.08"
    )
    # An image's loader configuration: a compat folder (with a comment) and one without libcuda.
    machine.file("/etc/ld.so.conf.d/00-compat.conf", "# cuda-compat\n/usr/local/cuda/compat\n")
    machine.file("/etc/ld.so.conf.d/libc.conf", "/usr/local/lib\n")
    machine.file("/etc/ld.so.conf.d/README", "/not/a/conf/file\n")
    machine.file("/usr/local/cuda/compat/libcuda.so.1")
    machine.child(
        "gpu_state_probe.py",
        {
            "record": "gpu_state",
            "status": "error",
            "error": "NVMLError_NoPermission: Insufficient Permissions",
            "nodes": [
                {
                    "path": "/dev/nvidiactl",
                    "mode": 0o660,
                    "uid": 0,
                    "gid": 44,
                    "group": "video",
                    "major": 195,
                    "minor": 255,
                    "usable": False,
                },
                {"path": "/dev/nvidia-uvm", "error": "PermissionError: Permission denied"},
            ],
            "process": {"uid": 1000, "gid": 1000, "groups": [1000]},
        },
    )
    facts = _collect(machine)
    assert facts.container == "docker"
    assert facts.driver_capabilities == "utility" and facts.mig_monitor_devices == "all"
    assert facts.loader_path == ("/usr/local/cuda-12.9/compat", "/opt/app/lib")  # the empty entry dropped
    assert facts.libcuda == ("/usr/local/cuda-12.9/compat", "/usr/local/cuda/compat")
    assert facts.compat_folders == (
        CompatFolder("/usr/local/cuda-12.9/compat", "LD_LIBRARY_PATH", "libcuda.so.575.57.08"),
        CompatFolder("/usr/local/cuda/compat", "/etc/ld.so.conf.d/00-compat.conf", None),
    )
    # The child got the device files that exist, and said what each is to this user.
    assert machine.host.calls[-1][1:] == (
        "gpu_state_probe.py",
        "/dev/nvidiactl",
        "/dev/nvidia0",
        "/dev/nvidia-uvm",
    )
    assert facts.device_nodes[0] == DeviceNode("/dev/nvidiactl", 0o660, 0, 44, "video", 195, 255, False)
    assert facts.device_nodes[1] == DeviceNode("/dev/nvidia-uvm")  # stat failed: nothing known
    assert facts.process_uid == 1000 and facts.process_groups == (1000,)
    # A container: the Docker host's toolkit is not looked for inside it.
    assert facts.docker is None and facts.toolkit == () and facts.toolkit_no_cgroups is None


def test_a_docker_host_s_toolkit_a_slurm_job_and_the_limits() -> None:
    machine = Machine(env={"SLURM_JOB_ID": "4711", "SLURM_JOB_GPUS": "0,1", "SLURM_GPUS": ""})
    machine.file("/usr/bin/docker").file("/usr/bin/nvidia-ctk")
    machine.file(
        "/etc/nvidia-container-runtime/config.toml",
        '[nvidia-container-cli]\nno-cgroups = true  # rootless\nldconfig = "@/sbin/ldconfig"\n',
    )
    machine.file("/proc/self/limits", LIMITS).file("/dev/shm")
    machine.folder("/sys/class/infiniband").file("/sys/class/infiniband/mlx5_1").file(
        "/sys/class/infiniband/mlx5_0"
    )
    machine.host.disk = DiskInfo(total_bytes=64 * 2**20, free_bytes=60 * 2**20)
    machine.file("/sys/fs/selinux/enforce", "1\n").file(
        "/proc/self/attr/current", "unconfined_u:unconfined_r:unconfined_t:s0\x00"
    )
    facts = _collect(machine)
    assert facts.docker == "/usr/bin/docker" and facts.toolkit == ("/usr/bin/nvidia-ctk",)
    assert facts.toolkit_no_cgroups is True
    assert facts.slurm_job and facts.slurm_gpus == ("SLURM_JOB_GPUS=0,1",)  # an empty one is not set
    assert facts.open_files == Limit(1024, 1048576) and facts.memlock == Limit(8388608, 8388608)
    assert facts.shm_bytes == 64 * 2**20
    assert facts.infiniband == ("mlx5_0", "mlx5_1")
    assert facts.selinux == "enforcing" and facts.selinux_label == "unconfined_u:unconfined_r:unconfined_t:s0"


def test_wsl2_s_windows_side_through_interop() -> None:
    machine = Machine(WSL2).file("/dev/dxg")
    machine.files("/usr/lib/wsl/lib", "libcuda.so", "libcuda.so.1", "libnvidia-ml.so.1")
    machine.file(CMD).command((CMD, "/c", "ver"), "\r\nMicrosoft Windows [Version 10.0.20231.1005]\r\n")
    facts = _collect(machine)
    assert facts.wsl == 2 and facts.wsl_libraries == ("libcuda.so", "libcuda.so.1", "libnvidia-ml.so.1")
    assert facts.wsl_ld_conf is False  # /etc/ld.so.conf.d/ld.wsl.conf is not there
    assert facts.windows_version == "10.0.20231.1005" and facts.windows_build == 20231
    assert facts.libcuda == ("/usr/lib/wsl/lib",)
    # cmd.exe failing (interop off) is no version, not an error; outside WSL it is not even asked.
    machine.host.commands[(CMD, "/c", "ver")] = CommandResult(returncode=1, stderr="exec format error")
    assert _collect(machine).windows_version is None
    assert gpu_access.GpuAccessFacts(windows_version="10.0").windows_build is None


def test_limits_parse_numbers_and_unlimited_and_skip_the_rest() -> None:
    found = parse_limits(LIMITS + "Max weird                 lots                 12                   x\n")
    assert found["Max open files"] == Limit(1024, 1048576)
    assert found["Max cpu time"] == Limit(None, None)
    assert "Max weird" not in found and "Limit" not in found


# -- the child, against the real filesystem (stat, access) and a stand-in pynvml -------------------


class _NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__({4: "Insufficient Permissions", 6: "Not Found"}.get(value, f"NVML error {value}"))
        self.value = value


def _run_child(
    monkeypatch: pytest.MonkeyPatch, pynvml: types.ModuleType | None, *nodes: str
) -> dict[str, Any]:
    if pynvml is None:
        monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails: pynvml missing
    else:
        monkeypatch.setitem(sys.modules, "pynvml", pynvml)
    monkeypatch.setattr(sys, "argv", [str(CHILD), *nodes])
    out = io.StringIO()
    with redirect_stdout(out), pytest.raises(SystemExit):
        runpy.run_path(str(CHILD), run_name="__main__")
    record: dict[str, Any] = json.loads(out.getvalue().splitlines()[-1])
    return record


def test_the_child_describes_device_files_even_without_pynvml(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    shut = tmp_path / "nvidia0"
    shut.write_text("")
    shut.chmod(0o600)
    record = _run_child(monkeypatch, None, str(shut), str(tmp_path / "nvidia-uvm"))
    assert record["status"] == "pynvml_missing"
    first, missing = record["nodes"]
    assert first["path"] == str(shut) and first["mode"] == 0o600 and first["uid"] == os.getuid()
    assert first["usable"] is True  # its owner may read and write it
    assert missing == {
        "path": str(tmp_path / "nvidia-uvm"),
        "error": "FileNotFoundError: No such file or directory",
    }
    assert record["process"]["uid"] == os.getuid() and os.getgid() in record["process"]["groups"]
    node = gpu_access.device_node_from_record(first)
    assert node.mode == 0o600 and node.usable is True


def test_the_child_records_refused_mig_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("pynvml")
    module.NVMLError = _NVMLError  # type: ignore[attr-defined]

    def refused(*_: object) -> None:
        raise _NVMLError(4)

    def slot(handle: str, index: int) -> str:
        if index == 1:
            raise _NVMLError(6)  # an empty slot: not an error
        if index == 2:
            raise _NVMLError(4)
        return f"{handle}/{index}"

    calls: dict[str, Any] = {
        "nvmlInit": lambda: None,
        "nvmlShutdown": lambda: None,
        "nvmlDeviceGetCount": lambda: 1,
        "nvmlDeviceGetHandleByIndex": lambda i: f"gpu{i}",
        "nvmlDeviceGetUUID": lambda h: "GPU-abc" if h == "gpu0" else "MIG-" + h,
        "nvmlDeviceGetComputeMode": lambda h: 0,
        "nvmlDeviceGetComputeRunningProcesses": lambda h: [],
        "nvmlDeviceGetMigMode": lambda h: (1, 1),
        "nvmlDeviceGetMaxMigDeviceCount": lambda h: 3,
        "nvmlDeviceGetMigDeviceHandleByIndex": slot,
        "nvmlDeviceGetMemoryInfo": refused,
        "nvmlDeviceGetRetiredPagesPendingStatus": lambda h: 0,
        "nvmlDeviceGetRemappedRows": lambda h: (0, 0, 0, 0),
    }
    for name, function in calls.items():
        setattr(module, name, function)
    (gpu,) = _run_child(monkeypatch, module)["gpus"]
    assert gpu["mig_devices"] == ["MIG-gpu0/0"]
    assert gpu["errors"] == [
        "nvmlDeviceGetMemoryInfo: Insufficient Permissions",
        "nvmlDeviceGetMigDeviceHandleByIndex: Insufficient Permissions",
    ]
    state = gpu_access.gpu_state_from_record(gpu)
    assert state.mig_current and "Insufficient Permissions" in state.errors[0]
