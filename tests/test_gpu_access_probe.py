"""The gpu_access probe and its NVML child: containers, WSL, device files, kernel modules and each
GPU's state, including the bad and partial answers (unreadable /proc, no /proc/driver, NotSupported,
a hung child) that must become facts, never tracebacks."""

from __future__ import annotations

import io
import json
import re
import runpy
import sys
import types
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from envdoctor.host.base import ChildOutcome
from envdoctor.host.fake import FakeHost
from envdoctor.knowledge.gpu_access import nvml_functions
from envdoctor.model.findings import PlatformInfo
from envdoctor.probes import gpu_access, system
from envdoctor.probes.base import NotApplicable
from tests.host_builder import Machine
from tests.support import context, records

WSL2 = PlatformInfo("Linux", "5.15.153.1-microsoft-standard-WSL2", "#1 SMP", "x86_64")
WSL1 = PlatformInfo("Linux", "4.4.0-19041-Microsoft", "#3996-Microsoft", "x86_64")
CHILD = Path(gpu_access.__file__).resolve().parent.parent / "child" / "gpu_state_probe.py"


def _collect(machine: Machine) -> gpu_access.GpuAccessFacts:
    return gpu_access.collect(context(machine.host))


def test_not_linux_is_not_applicable() -> None:
    host = FakeHost(platform_info=PlatformInfo("Windows", "11", "10.0.22631", "AMD64"))
    with pytest.raises(NotApplicable):
        gpu_access.collect(context(host))


def test_a_bare_machine_has_nothing_to_report_and_starts_no_child() -> None:
    facts = _collect(Machine())  # strict fake: no child scripted, so starting one would fail
    assert facts == gpu_access.GpuAccessFacts(libcuda=())  # looked for libcuda, found none
    assert gpu_access.describe(facts) == "device files: none"


@pytest.mark.parametrize(
    ("build", "kind", "evidence"),
    [
        (lambda m: m.file("/.dockerenv"), "docker", "/.dockerenv exists"),
        (
            lambda m: m.file("/run/.containerenv", 'engine="podman-4.9.3"\n'),
            "podman",
            "/run/.containerenv exists",
        ),
        (lambda m: m.host.environ.update(KUBERNETES_SERVICE_HOST="10.96.0.1"), "kubernetes", "is set"),
        (
            lambda m: m.file("/proc/1/cgroup", "12:pids:/kubepods/besteffort/pod1/abc\n"),
            "kubernetes",
            "kubepods",
        ),
        (
            lambda m: m.file("/proc/1/cgroup", "0::/\n").file(
                "/proc/self/mountinfo",
                "1 0 0:1 / / rw - overlay overlay rw,upperdir=/var/lib/docker/overlay2/x/diff\n"
                "2 1 8:1 /var/lib/docker/containers/abc/hostname /etc/hostname rw - ext4 /dev/sda1 rw\n",
            ),
            "docker",
            "/docker/containers/",
        ),
    ],
)
def test_container_markers(build: Any, kind: str, evidence: str) -> None:
    machine = Machine().file("/proc/version", "Linux version 6.8.0-45-generic\n")
    machine.absent("/etc/os-release", "/usr/lib/os-release")
    build(machine)
    facts = _collect(machine)
    assert facts.container == kind
    assert evidence in facts.container_evidence[0]
    # The system line names the same runtime: one detector for both.
    assert system.collect(context(machine.host)).container == kind


def test_no_container_on_a_plain_host() -> None:
    machine = (
        Machine().file("/proc/1/cgroup", "0::/init.scope\n").file("/proc/self/mountinfo", "1 0 8:1 / / rw\n")
    )
    assert _collect(machine).container is None


def test_unreadable_proc_files_are_facts_not_errors() -> None:
    machine = Machine().file("/dev/nvidiactl").file("/dev/nvidia0")
    machine.host.unreadable.update({"/proc/1/cgroup", "/proc/modules"})
    machine.host.children["gpu_state_probe.py"] = records({"record": "gpu_state", "status": "ok", "gpus": []})
    facts = _collect(machine)
    assert facts.modules is None  # unknown, not "none loaded"
    assert any(e.startswith("/proc/1/cgroup") and "Permission denied" in e for e in facts.errors)
    assert any(e.startswith("/proc/modules") for e in facts.errors)
    # A container without /proc/driver (the host's module is not visible): simply no version.
    assert facts.proc_driver is None


