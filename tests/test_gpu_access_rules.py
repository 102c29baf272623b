"""ED121-ED129 on facts: the boundaries the fixtures do not pin down, and the folds under them."""

from __future__ import annotations

from envdoctor.engine import evaluate, fold
from envdoctor.model.findings import Finding, Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes.gpu_access import GpuAccessFacts, GpuState
from envdoctor.probes.nvml import Gpu, NvmlFacts, NvmlStatus
from envdoctor.probes.system import SystemFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.probes.torch_smoke import (
    DeviceKind,
    SmokeDevice,
    SmokeError,
    SmokeFacts,
    SmokeStep,
    StepStatus,
)
from envdoctor.rules import RULES
from envdoctor.rules.base import RuleContext
from tests.support import PYTHON

LINUX = PlatformInfo("Linux", "6.8.0-45-generic", "#45", "x86_64")
WSL2 = PlatformInfo("Linux", "5.15.153.1-microsoft-standard-WSL2", "#1", "x86_64")
GPU = Gpu(0, "NVIDIA A100-SXM4-80GB", (8, 0), 80 * 2**30)
NO_DRIVER = NvmlFacts(status=NvmlStatus.LIBRARY_NOT_FOUND, error="NVML Shared Library Not Found")
WORKING = NvmlFacts(status=NvmlStatus.OK, driver_version="550.54.15", cuda_driver_version=12040, gpus=(GPU,))
DEVICES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm")
UNKNOWN = (
    "CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up environment, "
    "e.g. changing env variable CUDA_VISIBLE_DEVICES after program start."
)


def torch(available: bool = False, cuda: str | None = "12.4", **kw: object) -> TorchFacts:
    label = f"cu{cuda.replace('.', '')}" if cuda else "cpu"
    return TorchFacts(
        installed=True,
        version=f"2.5.1+{label}",
        cuda=cuda,
        cuda_available=available,
        device_count=1 if available else 0,
        **kw,
    )  # type: ignore[arg-type]


def findings(*facts: object, platform: PlatformInfo = LINUX) -> dict[str, Finding]:
    probes = tuple(ProbeResult(type(f).__name__, ProbeStatus.OK, 0.0, f) for f in (PYTHON, *facts))
    ctx = RuleContext.build(platform, Interpreter("/env/bin/python", "r"), probes)
    return {f.code: f for f in fold(evaluate(ctx), RULES)}


def commands(finding: Finding) -> list[str]:
    return [c for fix in finding.fixes for c in fix.commands]


# -- containers --------------------------------------------------------------------------------------


def test_a_gpu_less_container_with_cuda_torch_says_how_to_pass_the_gpu() -> None:
    access = GpuAccessFacts(container="kubernetes", container_evidence=("$KUBERNETES_SERVICE_HOST is set",))
    found = findings(access, NO_DRIVER, torch())
    # A warning: a CI container may mean to run the (default) CUDA build on the CPU.
    assert found["ED121"].severity.value == "warning"
    assert "nvidia.com/gpu" in found["ED121"].fixes[0].summary  # the runtime's own way
    assert found["ED104"].folded_under == "ED121"  # not "no NVIDIA GPU / ok" on its own


def test_an_unknown_runtime_gets_every_way_and_a_cpu_container_gets_none() -> None:
    access = GpuAccessFacts(container="lxc")
    fixes = findings(access, NO_DRIVER, torch())["ED121"].fixes
    assert {"docker run --gpus all IMAGE", "podman run --device nvidia.com/gpu=all IMAGE"} <= {
        c for fix in fixes for c in fix.commands
    }
    assert "ED121" not in findings(access, NO_DRIVER, torch(cuda=None))  # CPU torch, nothing asked
    # CUDA base images set NVIDIA_VISIBLE_DEVICES=all: with a CPU build that asks nothing of a GPU.
    asked = GpuAccessFacts(container="docker", nvidia_visible_devices="all")
    assert "ED121" not in findings(asked, NO_DRIVER, torch(cuda=None))
    assert "NVIDIA_VISIBLE_DEVICES='all'" in findings(asked, NO_DRIVER, torch())["ED121"].detail
    void = GpuAccessFacts(container="docker", nvidia_visible_devices="void")
    assert "is unset" not in findings(void, NO_DRIVER, torch())["ED121"].detail


