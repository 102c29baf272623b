"""Core rules on facts: boundaries the fixtures do not pin down."""

from __future__ import annotations

import pytest

from envdoctor.engine import evaluate
from envdoctor.install import plan as install
from envdoctor.knowledge.drivers import DriverKind, driver_support
from envdoctor.model.findings import Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes.nvml import Gpu, NvmlFacts
from envdoctor.probes.system import SystemFacts
from envdoctor.probes.torch_build import Package, PythonError, TorchFacts
from envdoctor.rules.base import RuleContext
from envdoctor.rules.torch.install import explain_import_error
from tests.support import PYTHON

LINUX = PlatformInfo("Linux", "6.8", "1", "x86_64")
WINDOWS = PlatformInfo("Windows", "11", "10", "AMD64")
GPU = Gpu(0, "NVIDIA A10", (8, 6), 24 * 2**30)


def codes(*facts: object, platform: PlatformInfo = LINUX) -> list[str]:
    probes = tuple(ProbeResult(type(f).__name__, ProbeStatus.OK, 0.0, f) for f in (PYTHON, *facts))
    ctx = RuleContext.build(platform, Interpreter("/env/bin/python", "r"), probes)
    return [f.code for f in evaluate(ctx)]


def nvml(driver: str, cuda: int | None = None) -> NvmlFacts:
    return NvmlFacts(status="ok", driver_version=driver, cuda_driver_version=cuda, gpus=(GPU,))


def cuda_torch(cuda: str, version: str = "2.5.1", **kw: object) -> TorchFacts:
    return TorchFacts(
        installed=True,
        version=f"{version}+cu{cuda.replace('.', '')}",
        cuda=cuda,
        cuda_available=True,
        device_count=1,
        **kw,
    )  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("driver", "cuda", "expected"),
    [
        ("525.60.12", "12.1", ["ED101"]),  # one below the 12.x minor-version-compatibility minimum
        ("525.60.13", "12.1", ["ED102"]),  # exactly the minimum: works with limits
        ("530.30.02", "12.1", []),  # the 12.1 toolkit's own minimum: native
        ("579.99", "13.0", ["ED101"]),  # cu13x needs >= 580
        ("580.65.06", "13.0", []),
        ("575.51.03", "12.9", []),
        ("470.182.03", "11.8", ["ED102"]),  # 11.x MVC from 450.80.02
        ("450.80.01", "11.8", ["ED101"]),
    ],
)
def test_driver_boundaries_on_linux(driver: str, cuda: str, expected: list[str]) -> None:
    found = [c for c in codes(nvml(driver), cuda_torch(cuda)) if c.startswith("ED10")]
    assert found == expected


def test_windows_minor_compat_floor_is_528_33() -> None:
    # NVIDIA's release-notes table: >= 528.33 on Windows; 527.41 is 12.0's own toolkit minimum.
    probes = (
        ProbeResult("n", ProbeStatus.OK, 0, nvml("528.33")),
        ProbeResult("t", ProbeStatus.OK, 0, cuda_torch("12.4")),
    )
    ctx = RuleContext.build(WINDOWS, Interpreter("C:\\env\\python.exe", "r"), probes)
    finding = next(f for f in evaluate(ctx) if f.code == "ED102")
    assert ">= 528.33" in finding.detail
    assert codes(nvml("527.41"), cuda_torch("12.4"), platform=WINDOWS)[:1] == ["ED101"]


def test_driver_cuda_major_below_torch_major_is_too_old_even_without_data() -> None:
    assert "ED101" in codes(nvml("999.0", cuda=11080), cuda_torch("12.1"))


def test_the_driver_rules_and_the_planner_share_one_judgement() -> None:
    # 550.40.07 predates the 12.4 toolkit's printed minimum (550.54.14) but reports CUDA 12.4
    # itself: the driver's own word makes it native, for ED102 as for the planner.
    assert driver_support("cu124", "550.40.07", "linux", "12.4").kind is DriverKind.NATIVE
    assert not [c for c in codes(nvml("550.40.07", cuda=12040), cuda_torch("12.4")) if c.startswith("ED10")]
    # Without it the table decides: minor-version compatibility only.
    assert driver_support("cu124", "550.40.07", "linux").kind is DriverKind.COMPAT
    assert [c for c in codes(nvml("550.40.07"), cuda_torch("12.4")) if c.startswith("ED10")] == ["ED102"]
    # The planner, asked for the same torch natively, then offers what the rule calls native.
    plan = install.plan(
        install.InstallTarget(
            "linux",
            python="3.11",
            driver_version="550.40.07",
            driver_cuda="12.4",
            torch="2.5.1",
            native_only=True,
        )
    )
    assert plan.variant == "cu124"


