"""ED170-ED186 on facts: where each rule's line falls (the fixtures and the corpus show one side of
it), how two rules about one error split it between them, and the fixes they write."""

from __future__ import annotations

from envdoctor.engine import evaluate, fold
from envdoctor.model.findings import Finding, Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes.gpu_access import CompatFolder, DeviceNode, GpuAccessFacts, GpuState, Limit
from envdoctor.probes.nvml import Gpu, NvmlFacts, NvmlStatus
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules import RULES
from envdoctor.rules.base import RuleContext
from envdoctor.rules.evidence import gather
from envdoctor.rules.nvml.device_state import dac_allows
from envdoctor.rules.nvml.mig import mig_entries
from envdoctor.rules.nvml.resources import human_bytes
from envdoctor.rules.nvml.wsl import kernel_version
from tests.support import PYTHON

LINUX = PlatformInfo("Linux", "6.8.0-45-generic", "#45", "x86_64")
WSL2 = PlatformInfo("Linux", "5.15.153.1-microsoft-standard-WSL2", "#1", "x86_64")
GEFORCE = Gpu(0, "NVIDIA GeForce RTX 3090", (8, 6), 24 * 2**30)
A100 = Gpu(0, "NVIDIA A100-SXM4-80GB", (8, 0), 80 * 2**30)
DEVICES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm")
DOCKER = {"container": "docker", "container_evidence": ("/.dockerenv exists",)}
FWD = (
    "CUDA initialization: Unexpected error from cudaGetDeviceCount(). Error 804: forward compatibility "
    "was attempted on non supported HW"
)


def nvml(driver: str = "535.104.05", cuda: int = 12020, gpu: Gpu = GEFORCE, **kw: object) -> NvmlFacts:
    return NvmlFacts(status=NvmlStatus.OK, driver_version=driver, cuda_driver_version=cuda, gpus=(gpu,), **kw)  # type: ignore[arg-type]


def torch(
    cuda: str | None = "12.1", available: bool = False, version: str = "2.3.1", **kw: object
) -> TorchFacts:
    label = f"cu{cuda.replace('.', '')}" if cuda else "cpu"
    return TorchFacts(
        installed=True,
        version=f"{version}+{label}",
        cuda=cuda,
        cuda_available=available,
        device_count=1 if available else 0,
        **kw,
    )  # type: ignore[arg-type]


def findings(*facts: object, platform: PlatformInfo = LINUX, pasted: str | None = None) -> dict[str, Finding]:
    probes = tuple(ProbeResult(type(f).__name__, ProbeStatus.OK, 0.0, f) for f in (PYTHON, *facts))
    ctx = RuleContext.build(
        platform, Interpreter("/env/bin/python", "r"), probes, inputs=(gather(probes, pasted),)
    )
    return {f.code: f for f in fold(evaluate(ctx), RULES)}


def commands(finding: Finding) -> list[str]:
    return [c for fix in finding.fixes for c in fix.commands]


# -- forward compatibility and cuda-compat: one error, two causes ----------------------------------


def test_error_804_is_the_host_driver_when_the_driver_is_older_than_torch_s_cuda() -> None:
    access = GpuAccessFacts(
        **DOCKER, compat_folders=(CompatFolder("/usr/local/cuda/compat", "/etc/ld.so.conf.d/c.conf"),)
    )
    found = findings(access, nvml("525.147.05", 12000), torch("12.1", warnings=(FWD,)))
    assert "ED170" in found and "ED171" not in found
    assert "on the host (to 530.30.02 or newer)" in found["ED170"].fixes[0].summary  # CUDA 12.1's minimum
    # The same error with a driver that runs torch's CUDA itself: the compat libcuda is the fault.
    newer = findings(access, nvml("535.104.05", 12020), torch("12.1", warnings=(FWD,)))
    assert "ED171" in newer and "ED170" not in newer
    # Without the error, the setup that gives it: a GeForce, compat on the path, an older driver.
    setup = findings(access, nvml("525.147.05", 12000), torch("12.1"))
    assert "ED170" in setup
    # On a data-center GPU the compat libraries are what forward compatibility is for: no finding.
    datacenter = findings(access, nvml("525.147.05", 12000, A100), torch("12.1", available=True))
    assert "ED170" not in datacenter and "ED171" not in datacenter


