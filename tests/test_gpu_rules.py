"""ED301-ED304 and the GPU knowledge beneath them: the compatibility rule, wheel arch lists, causes."""

from __future__ import annotations

import pytest

from envdoctor.engine import evaluate
from envdoctor.knowledge import gpu_compute
from envdoctor.knowledge.archs import Capability, cubin_runs_on, parse_capability, ptx_runs_on
from envdoctor.knowledge.gpu_compute import parse_arch
from envdoctor.model.findings import Finding, Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes.nvml import Gpu, NvmlFacts, NvmlStatus
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.torch_build import TorchDevice, TorchFacts
from envdoctor.probes.torch_smoke import SmokeDevice, SmokeError, SmokeFacts, SmokeStep
from envdoctor.rules.base import RuleContext


def CC(text: str) -> Capability:
    found = parse_capability(text)
    assert found is not None, text
    return found


LINUX = PlatformInfo("Linux", "6.8.0", "#1", "x86_64")
PYTHON = "/home/user/project/.venv/bin/python"
CU12_ARCHS = ("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90")
CU128_ARCHS = ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120")


# -- arch-list entries against the compatibility rule (its own cases: test_knowledge_archs.py) --


def test_architecture_specific_cubins_run_only_on_their_own_gpu() -> None:
    entry = parse_arch("sm_90a")
    assert entry is not None and entry.suffix == "a"
    assert cubin_runs_on(entry.capability, CC("9.0"), entry.suffix)
    assert not cubin_runs_on(CC("10.0"), CC("10.3"), "a")
    assert not ptx_runs_on(CC("9.0"), CC("10.0"), "a")


def test_arch_list_parsing_and_serving_entry() -> None:
    archs = gpu_compute.parse_arch_list([*CU12_ARCHS, "gfx90a"])
    assert [a.text for a in archs] == list(CU12_ARCHS)  # ROCm names are not CUDA entries
    assert parse_arch("sm_120") == gpu_compute.ArchEntry("sm_120", False, CC("12.0"))
    assert gpu_compute.serving_entry(archs, CC("12.0")) is None
    assert gpu_compute.serving_entry(archs, CC("8.9")).text == "sm_86"  # type: ignore[union-attr]
    with_ptx = gpu_compute.parse_arch_list([*CU12_ARCHS, "compute_90"])
    served = gpu_compute.serving_entry(with_ptx, CC("12.0"))
    assert served is not None and served.ptx and served.text == "compute_90"


# -- the wheel table: the facts the issue names ------------------------------------------------


def test_rtx50_needs_torch_27_with_cu128_or_newer() -> None:
    support = gpu_compute.support_for(CC("12.0"))
    assert (support.builds[0].series, support.builds[0].variant) == ("2.7", "cu128")
    assert {b.variant for b in support.builds} == {"cu128", "cu129", "cu130", "cu132"}
    assert support.summary().startswith("sm_120 needs torch >= 2.7 with cu128 or newer")


def test_pascal_needs_cu126_or_older() -> None:
    support = gpu_compute.support_for(CC("6.1"))
    assert max(b.cuda_number for b in support.builds) == 126
    assert support.summary().startswith("sm_61 needs cu126 or older")


def test_kepler_needs_cu118_up_to_torch_27() -> None:
    newest = gpu_compute.support_for(CC("3.7")).builds[-1]
    assert (newest.series, newest.variant) == ("2.7", "cu118")
    assert gpu_compute.support_for(CC("3.7")).summary().startswith("sm_37 needs torch <= 2.7")


def test_jetson_has_no_official_wheel() -> None:
    assert gpu_compute.support_for(CC("8.7")).builds == ()
    assert "TORCH_CUDA_ARCH_LIST" in gpu_compute.support_for(CC("8.7")).summary()