def test_device_files_modules_and_the_uvm_gap() -> None:
    machine = Machine().file("/dev/nvidiactl").file("/dev/nvidia0")
    machine.file(
        "/proc/modules",
        "nvidia_drm 77824 2 - Live 0x0\nnvidia_modeset 1314816 1 nvidia_drm, Live 0x0\n"
        "nvidia 56741888 1 nvidia_modeset, Live 0x0\nsnd 118784 0 - Live 0x0\n",
    )
    machine.file(
        "/proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.144.03  Mon Dec 30 17:44:08 UTC 2024\n"
        "GCC version: 12\n",
    )
    machine.host.children["gpu_state_probe.py"] = records({"record": "gpu_state", "status": "ok", "gpus": []})
    facts = _collect(machine)
    assert facts.device_files == ("/dev/nvidiactl", "/dev/nvidia0")
    assert facts.modules == ("nvidia", "nvidia_drm", "nvidia_modeset")
    assert facts.uvm_missing and facts.has_nvidia_devices
    assert facts.proc_driver is not None and "550.144.03" in facts.proc_driver


def test_wsl_versions_and_a_linux_driver_inside_wsl2() -> None:
    one = Machine(WSL1)
    assert _collect(one).wsl == 1
    two = Machine(WSL2).file("/dev/dxg").file("/usr/lib/wsl/lib/libcuda.so.1")
    two.file("/usr/lib/x86_64-linux-gnu/libcuda.so.1")  # a Linux driver's own file
    two.link("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "/usr/lib/wsl/lib/libnvidia-ml.so.1")
    two.file("/usr/lib/wsl/lib/libnvidia-ml.so.1")
    facts = _collect(two)
    assert facts.wsl == 2 and facts.wsl_libcuda
    assert facts.device_files == ("/dev/dxg",) and not facts.has_nvidia_devices
    # A link into /usr/lib/wsl/lib is how WSL's own setup looks: only the real file counts.
    assert facts.linux_driver_in_wsl == ("/usr/lib/x86_64-linux-gnu/libcuda.so.1",)
    assert gpu_access.describe(facts) == "WSL 2; device files: dxg"


def test_gpu_states_from_the_child_with_unsupported_queries() -> None:
    machine = Machine().file("/dev/nvidiactl").file("/dev/nvidia0").file("/dev/nvidia-uvm")
    machine.host.children["gpu_state_probe.py"] = records(
        {
            "record": "gpu_state",
            "status": "ok",
            "gpus": [
                {
                    "index": 0,
                    "uuid": "GPU-1",
                    "compute_mode": 3,
                    "processes": [4121],
                    "unsupported": ["nvmlDeviceGetMigMode", "nvmlDeviceGetRemappedRows"],
                    "unavailable": [],
                    "errors": [],
                    "retired_pages_pending": False,
                },
                {"index": 1, "compute_mode": 0, "mig_current": True, "mig_pending": False, "mig_devices": []},
            ],
        }
    )
    facts = _collect(machine)
    first, second = facts.gpu_states
    assert first.compute_mode == "exclusive_process" and first.processes == (4121,)
    assert first.mig_current is None and first.remapped_rows_pending is None
    assert first.unsupported == ("nvmlDeviceGetMigMode", "nvmlDeviceGetRemappedRows")
    assert second.mig_current is True and second.mig_pending is False and second.mig_devices == ()
    assert "GPU 0 exclusive_process" in gpu_access.describe(facts) and "MIG on" in gpu_access.describe(facts)


@pytest.mark.parametrize(
    ("outcome", "said"),
    [
        (ChildOutcome(records=(), returncode=None, timed_out=True, seconds=10.0), "hung"),
        (ChildOutcome(records=(), returncode=None, signal=11), "signal"),
        (
            records({"record": "gpu_state", "status": "error", "error": "Unknown Error", "gpus": []}),
            "Unknown",
        ),
    ],
)
def test_a_hung_crashed_or_failing_state_query_is_a_fact(outcome: ChildOutcome, said: str) -> None:
    machine = Machine().file("/dev/nvidiactl")
    machine.host.children["gpu_state_probe.py"] = outcome
    facts = _collect(machine)
    assert facts.gpu_states == ()
    assert facts.nvml_error is not None and said.lower() in facts.nvml_error.lower()


# -- the child itself, against a stand-in pynvml (NVML is the outside world) ---------------------


class _NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


def _fake_pynvml(**overrides: Any) -> types.ModuleType:
    module = types.ModuleType("pynvml")
    module.NVMLError = _NVMLError  # type: ignore[attr-defined]

    def not_supported(*_: object) -> None:
        raise _NVMLError(3)

    calls: dict[str, Any] = {
        "nvmlInit": lambda: None,
        "nvmlShutdown": lambda: None,
        "nvmlDeviceGetCount": lambda: 1,
        "nvmlDeviceGetHandleByIndex": lambda i: f"gpu{i}",
        "nvmlDeviceGetUUID": lambda h: b"GPU-abc" if h == "gpu0" else "MIG-" + h,
        "nvmlDeviceGetComputeMode": lambda h: 3,
        "nvmlDeviceGetComputeRunningProcesses": lambda h: [types.SimpleNamespace(pid=77)],
        "nvmlDeviceGetMigMode": not_supported,
        "nvmlDeviceGetRetiredPagesPendingStatus": lambda h: 1,
        # nvmlDeviceGetRemappedRows left out: an old pynvml without it
    }
    calls.update(overrides)
    for name, function in calls.items():
        setattr(module, name, function)
    return module


def _run_child(pynvml: types.ModuleType, monkeypatch: pytest.MonkeyPatch, *nodes: str) -> dict[str, Any]:
    monkeypatch.setitem(sys.modules, "pynvml", pynvml)
    monkeypatch.setattr(sys, "argv", [str(CHILD), *nodes])  # the device files, as the probe passes them
    out = io.StringIO()
    with redirect_stdout(out), pytest.raises(SystemExit) as ended:
        runpy.run_path(str(CHILD), run_name="__main__")
    assert ended.value.code == 0
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    record: dict[str, Any] = json.loads(lines[0])
    return record


def test_the_child_records_unsupported_and_missing_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    record = _run_child(_fake_pynvml(), monkeypatch)
    assert record["record"] == "gpu_state" and record["status"] == "ok"
    (gpu,) = record["gpus"]
    assert gpu["uuid"] == "GPU-abc" and gpu["compute_mode"] == 3 and gpu["processes"] == [77]
    assert gpu["unsupported"] == ["nvmlDeviceGetMigMode"]
    assert gpu["unavailable"] == ["nvmlDeviceGetRemappedRows"]
    assert gpu["retired_pages_pending"] is True and "mig_current" not in gpu
    state = gpu_access.gpu_state_from_record(gpu)
    assert state.compute_mode == "exclusive_process" and state.mig_current is None


def test_the_child_lists_mig_devices_and_survives_odd_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    def mig_slot(handle: str, slot: int) -> str:
        if slot == 1:
            raise _NVMLError(6)  # NOT_FOUND: an empty slot
        return f"{handle}/{slot}"

    def broken(*_: object) -> None:
        raise RuntimeError("struct version mismatch")

    pynvml = _fake_pynvml(
        nvmlDeviceGetMigMode=lambda h: (1, 0),
        nvmlDeviceGetMaxMigDeviceCount=lambda h: 3,
        nvmlDeviceGetMigDeviceHandleByIndex=mig_slot,
        nvmlDeviceGetComputeRunningProcesses=broken,
        nvmlDeviceGetRemappedRows=lambda h: (0, 1, 1, 0),
    )
    (gpu,) = _run_child(pynvml, monkeypatch)["gpus"]
    assert gpu["mig_current"] is True and gpu["mig_pending"] is False
    assert gpu["mig_devices"] == ["MIG-gpu0/0", "MIG-gpu0/2"]
    assert gpu["remapped_rows_pending"] is True and gpu["remapped_rows_failed"] is False
    assert "processes" not in gpu and "struct version mismatch" in gpu["errors"][0]


def test_the_child_without_a_driver_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_driver() -> None:
        raise _NVMLError(9)

    record = _run_child(_fake_pynvml(nvmlInit=no_driver), monkeypatch)
    assert record["status"] == "error" and "NVML error 9" in record["error"]


def test_every_state_query_the_child_makes_is_documented_in_the_knowledge_table() -> None:
    """gpu_access.json says what each NVML state query reports and where NVIDIA documents it."""
    source = CHILD.read_text(encoding="utf-8")
    asked = set(re.findall(r'ask\("(nvmlDevice\w+)"', source))
    plumbing = {"nvmlDeviceGetHandleByIndex", "nvmlDeviceGetUUID", "nvmlDeviceGetMaxMigDeviceCount"}
    assert asked - plumbing == set(nvml_functions()) - {"nvmlDeviceGetMigDeviceHandleByIndex"}
    assert "nvmlDeviceGetMigDeviceHandleByIndex" in source
