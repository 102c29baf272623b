"""AMD and Intel GPUs judged: the rules ED150-ED155 on their edge cases, the knowledge they read
(gfx targets, override families, XPU device ids), the planner's rocmX.Y and xpu branch, the torch
child's new fields, and the fixtures recorded from public reports."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from envdoctor.child import torch_probe as child
from envdoctor.engine import evaluate
from envdoctor.host.base import ChildOutcome
from envdoctor.install.plan import InstallTarget, plan
from envdoctor.install.request import RequestError, VendorGpuOption, check_combination, parse_gpu_option
from envdoctor.knowledge import gpu_vendors as known
from envdoctor.knowledge import release
from envdoctor.model.findings import Finding, Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes.gpu_vendors import GpuVendorFacts, Vendor, VendorGpu
from envdoctor.probes.nvml import Gpu, NvmlFacts, NvmlStatus
from envdoctor.probes.torch_build import AcceleratorFacts, TorchDevice, TorchFacts, facts_from_outcome
from envdoctor.rules.base import RuleContext
from tests.fixture_support import fixture_report
from tests.support import PYTHON

LINUX = PlatformInfo("Linux", "6.8", "1", "x86_64")
NO_NVIDIA = NvmlFacts(status=NvmlStatus.LIBRARY_NOT_FOUND, error="NVML Shared Library Not Found")
ROCM62 = ("gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100")


def amd(gfx: str, device: str = "0x73df", integrated: bool = False, card: str = "card1") -> VendorGpu:
    return VendorGpu(card, Vendor.AMD, device, "0000:03:00.0", "amdgpu", gfx, integrated=integrated)


def intel(device: str, family: str | None) -> VendorGpu:
    return VendorGpu("card0", Vendor.INTEL, device, "0000:00:02.0", "i915", xpu_family=family)


def rocm_torch(
    version: str = "2.5.1+rocm6.2", arch: tuple[str, ...] = ROCM62, available: bool = True
) -> TorchFacts:
    devices = (TorchDevice(0, "AMD Radeon", (10, 3)),) if available else ()
    return TorchFacts(
        installed=True,
        version=version,
        dist_version=version,
        hip="6.2.41133-dd7f95766",
        arch_list=arch,
        cuda_available=available,
        device_count=len(devices),
        devices=devices,
        accelerators=AcceleratorFacts(),
    )


def plain_torch(version: str, cuda: str | None = None, xpu: str | None = None, **more: Any) -> TorchFacts:
    return TorchFacts(
        installed=True,
        version=version,
        dist_version=version,
        cuda=cuda,
        cuda_available=False,
        device_count=0,
        accelerators=AcceleratorFacts(xpu=xpu, **more),
    )


def run(torch: TorchFacts | None, vendors: GpuVendorFacts, nvml: NvmlFacts = NO_NVIDIA) -> dict[str, Finding]:
    given: list[tuple[str, object]] = [("python", PYTHON), ("nvml", nvml), ("gpu_vendors", vendors)]
    if torch is not None:
        given.append(("torch", torch))
    probes = tuple(ProbeResult(n, ProbeStatus.OK, 0.0, f) for n, f in given)
    return {
        f.code: f for f in evaluate(RuleContext.build(LINUX, Interpreter("/env/bin/python", "r"), probes))
    }


# --- knowledge ------------------------------------------------------------------------------------


def test_gfx_names_from_kfd_versions_and_overrides() -> None:
    assert known.gfx_from_version(110000) == "gfx1100"
    assert known.gfx_from_version(90010) == "gfx90a"
    assert known.gfx_from_version(90402) == "gfx942"
    assert known.gfx_from_version(110501) == "gfx1151"
    assert known.gfx_from_version(0) is None and known.gfx_from_version(91600) is None
    assert known.gfx_from_override("10.3.0") == "gfx1030"
    assert known.gfx_from_override(" 11.0.0 ") == "gfx1100"
    for bad in ("gfx1030", "10.3", "10.3.0.1", "", "0.0.0", "10.16.0"):
        assert known.gfx_from_override(bad) is None, bad


def test_families_and_arch_lists_by_rocm_version() -> None:
    family = known.gfx_family("gfx1031")
    assert family is not None and family.stand_in == "gfx1030" and family.override == "10.3.0"
    assert known.gfx_family("gfx1151") is not None and known.gfx_family("gfx1151").override == "11.0.0"  # type: ignore[union-attr]
    assert known.gfx_family("gfx90a") is not None and known.gfx_family("gfx90a").stand_in is None  # type: ignore[union-attr]
    listed = known.rocm_arch_list("rocm6.2")
    assert listed is not None and listed.arch == ROCM62 and listed.provenance.source
    assert known.rocm_arch_list("rocm6.2.4") == listed
    newest = known.rocm_arch_list("rocm7.2")
    assert newest is not None and "gfx1151" in newest.arch and "gfx950" in newest.arch
    assert known.rocm_arch_list("rocm4.2") is None and known.rocm_arch_list("cu126") is None


def test_xpu_devices_and_releases() -> None:
    assert known.xpu_family("0x56A0") is not None
    assert known.xpu_family("0xe20b") is not None
    assert known.xpu_family("0x3e92") is None  # UHD 630
    assert known.has_xpu_build("2.5.0", "linux-x86_64") and known.has_xpu_build(
        "2.13.0+cpu", "windows-x86_64"
    )
    assert not known.has_xpu_build("2.4.1", "linux-x86_64")
    assert not known.has_xpu_build("2.13.0", "macos-arm64")


# --- ED150 ----------------------------------------------------------------------------------------


def test_a_gfx_target_no_wheel_has_gets_source_build_and_cpu_not_an_override() -> None:
    found = run(rocm_torch(), GpuVendorFacts(gpus=(amd("gfx1010", "0x731f"),)))
    finding = found["ED150"]
    summaries = [f.summary for f in finding.fixes]
    assert "PYTORCH_ROCM_ARCH=gfx1010" in summaries[0]
    cpu = finding.fixes[1]
    assert cpu.summary.startswith("Install the CPU build instead") and "torch 2.5.1 (cpu)" in cpu.summary
    assert "whl/cpu" in cpu.commands[-1] and "uninstall" in cpu.commands[0]
    assert not any("HSA_OVERRIDE_GFX_VERSION" in s for s in summaries)


def test_a_newer_rocm_build_with_the_target_is_offered_first() -> None:
    found = run(rocm_torch(), GpuVendorFacts(gpus=(amd("gfx1201", "0x7550"),)))
    first = found["ED150"].fixes[0]
    assert "rocm" in first.summary and any("whl/rocm7" in c for c in first.commands)


def test_an_override_within_the_family_serves_the_gpu() -> None:
    facts = GpuVendorFacts(gpus=(amd("gfx1031"),), hsa_override="10.3.0")
    found = run(rocm_torch(), facts)
    assert "ED150" not in found and "ED151" not in found


def test_the_build_list_from_data_when_torch_gave_none() -> None:
    found = run(rocm_torch(arch=()), GpuVendorFacts(gpus=(amd("gfx1031"),)))
    assert "PyTorch's build list" in found["ED150"].detail


def test_an_apu_beside_a_served_card_is_not_the_gpu_that_matters() -> None:
    gpus = (amd("gfx90c", "0x1638", integrated=True, card="card0"), amd("gfx1030", "0x73bf"))
    assert "ED150" not in run(rocm_torch(), GpuVendorFacts(gpus=gpus))


# --- ED151 ----------------------------------------------------------------------------------------


def test_a_malformed_override_is_named() -> None:
    finding = run(rocm_torch(), GpuVendorFacts(gpus=(amd("gfx1100", "0x744c"),), hsa_override="gfx1030"))[
        "ED151"
    ]
    assert "is not a version such as 10.3.0" in finding.detail
    assert finding.fixes[0].commands == ("unset HSA_OVERRIDE_GFX_VERSION",)


def test_an_override_from_another_family_offers_the_own_family_value_when_needed() -> None:
    facts = GpuVendorFacts(gpus=(amd("gfx1031"),), hsa_override="11.0.0")
    found = run(rocm_torch(), facts)
    assert [f.commands for f in found["ED151"].fixes] == [
        ("unset HSA_OVERRIDE_GFX_VERSION",),
        ("export HSA_OVERRIDE_GFX_VERSION=10.3.0",),
    ]


def test_the_override_does_not_matter_to_a_cuda_or_cpu_torch() -> None:
    facts = GpuVendorFacts(gpus=(amd("gfx90a", "0x740f"),), hsa_override="10.3.0")
    assert "ED151" not in run(plain_torch("2.13.0+cpu"), facts)


# --- ED152 and the NVML "no GPU" note --------------------------------------------------------------


def test_a_cuda_torch_on_an_amd_only_machine_gets_the_rocm_command_and_no_no_gpu_note() -> None:
    torch = plain_torch("2.13.0+cu130", cuda="13.0")
    found = run(torch, GpuVendorFacts(gpus=(amd("gfx1100", "0x744c"),), kfd_device=True))
    finding = found["ED152"]
    assert "CUDA 13.0 build" in finding.title
    assert any("whl/rocm7.2" in c for c in finding.fixes[0].commands)
    assert "ED104" not in found


def test_no_rocm_finding_for_a_gpu_no_build_serves_nor_beside_an_nvidia_gpu() -> None:
    torch = plain_torch("2.13.0+cpu")
    assert "ED152" not in run(torch, GpuVendorFacts(gpus=(amd("gfx1010", "0x731f"),)))
    nvidia = NvmlFacts(
        status=NvmlStatus.OK,
        driver_version="580.95",
        cuda_driver_version=13000,
        gpus=(Gpu(0, "RTX 4090", (8, 9)),),
    )
    assert "ED152" not in run(torch, GpuVendorFacts(gpus=(amd("gfx1100", "0x744c"),)), nvidia)


def test_an_integrated_gpu_served_only_through_an_override_is_left_alone() -> None:
    facts = GpuVendorFacts(gpus=(amd("gfx1035", "0x1681", integrated=True),))
    assert "ED152" not in run(plain_torch("2.13.0+cpu"), facts)


def test_an_old_intel_igpu_still_gets_the_no_nvidia_note() -> None:
    found = run(plain_torch("2.13.0+cpu"), GpuVendorFacts(gpus=(intel("0x3e92", None),)))
    assert "ED104" in found and "ED153" not in found


# --- ED153, ED154, ED155 --------------------------------------------------------------------------


def test_an_xpu_gpu_with_a_cpu_torch_gets_the_xpu_index() -> None:
    found = run(
        plain_torch("2.12.0+cpu"), GpuVendorFacts(gpus=(intel("0x56a0", "Intel Arc A-series (Alchemist)"),))
    )
    assert any("whl/xpu" in c for c in found["ED153"].fixes[0].commands)
    assert "ED104" not in found


def test_an_xpu_build_without_an_intel_gpu_gets_the_cpu_build() -> None:
    torch = plain_torch("2.13.0+xpu", xpu="20250100", xpu_available=False)
    finding = run(torch, GpuVendorFacts())["ED154"]
    assert "no Intel GPU was found" in finding.detail
    assert any("+cpu" in " ".join(f.commands) or "whl/cpu" in " ".join(f.commands) for f in finding.fixes)


def test_an_xpu_build_where_gpus_are_not_listed_names_both_causes() -> None:
    torch = plain_torch("2.13.0+xpu", xpu="20250100", xpu_available=False)
    probes = (
        ProbeResult("python", ProbeStatus.OK, 0.0, PYTHON),
        ProbeResult("torch", ProbeStatus.OK, 0.0, torch),
    )
    ctx = RuleContext.build(LINUX, Interpreter("/env/bin/python", "r"), probes)
    finding = {f.code: f for f in evaluate(ctx)}["ED154"]
    assert "or its driver is missing" in finding.detail and "no Intel GPU was found" not in finding.detail


def test_an_xpu_build_that_works_is_fine() -> None:
    device = TorchDevice(0, "Intel(R) Arc(TM) A770 Graphics")
    torch = plain_torch("2.13.0+xpu", xpu="20250100", xpu_available=True, xpu_devices=(device,))
    found = run(torch, GpuVendorFacts(gpus=(intel("0x56a0", "Intel Arc A-series (Alchemist)"),)))
    assert not {"ED153", "ED154", "ED104"} & set(found)


def test_a_rocm_build_without_dev_kfd_asks_for_the_devices() -> None:
    facts = GpuVendorFacts(gpus=(amd("gfx942", "0x74a1"),), kfd_device=False)
    finding = run(rocm_torch(available=False), facts)["ED155"]
    assert "--device=/dev/kfd" in finding.fixes[0].commands[0]


# --- planner and install options ------------------------------------------------------------------


def test_the_planner_picks_the_newest_rocm_build_with_the_target() -> None:
    result = plan(InstallTarget(os="linux", python="3.11", gfx_targets=("gfx1100",)))
    assert result.variant == "rocm7.2" and not result.warnings
    older = plan(InstallTarget(os="linux", python="3.11", torch="2.5.1", gfx_targets=("gfx1201",)))
    assert not older.possible and "no ROCm build includes gfx1201" in older.reason
    assert any("--cuda cpu" in s for s in older.suggestions)


def test_an_explicit_rocm_build_is_judged_against_the_given_gpu() -> None:
    result = plan(
        InstallTarget(os="linux", python="3.11", torch="2.5.1", variant="rocm6.2", gfx_targets=("gfx1010",))
    )
    assert result.possible and any("invalid device function" in w for w in result.warnings)


def test_xpu_options() -> None:
    assert parse_gpu_option("gfx1100") == VendorGpuOption("gfx1100", "gfx1100")
    assert parse_gpu_option("XPU") == VendorGpuOption("XPU")
    with pytest.raises(RequestError, match=r"start with torch 2\.5\.0"):
        check_combination(release("2.4.1"), "xpu", "linux-x86_64", None, "linux", "xpu")
    with pytest.raises(RequestError, match="xpu builds exist for"):
        check_combination(None, "xpu", "linux-aarch64", None, "linux", "xpu")
    result = plan(InstallTarget(os="windows", python="3.12", variant="xpu"))
    assert result.variant == "xpu" and "whl/xpu" in " ".join(result.commands[-1].argv)


# --- the torch child and its facts -----------------------------------------------------------------


def test_the_child_reads_xpu_devices_and_rocm_gfx_targets() -> None:
    properties = SimpleNamespace(name="Intel(R) Arc(TM) A770 Graphics", total_memory=16225243136)
    xpu = SimpleNamespace(
        is_available=lambda: True, device_count=lambda: 1, get_device_properties=lambda i: properties
    )
    cuda = SimpleNamespace(
        get_device_properties=lambda i: SimpleNamespace(gcnArchName="gfx90a:sramecc+:xnack-")
    )
    torch = SimpleNamespace(version=SimpleNamespace(xpu="20250100"), xpu=xpu, cuda=cuda)
    info: dict[str, Any] = {"hip": "6.2", "cuda_available": True, "devices": [{"index": 0}]}
    errors: list[Any] = []
    child.collect_vendors(torch, info, errors)
    assert info["xpu"] == "20250100" and info["xpu_available"] is True and not errors
    assert info["xpu_devices"] == [
        {"index": 0, "name": "Intel(R) Arc(TM) A770 Graphics", "total_memory_bytes": 16225243136}
    ]
    assert info["gfx_targets"] == ["gfx90a"]


def test_the_child_survives_a_raising_xpu() -> None:
    def boom() -> bool:
        raise RuntimeError("level zero: ZE_RESULT_ERROR_UNINITIALIZED")

    torch = SimpleNamespace(version=SimpleNamespace(), xpu=SimpleNamespace(is_available=boom), cuda=None)
    info: dict[str, Any] = {}
    errors: list[Any] = []
    child.collect_vendors(torch, info, errors)
    assert info["xpu"] is None and "xpu_available" not in info
    assert errors[0]["step"] == "xpu_available"


def test_facts_from_new_and_old_children() -> None:
    record = {
        "record": "torch",
        "installed": True,
        "version": "2.8.0+xpu",
        "xpu": "20250100",
        "xpu_available": True,
        "xpu_devices": [{"index": 0, "name": "Arc"}],
        "gfx_targets": [],
    }
    facts = facts_from_outcome(ChildOutcome(records=(record,), returncode=0), smoke=False)
    assert facts.accelerators == AcceleratorFacts("20250100", True, (TorchDevice(0, "Arc"),), ())
    assert facts.variant == "xpu"
    old = {k: v for k, v in record.items() if not k.startswith(("xpu", "gfx"))}
    assert facts_from_outcome(ChildOutcome(records=(old,), returncode=0), smoke=False).accelerators is None


# --- fixtures ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("linux-rx6700xt-gfx1031-rocm62-invalid-device-function", "ED150"),
        ("linux-mi210-hsa-override-gfx1030-memory-fault", "ED151"),
        ("linux-rx6800-cpu-torch-rocm-wanted", "ED152"),
        ("linux-arc-a770-cpu-torch-xpu-wanted", "ED153"),
        ("linux-arc-a770-xpu-build-xpu-unavailable", "ED154"),
        ("linux-rocm61-host-no-hip-gpus-available", "ED155"),
    ],
)
def test_each_fixture_has_one_finding_with_a_working_fix(name: str, code: str) -> None:
    report = fixture_report(name)
    assert [f.code for f in report.primary] == [code]
    assert report.primary[0].fixes and all(f.summary for f in report.primary[0].fixes)
    assert "ED104" not in {f.code for f in report.findings}
    verdicts = {a.area: a.verdict for a in report.areas}
    assert "no AMD or Intel GPU" not in verdicts["gpu_vendors"]


def test_the_smoke_test_runs_on_xpu_devices_through_torch_xpu() -> None:
    synced: list[str] = []
    xpu = SimpleNamespace(
        synchronize=lambda device: synced.append(device),
        mem_get_info=lambda device: (15 * 2**30, 16 * 2**30),
        reset_peak_memory_stats=lambda device: synced.append("reset"),
        max_memory_allocated=lambda device: 2**20,
    )
    torch = SimpleNamespace(device=lambda label: label, xpu=xpu)
    info = {"xpu_available": True, "xpu_devices": [{"index": 0, "name": "Intel(R) Arc(TM) A770 Graphics"}]}
    devices = child.devices_to_test(torch, info)
    assert [(d.kind, d.label) for d in devices] == [("cpu", "cpu"), ("xpu", "xpu:0")]
    device = devices[1]
    device.sync()
    device.reset_peak()
    assert synced == ["xpu:0", "reset"]
    assert device.memory() == (15 * 2**30, 16 * 2**30) and device.peak() == 2**20
    assert device.conv_backend() == "oneDNN (XPU)" and device.describe()["kind"] == "xpu"


def test_a_gpu_requirement_on_an_amd_machine_folds_under_the_rocm_finding() -> None:
    from envdoctor.engine import diagnose
    from envdoctor.model.findings import Expectations
    from envdoctor.snapshot import load
    from tests.fixture_support import FIXTURES

    snap = load(str(FIXTURES / "linux-rx6800-cpu-torch-rocm-wanted.json"))
    report = diagnose(snap.platform, snap.interpreter, snap.probes, expectations=Expectations(gpu=True))
    assert [f.code for f in report.primary] == ["ED152"]
    assert [f.code for f in report.consequences(report.primary[0])] == ["ED701"]