def test_support_depends_on_the_platform() -> None:
    # A made-up sm_130 GPU: only the compute_120 PTX of Linux wheels could serve it (no release
    # claims PTX for cu132: 2.12's were stripped, 2.13's is unpublished).
    assert {b.variant for b in gpu_compute.support_for(CC("13.0")).builds} == {"cu129", "cu130"}
    assert gpu_compute.support_for(CC("13.0"), "windows-x86_64").builds == ()
    # Thor (sm_110) has kernels only in the aarch64 builds of cu130 and newer.
    assert gpu_compute.support_for(CC("11.0")).builds == ()
    thor = gpu_compute.support_for(CC("11.0"), "linux-aarch64")
    assert thor.builds and {b.variant for b in thor.builds} == {"cu130", "cu132"}


def test_unknown_releases_are_judged_by_the_newest_build_of_their_variant() -> None:
    newest = gpu_compute.wheel_builds()[-1].series
    build = gpu_compute.closest_build("2.99", "cu126")
    assert build is not None and build.series == newest and not build.runs_on(CC("12.0"))
    assert gpu_compute.closest_build("1.0", "cu126") is None


def test_wheel_builds_come_from_the_releases_and_their_arch_lists() -> None:
    builds = gpu_compute.wheel_builds()
    assert all(build.arch.source and build.arch.cubins for build in builds)
    assert ("2.7", "cu128") in {(b.series, b.variant) for b in builds}
    windows = {(b.series, b.variant): b for b in gpu_compute.wheel_builds("windows-x86_64")}
    assert ("1.12", "cu102") not in windows  # no CUDA 10.2 Windows builds
    assert not windows[("2.9", "cu130")].arch.ptx  # "+PTX available on linux builds only"
    assert gpu_compute.wheel_builds("macos-arm64") == ()


@pytest.mark.parametrize(
    ("message", "cause"),
    [
        ("CUDA error: no kernel image is available for execution on the device", "arch"),
        ("CUDA out of memory. Tried to allocate 2.00 MiB.", "memory"),
        ("CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`", "memory"),
        ("CUDA error: CUDA-capable device(s) is/are busy or unavailable", "busy"),
        ("CUDA error: an illegal memory access was encountered", "device_fault"),
        ("CUDA error: the provided PTX was compiled with an unsupported toolchain.", "ptx_toolchain"),
        ("CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm(...)`", "library"),
        ("something else entirely", None),
    ],
)
def test_kernel_error_causes(message: str, cause: str | None) -> None:
    assert gpu_compute.kernel_error_cause(message) == cause


# -- the rules on hand-built facts -------------------------------------------------------------


def nvml_facts(name: str, cc: tuple[int, int], driver: str = "570.124.06", cuda: int = 12080) -> NvmlFacts:
    return NvmlFacts(
        status="ok", source="nvml", driver_version=driver, cuda_driver_version=cuda, gpus=(Gpu(0, name, cc),)
    )


def step(name: str, status: str = "ok", message: str | None = None, **more: object) -> SmokeStep:
    error = SmokeError("RuntimeError", message) if message else None
    return SmokeStep(step=name, status=status, error=error, **more)  # type: ignore[arg-type]


def smoke(device: str, kind: str, *steps: SmokeStep, cc: tuple[int, int] | None = None) -> SmokeFacts:
    return SmokeFacts(
        ran=True,
        completed=True,
        devices=(SmokeDevice(device, kind, "GPU" if kind != "cpu" else "CPU", cc, steps=steps),),
    )


def torch_facts(
    version: str, archs: tuple[str, ...], cc: tuple[int, int] | None, **more: object
) -> TorchFacts:
    cuda = None if version.endswith("+cpu") else "12.8"
    devices = (TorchDevice(0, "GPU", cc),) if cc else ()
    return TorchFacts(  # type: ignore[arg-type]
        installed=True,
        version=version,
        cuda=cuda,
        arch_list=archs,
        cuda_available=bool(cc),
        device_count=len(devices),
        devices=devices,
        **more,
    )


