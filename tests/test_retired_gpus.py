"""GPUs no current torch CUDA build or NVIDIA driver serves (Fermi, Kepler): ED305 says so with the
CPU build as the fix and folds the driver/arch findings under it; ED306 notes a CPU torch that is
right; ED201 always carries a command; ED001 falls back to the CPU build."""

from __future__ import annotations

from envdoctor.engine import evaluate
from envdoctor.knowledge.retired_gpus import retired, retired_gpus
from envdoctor.model.findings import Finding, Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes.nvml import Gpu, NvmlFacts, NvmlStatus
from envdoctor.probes.torch_build import TorchDevice, TorchFacts
from envdoctor.rules.base import RuleContext
from tests.fixture_support import fixture_report
from tests.support import PYTHON

LINUX = PlatformInfo("Linux", "6.8", "1", "x86_64")
WINDOWS = PlatformInfo("Windows", "11", "10.0.22631", "AMD64")
WIN_PYTHON = "C:\\Users\\user\\project\\.venv\\Scripts\\python.exe"


def run(torch: TorchFacts | None, nvml: NvmlFacts, platform: PlatformInfo = LINUX) -> dict[str, Finding]:
    given = [("python", PYTHON), ("nvml", nvml)] + ([("torch", torch)] if torch is not None else [])
    probes = tuple(ProbeResult(n, ProbeStatus.OK, 0.0, f) for n, f in given)
    path = WIN_PYTHON if platform is WINDOWS else "/env/bin/python"
    return {f.code: f for f in evaluate(RuleContext.build(platform, Interpreter(path, "r"), probes))}


def gpu_nvml(name: str, cc: tuple[int, int], driver: str, cuda: int) -> NvmlFacts:
    return NvmlFacts(
        status=NvmlStatus.OK, driver_version=driver, cuda_driver_version=cuda, gpus=(Gpu(0, name, cc),)
    )


def cuda_torch(
    version: str, cuda: str, arch: tuple[str, ...], available: bool, cc: tuple[int, int]
) -> TorchFacts:
    devices = (TorchDevice(0, None, cc),) if available else ()
    return TorchFacts(
        installed=True,
        version=version,
        dist_version=version,
        cuda=cuda,
        arch_list=arch,
        cuda_available=available,
        device_count=len(devices),
        devices=devices,
    )


CU12 = ("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90")


def test_the_table_names_the_last_driver_branch_of_each_retired_architecture() -> None:
    assert {(g.architecture, g.last_driver_branch) for g in retired_gpus()} == {
        ("Fermi", "R390"),
        ("Kepler", "R470"),
    }
    assert retired((2, 1)) is not None and retired((2, 1)).newest_torch == "1.0.0"
    assert retired((3, 7)) is not None and retired((3, 7)).newest_torch is None  # from archs.json
    assert retired((5, 0)) is None and retired((8, 6)) is None
    for gpu in retired_gpus():
        assert gpu.provenance.source and (gpu.newest_torch is None or gpu.torch_provenance.source)


def test_fermi_with_a_cuda_torch_gets_the_cpu_build_not_a_driver_upgrade() -> None:
    nvml = gpu_nvml("GeForce GTX 580", (2, 0), "390.157", 9010)
    found = run(cuda_torch("2.5.1+cu124", "12.4", CU12, False, (2, 0)), nvml)
    cause = found["ED305"]
    assert cause.title == "GeForce GTX 580 (sm_20, Fermi) cannot run current torch CUDA builds"
    assert "R390" in cause.detail and "torch 1.0.0" in cause.detail and "no newer driver" in cause.detail
    assert [f.folded_under for f in found.values() if f.code in ("ED101", "ED301")] == ["ED305", "ED305"]
    (cpu,) = cause.fixes  # no CUDA build fits a Fermi GPU
    assert "/whl/cpu" in cpu.commands[0]
    assert not any("ubuntu-drivers" in c for f in found.values() for fix in f.fixes for c in fix.commands)