def test_minor_version_compat_where_nvidia_publishes_no_native_minimum() -> None:
    # Windows 13.x: NVIDIA prints N/A as the toolkit minimum, and each 13.x toolkit belongs to a
    # driver branch (13.2: R595). An r580 driver (CUDA 13.0) runs a cu132 build through
    # minor-version compatibility, as the planner also says, and 595 is the branch that runs it natively.
    probes = (
        ProbeResult("n", ProbeStatus.OK, 0, nvml("581.15", cuda=13000)),
        ProbeResult("t", ProbeStatus.OK, 0, cuda_torch("13.2", version="2.12.0")),
    )
    ctx = RuleContext.build(WINDOWS, Interpreter("C:\\env\\python.exe", "r"), probes)
    finding = next(f for f in evaluate(ctx) if f.code.startswith("ED10"))
    assert finding.code == "ED102" and "predates CUDA 13.2 (native from 595)" in finding.detail
    assert finding.fixes[0].summary == "Install or upgrade the NVIDIA driver (at least 595)"
    assert any("/whl/cu130" in c for c in finding.fixes[1].commands)


def test_torch_warning_alone_is_enough() -> None:
    torch = cuda_torch(
        "12.4",
        warnings=(
            "CUDA initialization: The NVIDIA driver on your system is too old "
            "(found version 11040). Please update",
        ),
    )
    broken = NvmlFacts(status="error", error="GPU is lost")
    assert "ED101" in codes(broken, torch)


def test_cpu_torch_on_windows_gpu_machine_fix_is_a_cuda_index() -> None:
    torch = TorchFacts(installed=True, version="2.5.1+cpu", cuda_available=False)
    probes = (
        ProbeResult("n", ProbeStatus.OK, 0, nvml("560.94", 12060)),
        ProbeResult("t", ProbeStatus.OK, 0, torch),
    )
    ctx = RuleContext.build(WINDOWS, Interpreter("C:\\env\\python.exe", "r"), probes)
    finding = next(f for f in evaluate(ctx) if f.code == "ED201")
    command = finding.fixes[0].commands[0]
    assert command.startswith("C:\\env\\python.exe -m pip install torch==")
    assert "--index-url https://download.pytorch.org/whl/cu" in command


def test_no_gpu_is_only_a_note_and_mentions_wsl() -> None:
    none = NvmlFacts(status="library_not_found")
    wsl = SystemFacts(os="linux", os_release="5.15", os_version="1", machine="x86_64", wsl=True)
    probes = (ProbeResult("s", ProbeStatus.OK, 0, wsl), ProbeResult("n", ProbeStatus.OK, 0, none))
    ctx = RuleContext.build(LINUX, Interpreter("/p", "r"), probes)
    (finding,) = evaluate(ctx)
    assert finding.code == "ED104" and finding.severity.value == "info" and "WSL" in finding.detail


@pytest.mark.parametrize(
    ("status", "command"),
    [("driver_not_loaded", "sudo modprobe nvidia"), ("version_mismatch", "sudo reboot")],
)
def test_broken_driver_states(status: str, command: str) -> None:
    probes = (ProbeResult("n", ProbeStatus.OK, 0, NvmlFacts(status=status, error="e")),)
    ctx = RuleContext.build(LINUX, Interpreter("/p", "r"), probes)
    (finding,) = evaluate(ctx)
    assert finding.code == "ED103" and command in finding.fixes[0].commands


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        (
            "libcusparse.so.12: undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12",
            "LD_LIBRARY_PATH",
        ),
        (
            "[WinError 1114] A dynamic link library (DLL) initialization routine failed. Error loading "
            '"C:\\x\\torch\\lib\\c10.dll" or one of its dependencies.',
            "Visual C++",
        ),
        ("libcudnn.so.9: cannot open shared object file: No such file or directory", "nvidia-*"),
        ("/lib64/libc.so.6: version `GLIBC_2.28' not found", "glibc"),
        ("A module that was compiled using NumPy 1.x cannot be run in NumPy 2.0.0", "NumPy"),
    ],
)
def test_import_error_causes(message: str, fragment: str) -> None:
    cause = explain_import_error(message)
    assert cause is not None and fragment in cause.title
    torch = TorchFacts(installed=True, dist_version="2.5.1", import_error=PythonError("ImportError", message))
    # NumPy 2's own words name their cause whatever the facts say of NumPy (ED210; ED002 folds
    # under it in a report).
    assert codes(torch) == (["ED002", "ED210"] if "NumPy 2" in message else ["ED002"])


def test_unknown_import_error_still_reported() -> None:
    assert explain_import_error("something new") is None
    torch = TorchFacts(installed=True, import_error=PythonError("RuntimeError", "something new"))
    assert codes(torch) == ["ED002"]


def test_companion_label_mismatch_even_when_versions_match() -> None:
    torch = cuda_torch("12.4", companions=(Package("torchvision", "0.20.1+cpu"),))
    assert codes(nvml("550.144.03", 12040), torch) == ["ED202"]
    ok = cuda_torch(
        "12.4", companions=(Package("torchvision", "0.20.1+cu124"), Package("torchaudio", "2.5.1"))
    )
    assert codes(nvml("550.144.03", 12040), ok) == []


def test_unknown_torch_version_skips_the_pairing_check() -> None:
    torch = cuda_torch("13.0", version="2.99.0", companions=(Package("torchvision", "0.99.0"),))
    assert "ED202" not in codes(nvml("590.44.01", 13010), torch)