def findings(
    torch: TorchFacts, nvml: NvmlFacts | None = None, platform: PlatformInfo = LINUX
) -> list[Finding]:
    python = PythonFacts(PYTHON, "3.11.9", "CPython", 64, "/home/user/project/.venv", True, False)
    probes = [
        ProbeResult("python", ProbeStatus.OK, 0.0, python),
        ProbeResult("torch", ProbeStatus.OK, 1.0, torch),
    ]
    if nvml is not None:
        probes.append(ProbeResult("nvml", ProbeStatus.OK, 0.1, nvml))
    ctx = RuleContext.build(platform, Interpreter(PYTHON, "given with --python"), tuple(probes))
    return [f for f in evaluate(ctx) if f.code.startswith("ED3")]


def test_pascal_on_cu128_gets_a_cu126_fix() -> None:
    found = findings(
        torch_facts("2.7.1+cu128", CU128_ARCHS, (6, 1)), nvml_facts("NVIDIA GeForce GTX 1080", (6, 1))
    )
    (finding,) = found
    assert finding.code == "ED301" and "sm_61 needs cu126 or older" in finding.detail
    assert finding.fixes and all("/whl/cu126" in c for c in finding.fixes[0].commands)


def test_the_planners_build_is_checked_against_a_gpu_only_torch_saw() -> None:
    # NVML names no capability, so the planner chooses by the driver alone: torch 2.13.0's default
    # build (cu130, a plain PyPI command without an index URL) has no sm_61 kernels, so the fix is
    # the newest build that has them.
    nvml = NvmlFacts(
        status=NvmlStatus.OK,
        driver_version="580.65.06",
        cuda_driver_version=13000,
        gpus=(Gpu(0, "NVIDIA GeForce GTX 1080", None),),
    )
    (finding,) = findings(torch_facts("2.7.1+cu128", CU128_ARCHS, (6, 1)), nvml)
    assert finding.code == "ED301"
    (command,) = finding.fixes[0].commands
    assert "/whl/cu126" in command
    assert finding.fixes[0].summary.startswith("Install torch 2.13.0 (cu126), which has kernels for sm_61")


def test_kepler_gets_torch_27_cu118() -> None:
    # A K80 is a retired Kepler GPU: ED305 says so and carries the fixes (the CPU build first, then
    # the last CUDA build with its kernels); the missing arch (ED301) folds under it.
    nvml = nvml_facts("Tesla K80", (3, 7), driver="470.182.03", cuda=11040)
    found = findings(torch_facts("2.5.1+cu121", CU12_ARCHS, (3, 7)), nvml)
    assert [(f.code, f.folded_under) for f in found] == [("ED301", "ED305"), ("ED305", None)]
    cause = found[1]
    assert "R470" in cause.detail and "torch 2.7.1 (cu118)" in cause.detail
    keep = cause.fixes[-1].commands[0]
    assert "torch==2.7.1" in keep and "/whl/cu118" in keep
    assert "/whl/cpu" in cause.fixes[0].commands[0] and "Tesla K80 (sm_37, Kepler)" in cause.title


def test_jetson_orin_is_caught_where_torch_major_check_is_not() -> None:
    (finding,) = findings(torch_facts("2.9.0+cu130", ("sm_80", "sm_90"), (8, 7)))
    assert finding.code == "ED301" and "sm_87" in finding.title


def test_torch_warning_alone_is_enough_to_judge() -> None:
    warning = (
        "NVIDIA GeForce RTX 5070 Ti with CUDA capability sm_120 is not compatible with the current "
        "PyTorch installation."
    )
    (finding,) = findings(torch_facts("2.6.0+cu126", CU12_ARCHS, None, warnings=(warning,)))
    assert finding.code == "ED301" and "NVIDIA GeForce RTX 5070 Ti" in finding.title
    assert "(from torch's warning)" in " ".join(finding.evidence)


def test_ptx_in_the_build_covers_newer_gpus() -> None:
    assert findings(torch_facts("2.8.0+cu129", (*CU128_ARCHS, "compute_120"), (12, 1))) == []
    assert findings(torch_facts("2.5.1+cu124", (*CU12_ARCHS, "compute_90"), (12, 0))) == []