def test_a_compat_folder_on_ld_library_path_is_taken_off_it_and_nothing_else_is() -> None:
    entries = ("/opt/app/lib", "/usr/local/cuda-12.9/compat", "/usr/lib/x86_64-linux-gnu")
    access = GpuAccessFacts(
        loader_path=entries,
        compat_folders=(
            CompatFolder("/usr/local/cuda-12.9/compat", "LD_LIBRARY_PATH", "libcuda.so.575.57.08"),
        ),
    )
    pasted = "failed to initialize CUDA: system has unsupported display driver / cuda driver combination"
    found = findings(access, nvml(), pasted=pasted)["ED171"]
    edit = " ".join(commands(found))
    assert "/usr/local/cuda-12.9/compat" in edit and "libcuda.so.575.57.08" in found.detail
    # Only that entry is filtered out of the live value; the others stay.
    assert "grep -vxF -e /usr/local/cuda-12.9/compat |" in edit and "/opt/app/lib" not in edit
    # A compat folder that does no harm (CUDA works, no error) is left alone.
    assert "ED171" not in findings(access, nvml(), torch("12.1", available=True))


# -- what the container was given --------------------------------------------------------------------


def test_no_libcuda_in_a_container_with_the_device_files_is_the_compute_capability() -> None:
    access = GpuAccessFacts(**DOCKER, device_files=DEVICES, libcuda=(), driver_capabilities="utility")
    found = findings(access, nvml(), torch())["ED172"]
    assert "does not ask for 'compute'" in found.detail
    assert commands(found) == ["docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility IMAGE"]
    # An older snapshot never looked for libcuda (None): no finding from an absent fact.
    assert "ED172" not in findings(GpuAccessFacts(**DOCKER, device_files=DEVICES), nvml(), torch())
    assert "ED172" not in findings(
        GpuAccessFacts(**DOCKER, device_files=DEVICES, libcuda=()), nvml(), torch(available=True)
    )


def test_the_toolkit_is_missed_on_a_docker_host_only() -> None:
    host = GpuAccessFacts(docker="/usr/bin/docker")
    assert findings(host, nvml())["ED173"].severity.value == "info"
    assert "ED173" not in findings(
        GpuAccessFacts(docker="/usr/bin/docker", toolkit=("/usr/bin/nvidia-ctk",)), nvml()
    )
    assert "ED173" not in findings(GpuAccessFacts(docker="/usr/bin/docker", wsl=2), nvml(), platform=WSL2)
    # No GPU here, but Docker's own error pasted: still the toolkit.
    pasted = (
        'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].'
    )
    no_gpu = NvmlFacts(status=NvmlStatus.LIBRARY_NOT_FOUND)
    assert "ED173" in findings(host, no_gpu, pasted=pasted)


def test_nvml_unknown_error_in_a_container_or_no_cgroups_on_the_host() -> None:
    unknown = NvmlFacts(status=NvmlStatus.ERROR, error="Unknown Error")
    inside = findings(GpuAccessFacts(**DOCKER, device_files=DEVICES), unknown)["ED174"]
    assert "sudo nvidia-ctk system create-dev-char-symlinks --create-all" in commands(inside)
    # On a host, no-cgroups = true alone is rootless podman's setting: named only with the error.
    host = GpuAccessFacts(docker="/usr/bin/docker", toolkit=("/usr/bin/nvidia-ctk",), toolkit_no_cgroups=True)
    assert "ED174" not in findings(host, nvml())
    said = findings(host, nvml(), pasted="Failed to initialize NVML: Unknown Error")["ED174"]
    assert any("no-cgroups = false" in c for c in commands(said))


# -- device files: mode and group, or SELinux --------------------------------------------------------


def _node(mode: int, gid: int = 44, usable: bool = False) -> DeviceNode:
    return DeviceNode("/dev/nvidia0", mode, 0, gid, "video", 195, 0, usable)