def test_a_host_gpu_on_the_pci_bus_is_an_error_with_the_container_fix_not_a_driver_install() -> None:
    docker = SystemFacts(os="linux", os_release="6.8", os_version="#1", machine="x86_64", container="docker")
    pci = NvmlFacts(status=NvmlStatus.LIBRARY_NOT_FOUND, pci_nvidia_devices=("0000:01:00.0",))
    found = findings(docker, GpuAccessFacts(container="docker"), pci, torch())
    assert "ED121" not in found and found["ED103"].severity.value == "error"
    assert commands(found["ED103"]) == ["docker run --gpus all IMAGE"]
    bare = findings(
        SystemFacts(os="linux", os_release="6.8", os_version="#1", machine="x86_64"), pci, torch()
    )
    assert "docker run --gpus all IMAGE" not in commands(bare["ED103"])  # outside: the driver install


def test_a_container_with_device_files_is_not_told_it_has_none() -> None:
    access = GpuAccessFacts(container="docker", device_files=DEVICES)
    assert "ED121" not in findings(access, NO_DRIVER, torch())


def test_a_mismatch_in_a_container_is_the_image_not_a_reboot() -> None:
    mismatch = NvmlFacts(status=NvmlStatus.VERSION_MISMATCH, error="Driver/library version mismatch")
    access = GpuAccessFacts(container="docker", device_files=DEVICES, proc_driver="NVRM version: 535.183.01")
    found = findings(access, mismatch, torch())
    assert found["ED103"].folded_under == "ED122" and found["ED103"].fixes == ()
    assert "sudo reboot" not in commands(found["ED122"]) and "535.183.01" in found["ED122"].detail
    # A snapshot from before the gpu_access probe: the system line's container is enough.
    docker = SystemFacts(os="linux", os_release="6.8", os_version="#1", machine="x86_64", container="docker")
    older = findings(docker, mismatch, torch())
    assert older["ED103"].folded_under == "ED122" and "system.container = docker" in older["ED122"].evidence
    # Outside a container the mismatch is a pending reboot, as before.
    plain = findings(GpuAccessFacts(device_files=DEVICES), mismatch, torch())
    assert "ED122" not in plain and commands(plain["ED103"]) == ["sudo reboot"]


# -- WSL ---------------------------------------------------------------------------------------------


def test_wsl1_is_told_to_convert_unless_torch_is_a_cpu_build() -> None:
    found = findings(GpuAccessFacts(wsl=1), NO_DRIVER, torch())
    assert commands(found["ED123"]) == ["wsl --set-version <distro> 2"]
    assert "ED123" not in findings(GpuAccessFacts(wsl=1), NO_DRIVER, torch(cuda=None))


def test_the_driver_fix_on_wsl_is_the_windows_driver() -> None:
    wsl_system = SystemFacts(os="linux", os_release=WSL2.release, os_version="#1", machine="x86_64", wsl=True)
    old = NvmlFacts(status=NvmlStatus.OK, driver_version="470.182.03", cuda_driver_version=11040, gpus=(GPU,))
    found = findings(wsl_system, old, torch(True), platform=WSL2)
    fix = found["ED101"].fixes[0]
    assert "on Windows" in fix.summary and fix.link == "https://www.nvidia.com/Download/index.aspx"
    assert not any("ubuntu-drivers" in c for c in commands(found["ED101"]))


def test_a_wsl2_without_linux_driver_files_is_fine() -> None:
    access = GpuAccessFacts(wsl=2, wsl_libcuda=True, device_files=("/dev/dxg",))
    assert not {"ED123", "ED124"} & set(findings(access, WORKING, torch(True)))


def test_a_wsl2_without_the_windows_libcuda_says_to_update_windows_too() -> None:
    access = GpuAccessFacts(wsl=2, linux_driver_in_wsl=("/usr/lib64/libcuda.so.1",))
    found = findings(
        access, NvmlFacts(status=NvmlStatus.DRIVER_NOT_LOADED, error="Driver Not Loaded"), torch()
    )
    assert "update the Windows driver" in found["ED124"].detail
    assert found["ED103"].folded_under == "ED124"


# -- device and module state --------------------------------------------------------------------------