def test_kernels_that_ran_overrule_the_table() -> None:
    ran = smoke("cuda:0", "cuda", step("init"), step("matmul_fp32"), cc=(12, 0))
    assert findings(torch_facts("2.6.0+cu126", CU12_ARCHS, (12, 0), smoke=ran)) == []


def test_rocm_builds_are_not_judged_by_cuda_arch_rules() -> None:
    rocm = torch_facts("2.5.1+rocm6.2", ("gfx90a", "gfx942"), (9, 4), hip="6.2.41133")
    assert findings(rocm) == []


def test_no_kernel_image_without_a_static_verdict_is_explained_by_ed302() -> None:
    failed = smoke(
        "cuda:0",
        "cuda",
        step("init", "failed", "CUDA error: no kernel image is available for execution"),
        cc=(8, 9),
    )
    (finding,) = findings(torch_facts("2.5.1+cu124", (), (8, 9), smoke=failed))
    assert finding.code == "ED302" and "no kernels for this GPU's architecture" in finding.detail


def test_wrong_numbers_on_a_gpu() -> None:
    wrong = step("matmul_fp16", "wrong", max_error=0.9, tolerance=0.016, precision="float16")
    found = findings(
        torch_facts(
            "2.5.1+cu124", CU12_ARCHS, (8, 9), smoke=smoke("cuda:0", "cuda", step("init"), wrong, cc=(8, 9))
        )
    )
    (finding,) = found
    assert finding.code == "ED302" and "returned wrong numbers: normalised error 0.9" in finding.detail
    assert any("xid" in c for fix in finding.fixes for c in fix.commands)


def test_cpu_failures_are_reported_too() -> None:
    bad = smoke("cpu", "cpu", step("init"), step("matmul_fp32", "wrong", finite=False))
    (finding,) = findings(torch_facts("2.13.0+cpu", (), None, smoke=bad))
    assert finding.code == "ED302" and finding.title == "the CPU smoke test fails: matmul fp32"
    assert "NaN/inf" in finding.detail


def test_a_crash_during_a_step() -> None:
    crash = step("conv2d", "crashed", "the process died of signal 11 during this step")
    (finding,) = findings(
        torch_facts("2.5.1+cu124", CU12_ARCHS, (8, 9), smoke=smoke("cuda:0", "cuda", crash, cc=(8, 9)))
    )
    assert finding.code == "ED302" and "signal 11" in finding.detail
    assert any("CUDA_LAUNCH_BLOCKING=1" in c for fix in finding.fixes for c in fix.commands)


def test_a_hang_on_a_gpu_served_only_by_ptx_mentions_the_jit() -> None:
    hang = step("init", "timeout", "did not finish", timeout=30.0)
    torch = torch_facts(
        "2.8.0+cu129", (*CU128_ARCHS, "compute_120"), (12, 1), smoke=smoke("cuda:0", "cuda", hang, cc=(13, 0))
    )
    (finding,) = findings(torch)
    assert finding.code == "ED304" and "compute_120 PTX" in finding.detail


def test_a_cpu_hang_suggests_one_thread() -> None:
    hang = step("autograd", "timeout", "did not finish", timeout=15.0)
    (finding,) = findings(torch_facts("2.13.0+cpu", (), None, smoke=smoke("cpu", "cpu", hang)))
    assert finding.code == "ED304"
    assert finding.fixes[0].commands == ("OMP_NUM_THREADS=1 envdoctor check",)


def test_windows_fixes_have_no_sudo() -> None:
    windows = PlatformInfo("Windows", "10", "10.0.22631", "AMD64")
    busy = step("init", "failed", "CUDA error: CUDA-capable device(s) is/are busy or unavailable")
    torch = torch_facts("2.5.1+cu124", CU12_ARCHS, (8, 9), smoke=smoke("cuda:0", "cuda", busy, cc=(8, 9)))
    (finding,) = findings(torch, platform=windows)
    commands = [c for fix in finding.fixes for c in fix.commands]
    assert "nvidia-smi -i 0 -c DEFAULT" in commands and not any("sudo" in c for c in commands)