def test_mode_bits_decide_between_the_group_and_selinux() -> None:
    assert dac_allows(_node(0o660), 1000, (1000,)) is False
    assert dac_allows(_node(0o660), 1000, (44,)) is True
    assert dac_allows(_node(0o666), 1000, ()) is True
    assert dac_allows(_node(0o600), 0, ()) is True  # root
    assert dac_allows(DeviceNode("/dev/nvidia0"), 1000, ()) is None
    shut = GpuAccessFacts(
        device_files=DEVICES, device_nodes=(_node(0o660),), process_uid=1000, process_groups=(1000,)
    )
    host = findings(shut)
    assert commands(host["ED175"]) == ["sudo usermod -aG video $USER"] and "ED176" not in host
    boxed = GpuAccessFacts(
        **DOCKER, device_nodes=(_node(0o660, gid=1005),), process_uid=1000, process_groups=(1000,)
    )
    assert commands(findings(boxed)["ED175"]) == ["docker run --group-add 1005 ... IMAGE"]
    # Mode lets the user in, the kernel does not, the container is confined: SELinux.
    label = "system_u:system_r:container_t:s0:c1,c2"
    confined = GpuAccessFacts(
        **DOCKER, device_nodes=(_node(0o666),), process_uid=1000, process_groups=(1000,), selinux_label=label
    )
    found = findings(confined)
    assert "ED176" in found and "ED175" not in found
    assert "sudo setsebool -P container_use_devices on" in commands(found["ED176"])
    permissive = GpuAccessFacts(
        **DOCKER, device_nodes=(_node(0o666),), process_uid=1000, selinux_label=label, selinux="permissive"
    )
    assert "ED176" not in findings(permissive)


# -- MIG ---------------------------------------------------------------------------------------------


def _mig(*devices: str, errors: tuple[str, ...] = ()) -> GpuState:
    return GpuState(index=0, mig_current=True, mig_pending=True, mig_devices=devices, errors=errors)


def test_mig_permissions_in_a_container_need_the_monitor_variable() -> None:
    refused = _mig(
        "MIG-a",
        errors=("nvmlDeviceGetPowerUsage: Unknown", "nvmlDeviceGetMemoryInfo: Insufficient Permissions"),
    )
    k8s = {"container": "kubernetes", "container_evidence": ("$KUBERNETES_SERVICE_HOST is set",)}
    assert "ED177" in findings(GpuAccessFacts(**k8s, gpu_states=(refused,)), nvml(gpu=A100))
    assert "ED177" not in findings(GpuAccessFacts(**k8s, gpu_states=(refused,), mig_monitor_devices="all"))
    assert "ED177" not in findings(GpuAccessFacts(gpu_states=(refused,)))  # a host: root's business


def test_one_process_one_mig_slice() -> None:
    assert mig_entries("MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/2, MIG-b,0") == (
        "MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/2",
        "MIG-b",
    )
    two = torch(available=True, cuda_visible_devices="MIG-a,MIG-b")
    found = findings(two)["ED182"]
    assert found.severity.value == "warning" and commands(found) == ["export CUDA_VISIBLE_DEVICES=MIG-a"]
    assert "ED182" not in findings(torch(available=True, cuda_visible_devices="MIG-a"))
    # Several slices created, none named, torch sees one: the same limit.
    many = GpuAccessFacts(gpu_states=(_mig("MIG-a", "MIG-b", "MIG-c"),))
    assert "ED182" in findings(many, torch(available=True))


def test_only_torch_1_13_drops_uuids_from_cuda_visible_devices() -> None:
    def count(version: str, visible: str) -> dict[str, Finding]:
        return findings(torch("11.7", version=version, cuda_visible_devices=visible), nvml(gpu=A100))

    assert "ED183" in count("1.13.1", "MIG-feee0c61-26ec-5616-bb59-b6d777cc4f34")
    assert "ED183" in count("1.13.0", "GPU-5a88edbe-90c4-2449-8c43-70c57591cca1")
    assert "ED183" not in count("2.0.0", "GPU-5a88edbe-90c4-2449-8c43-70c57591cca1")
    assert "ED183" not in count("1.12.1", "GPU-5a88edbe")
    assert "ED183" not in count("1.13.1", "0,1")


# -- WSL 2 -------------------------------------------------------------------------------------------


def test_wsl_s_libcuda_path_needs_the_error_or_a_missing_ld_conf() -> None:
    wsl = GpuAccessFacts(wsl=2, wsl_ld_conf=True, wsl_libraries=("libcuda.so", "libcuda.so.1"))
    pasted = "OSError: libcuda.so: cannot open shared object file: No such file or directory"
    assert "ED179" not in findings(wsl, torch(available=True), platform=WSL2)  # healthy WSL looks so
    said = findings(wsl, torch(available=True), platform=WSL2, pasted=pasted)["ED179"]
    assert commands(said)[0] == 'export LD_LIBRARY_PATH=/usr/lib/wsl/lib:"$LD_LIBRARY_PATH"'
    on_path = GpuAccessFacts(wsl=2, wsl_ld_conf=True, loader_path=("/usr/lib/wsl/lib/",))
    assert "ED179" not in findings(on_path, platform=WSL2, pasted=pasted)
    gone = GpuAccessFacts(wsl=2, wsl_ld_conf=False)
    assert "sudo ldconfig" in commands(findings(gone, torch(), platform=WSL2)["ED179"])
    assert "ED179" not in findings(GpuAccessFacts(), platform=LINUX, pasted=pasted)  # not WSL: another cause