def _smoke_init_error(message: str) -> SmokeFacts:
    step = SmokeStep("init", StepStatus.FAILED, error=SmokeError("RuntimeError", message))
    device = SmokeDevice("cuda:0", DeviceKind.CUDA, name=GPU.name, capability=GPU.capability, steps=(step,))
    return SmokeFacts(ran=True, devices=(device,), completed=True)


def test_unknown_error_from_the_warning_or_the_smoke_test() -> None:
    found = findings(GpuAccessFacts(device_files=DEVICES), WORKING, torch(warnings=(UNKNOWN,)))
    assert commands(found["ED125"]) == ["sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm"]
    assert found["ED203"].folded_under == "ED125"
    smoke = _smoke_init_error(
        "CUDA error: unknown error\nCUDA kernel errors might be asynchronously reported"
    )
    later = findings(WORKING, torch(True, smoke=smoke))  # no gpu_access facts: an older snapshot
    assert "ED125" in later and later["ED302"].folded_under == "ED125"


def test_a_missing_uvm_device_matters_only_when_cuda_failed() -> None:
    gap = GpuAccessFacts(device_files=("/dev/nvidiactl", "/dev/nvidia0"), modules=("nvidia",))
    # CUDA creates /dev/nvidia-uvm on first use (nvidia-modprobe): a working torch means no problem.
    assert "ED126" not in findings(gap, WORKING, torch(True))
    found = findings(gap, WORKING, torch(warnings=(UNKNOWN,)))
    assert "not loaded" in found["ED126"].detail
    assert found["ED125"].folded_under == "ED126" and found["ED203"].folded_under == "ED126"
    assert "ED126" not in findings(GpuAccessFacts(wsl=2, device_files=("/dev/nvidiactl",)), WORKING, torch())


def _state(**kw: object) -> GpuState:
    return GpuState(index=0, uuid="GPU-1", **kw)  # type: ignore[arg-type]


def test_exclusive_mode_needs_torch_to_have_failed() -> None:
    held = GpuAccessFacts(
        device_files=DEVICES, gpu_states=(_state(compute_mode="exclusive_process", processes=(9,)),)
    )
    # torch's own child may be the process holding it: a working torch is no finding.
    assert "ED127" not in findings(held, WORKING, torch(True))
    found = findings(held, WORKING, torch())
    assert "held by PID 9" in found["ED127"].title
    assert "sudo nvidia-smi -i 0 -c DEFAULT" in commands(found["ED127"])
    free = GpuAccessFacts(gpu_states=(_state(compute_mode="exclusive_process", processes=()),))
    assert "ED127" not in findings(free, WORKING, torch())
    prohibited = GpuAccessFacts(gpu_states=(_state(compute_mode="prohibited", processes=()),))
    assert "prohibited" in findings(prohibited, WORKING, torch())["ED127"].title


def test_mig_with_instances_names_one_in_cuda_visible_devices() -> None:
    mig = _state(compute_mode="default", mig_current=True, mig_pending=True, mig_devices=("MIG-aa", "MIG-bb"))
    found = findings(GpuAccessFacts(gpu_states=(mig,)), WORKING, torch(cuda_visible_devices="0"))
    assert commands(found["ED128"]) == ["export CUDA_VISIBLE_DEVICES=MIG-aa"]
    named = findings(GpuAccessFacts(gpu_states=(mig,)), WORKING, torch(cuda_visible_devices="MIG-aa"))
    assert "ED128" not in named
    assert "ED128" not in findings(GpuAccessFacts(gpu_states=(mig,)), WORKING, torch(True))


def test_pending_reset_states_and_a_failed_remap() -> None:
    pending = _state(retired_pages_pending=True, mig_current=False, mig_pending=True)
    found = findings(GpuAccessFacts(gpu_states=(pending,)), WORKING, torch(True))
    assert "retired memory pages are pending" in found["ED129"].detail
    assert "MIG mode changes to on" in found["ED129"].detail
    failed = _state(remapped_rows_pending=False, remapped_rows_failed=True)
    assert (
        "hardware fault"
        in findings(GpuAccessFacts(gpu_states=(failed,)), WORKING, torch(True))["ED129"].detail
    )
    # NotSupported answers are None: nothing pending is claimed.
    unknown = _state(unsupported=("nvmlDeviceGetRemappedRows",))
    assert "ED129" not in findings(GpuAccessFacts(gpu_states=(unknown,)), WORKING, torch(True))