def test_a_k80_on_the_last_build_with_its_kernels_is_fine() -> None:
    nvml = gpu_nvml("Tesla K80", (3, 7), "470.256.02", 11040)
    arch = ("sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90")
    found = run(cuda_torch("2.7.1+cu118", "11.8", arch, True, (3, 7)), nvml)
    assert "ED305" not in found and "ED301" not in found


def test_windows_kepler_fixture_folds_the_driver_advice_under_the_cause() -> None:
    report = fixture_report("win10-gt720-kepler-cu117-torch")
    assert [(f.code, f.folded_under) for f in report.findings] == [
        ("ED301", "ED305"),
        ("ED305", None),
        ("ED102", "ED305"),
    ]
    cause = report.findings[1]
    assert "NVIDIA GeForce GT 720 (sm_35, Kepler)" in cause.title and "torch 1.12.1" in cause.detail
    assert [fix.commands for fix in report.findings[2].fixes] == []  # "upgrade to >= 516.01" is gone


def test_a_cpu_torch_on_a_retired_gpu_is_a_note_and_ed201_stays_quiet() -> None:
    report = fixture_report("win10-gt720-kepler-cpu-torch")
    assert [f.code for f in report.findings] == ["ED306"] and report.exit_code == 0
    assert "the CPU build (2.5.1+cpu) is the right one here" in report.findings[0].title


def test_cpu_torch_on_windows_always_comes_with_a_command() -> None:
    cpu = TorchFacts(installed=True, version="2.5.1+cpu", dist_version="2.5.1+cpu", cuda_available=False)
    # A Turing GPU on a driver too old for every CUDA build: the driver first, then the command.
    old_driver = gpu_nvml("NVIDIA GeForce RTX 2060", (7, 5), "441.22", 10020)
    finding = run(cpu, old_driver, WINDOWS)["ED201"]
    assert [bool(f.commands) for f in finding.fixes] == [False, True]
    assert "--index-url https://download.pytorch.org/whl/cu" in finding.fixes[1].commands[0]
    # No working driver at all (the GPU only on the PCI bus): still a command after the driver.
    no_driver = NvmlFacts(status=NvmlStatus.LIBRARY_NOT_FOUND, pci_nvidia_devices=("0000:01:00.0",))
    finding = run(cpu, no_driver, WINDOWS)["ED201"]
    assert any(f.commands for f in finding.fixes)


def test_torch_missing_on_a_retired_gpu_gets_the_cpu_build() -> None:
    missing = TorchFacts(installed=False)
    finding = run(missing, gpu_nvml("GeForce GTX 780", (3, 5), "474.44", 11040), WINDOWS)["ED001"]
    assert "CPU build" in finding.fixes[0].summary and "torch==" in finding.fixes[0].commands[0]


def test_windows_fermi_fixture_gives_the_cpu_build_and_the_last_torch_and_driver() -> None:
    """Fooocus's torch 2.1.0+cu121 on a GT 630 (sm_21) with R390, the newest driver it can take."""
    report = fixture_report("win10-gt630-fermi-cu121-driver391")
    assert [(f.code, f.folded_under) for f in report.findings] == [("ED101", "ED305"), ("ED305", None)]
    driver, cause = report.findings
    assert cause.title == "GeForce GT 630 (sm_21, Fermi) cannot run current torch CUDA builds"
    # The newest torch and driver that could use it, and that no newer driver exists.
    assert "torch 1.0.0" in cause.detail and "with an R390 driver" in cause.detail
    assert "NVIDIA publishes no newer driver" in cause.detail
    (cpu,) = cause.fixes  # no CUDA build fits sm_21 on R390: only the CPU build
    assert "CPU build" in cpu.summary
    (command,) = cpu.commands
    # PyPI's Windows wheel is the CPU build: no CUDA index, and into the embedded Python itself.
    assert command.startswith("C:\\Users\\user\\Documents\\Fooocus\\python_embeded\\python.exe -m pip ")
    assert "torch==" in command and "download.pytorch.org/whl/cu" not in command
    assert driver.fixes == ()  # the driver advice is gone: no driver >= 528 for this GPU
    assert report.exit_code == 1