def test_wsl_kernel_and_windows_build() -> None:
    assert kernel_version("5.10.16.3-microsoft-standard-WSL2") == "5.10.16.3"
    assert kernel_version("4.19.84-microsoft-standard+") == "4.19.84"
    old = PlatformInfo("Linux", "5.10.16.3-microsoft-standard-WSL2", "#1", "x86_64")
    assert "wsl --update" in commands(findings(GpuAccessFacts(wsl=2), torch(), platform=old)["ED180"])
    assert "ED180" not in findings(GpuAccessFacts(wsl=2), torch(), platform=WSL2)
    assert "ED180" not in findings(GpuAccessFacts(wsl=2), torch(cuda=None), platform=old)  # a CPU build
    insider = GpuAccessFacts(wsl=2, windows_version="10.0.21343.1000")
    assert "21343" in findings(insider, torch(), platform=WSL2)["ED180"].title
    assert "ED180" not in findings(
        GpuAccessFacts(wsl=2, windows_version="10.0.22631.4317"), torch(), platform=WSL2
    )


def test_a_wsl_container_needs_libnvdxgdmal_from_driver_555() -> None:
    inside = GpuAccessFacts(wsl=2, **DOCKER, wsl_libraries=("libcuda.so.1",))
    assert "ED181" in findings(inside, nvml("555.85", 12050), torch(), platform=WSL2)
    assert "ED181" not in findings(inside, nvml("552.44", 12040), torch(), platform=WSL2)
    mapped = GpuAccessFacts(wsl=2, **DOCKER, wsl_libraries=("libcuda.so.1", "libnvdxgdmal.so.1"))
    assert "ED181" not in findings(mapped, nvml("555.85", 12050), torch(), platform=WSL2)


# -- Slurm and limits --------------------------------------------------------------------------------


def test_a_slurm_job_without_gpus() -> None:
    job = GpuAccessFacts(slurm_job=True)
    assert "--gres=gpu:1" in findings(job, torch())["ED178"].fixes[0].summary
    assert "NoDevFiles" in findings(job, torch(cuda_visible_devices="NoDevFiles"))["ED178"].detail
    assert "ED178" not in findings(GpuAccessFacts(slurm_job=True, slurm_gpus=("SLURM_JOB_GPUS=0",)), torch())
    assert "ED178" not in findings(job, torch(available=True))


def test_shm_memlock_and_open_files_thresholds() -> None:
    assert (
        human_bytes(64 * 2**20) == "64 MiB"
        and human_bytes(3 * 2**29) == "1.5 GiB"
        and human_bytes(12) == "12 bytes"
    )
    small = GpuAccessFacts(**DOCKER, shm_bytes=64 * 2**20)
    assert "64 MiB" in findings(small, torch(available=True))["ED184"].title
    assert "ED184" not in findings(GpuAccessFacts(**DOCKER, shm_bytes=8 * 2**30), torch(available=True))
    assert "ED184" not in findings(GpuAccessFacts(shm_bytes=64 * 2**20), torch(available=True))  # a host
    rdma = GpuAccessFacts(infiniband=("mlx5_0",), memlock=Limit(8 * 2**20, 8 * 2**20))
    assert "ED185" in findings(rdma)
    assert "ED185" not in findings(GpuAccessFacts(infiniband=("mlx5_0",), memlock=Limit(None, None)))
    assert "ED185" not in findings(GpuAccessFacts(memlock=Limit(64 * 1024, 64 * 1024)))  # no RDMA device
    usual = GpuAccessFacts(open_files=Limit(1024, 1048576))
    assert "ED186" not in findings(usual, torch(available=True))  # the common default, no error: nothing
    said = findings(usual, torch(available=True), pasted="RuntimeError: received 0 items of ancdata")["ED186"]
    assert "ulimit -n $(ulimit -Hn)" in commands(said)
    assert "ED186" in findings(GpuAccessFacts(open_files=Limit(256, 256)), torch(available=True))
