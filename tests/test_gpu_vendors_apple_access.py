"""Apple, device-file, iGPU, WSL and oneAPI rules of the gpu_vendors area (ED140-ED143, ED156-ED158,
and what ED150-ED155 learned from the corpus), each on the edge cases its threads and its doubts
name, through the engine so that folding and error evidence are as `check` and `why` have them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from envdoctor.engine import diagnose
from envdoctor.knowledge import apple
from envdoctor.knowledge import oneapi as known
from envdoctor.model.findings import Finding, Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes.gpu_access import GpuAccessFacts
from envdoctor.probes.gpu_vendors import AppleFacts, DeviceNode, GpuVendorFacts, Vendor, VendorGpu
from envdoctor.probes.nvml import NvmlFacts, NvmlStatus
from envdoctor.probes.torch_build import AcceleratorFacts, TorchDevice, TorchFacts
from envdoctor.target import PythonInfo

LINUX = PlatformInfo("Linux", "6.8.0-45-generic", "#45-Ubuntu SMP", "x86_64")
MAC = PlatformInfo("Darwin", "24.1.0", "Darwin Kernel Version 24.1.0", "arm64")
INTEL_MAC = PlatformInfo("Darwin", "23.6.0", "Darwin Kernel Version 23.6.0", "x86_64")
NO_NVIDIA = NvmlFacts(status=NvmlStatus.LIBRARY_NOT_FOUND, error="NVML Shared Library Not Found")
ROCM62 = ("gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100")
SILICON = AppleFacts(apple_silicon=True, chip="Apple M2 Pro", macos_version="15.1")


def python(machine: str = "arm64", version: str = "3.12.7", mac: str | None = None) -> PythonInfo:
    return PythonInfo(
        "/Users/user/.venv/bin/python",
        version,
        "CPython",
        64,
        "/Users/user/.venv",
        True,
        False,
        False,
        machine,
        mac,
    )


def torch(version: str = "2.13.0", **more: Any) -> TorchFacts:
    fields: dict[str, Any] = {
        "installed": True,
        "version": version,
        "dist_version": version,
        "cuda_available": False,
    }
    fields.update(more)
    return TorchFacts(**fields)


def amd(
    gfx: str, device: str, integrated: bool = False, hip: int | None = None, card: str = "card1"
) -> VendorGpu:
    return VendorGpu(
        card, Vendor.AMD, device, "0000:03:00.0", "amdgpu", gfx, integrated=integrated, hip_index=hip
    )


def intel(device: str = "0x56a0", family: str | None = "Intel Arc A-series (Alchemist)") -> VendorGpu:
    return VendorGpu("card0", Vendor.INTEL, device, "0000:03:00.0", "xe", xpu_family=family)


def rocm(
    version: str = "2.5.1+rocm6.2", available: bool = True, count: int | None = None, **more: Any
) -> TorchFacts:
    devices = (TorchDevice(0, "AMD Radeon", (10, 3)),) if available else ()
    return torch(
        version,
        hip="6.2.41133-dd7f95766",
        arch_list=ROCM62,
        cuda_available=available,
        device_count=count if count is not None else len(devices),
        devices=devices,
        accelerators=AcceleratorFacts(),
        **more,
    )


def check(
    platform: PlatformInfo = LINUX,
    *facts: object,
    pasted: str | None = None,
) -> dict[str, Finding]:
    names = {
        PythonInfo: "python",
        TorchFacts: "torch",
        GpuVendorFacts: "gpu_vendors",
        NvmlFacts: "nvml",
        GpuAccessFacts: "gpu_access",
    }
    probes = tuple(ProbeResult(names[type(f)], ProbeStatus.OK, 0.0, f) for f in facts)
    report = diagnose(platform, Interpreter("/env/bin/python", "r"), probes, pasted=pasted)
    return {f.code: f for f in report.findings}


def said(finding: Finding) -> str:
    parts = [finding.title, finding.detail]
    for fix in finding.fixes:
        parts += [fix.summary, *fix.commands]
    return "\n".join(parts)


# --- knowledge --------------------------------------------------------------------------------------


def test_mps_minimums_by_release_and_feature() -> None:
    assert apple.mps_minimum("1.11.0") is None  # no MPS before 1.12
    assert apple.mps_minimum("1.13.0.dev20220525").macos == "12.3"  # type: ignore[union-attr]
    assert apple.mps_minimum("2.5.1").macos == "13.0"  # type: ignore[union-attr]
    assert apple.mps_minimum("2.13.0+cpu").macos == "14.0"  # type: ignore[union-attr]
    assert apple.mps_minimum("99.0") is not None and apple.mps_minimum("not a version") is None
    bf16 = apple.feature_minimum("bfloat16")
    assert bf16 is not None and bf16.macos == "14.0" and bf16.provenance.source
    assert (
        apple.older("12.7.6", "13.0")
        and apple.older("13.0", "13") is False
        and apple.older(None, "13.0") is None
    )
    assert (
        apple.macos_name("13.0") == "macOS 13 (Ventura)"
        and apple.macos_name("12.3") == "macOS 12.3 (Monterey)"
    )
    assert apple.last_release_for("macos-x86_64") == "2.2.2"
    assert apple.last_release_pythons("macos-x86_64")[-1] == "3.12"


def test_ipex_oneapi_pairs_and_libraries() -> None:
    need = known.ipex_oneapi("2.1.10+xpu")
    assert need is not None and need.oneapi == "2024.0" and need.provenance.source
    assert known.ipex_oneapi("2.1.10+cpu") is None and known.ipex_oneapi("9.9.9+xpu") is None
    library = known.library_oneapi("libmkl_sycl.so.3")
    assert library is not None and library.oneapi == "2023"
    assert known.oneapi_matches("2023.2.0", "2023.2") and known.oneapi_matches("2023.2.0", "2023")
    assert not known.oneapi_matches("2024.0", "2023") and not known.oneapi_matches("2023.1.0", "2023.2")


# --- ED140 Rosetta ----------------------------------------------------------------------------------


def test_an_x86_64_python_on_apple_silicon_is_rosetta_and_folds_the_intel_mac_finding() -> None:
    found = check(
        MAC, python("x86_64", mac="10.16"), GpuVendorFacts(apple=SILICON), torch("2.2.2", mps_available=False)
    )
    finding = found["ED140"]
    assert "Apple M2 Pro" in finding.title and "no MPS" in finding.title
    assert "macOS 10.16" in finding.detail and "is_available() is False" in finding.detail
    (native,) = finding.fixes  # one fix: the new Python, then torch installed with it
    assert native.commands[-1] == "python -m pip install torch==2.13.0 torchvision==0.28.0"
    assert "platform.machine()" in native.commands[0] and native.kind.value == "manual"
    assert "ED142" not in found or found["ED142"].folded_under == "ED140"


def test_rosetta_is_seen_from_a_native_envdoctor_without_sysctl() -> None:
    found = check(MAC, python("x86_64"), GpuVendorFacts(apple=AppleFacts()), torch(mps_available=False))
    assert "ED140" in found and "envdoctor runs as arm64" in found["ED140"].evidence


@pytest.mark.parametrize(
    ("platform", "machine", "silicon"),
    [(MAC, "arm64", True), (INTEL_MAC, "x86_64", False), (LINUX, "x86_64", None)],
)
def test_no_rosetta_finding_for_native_pythons_and_intel_macs(
    platform: PlatformInfo, machine: str, silicon: bool | None
) -> None:
    facts = (
        GpuVendorFacts(apple=AppleFacts(apple_silicon=silicon))
        if platform.system == "Darwin"
        else GpuVendorFacts()
    )
    assert "ED140" not in check(platform, python(machine), facts, torch("2.2.2", mps_available=True))


# --- ED141 macOS minimums ---------------------------------------------------------------------------


def test_a_macos_below_the_mps_floor_names_the_floor_and_the_last_release_that_fits() -> None:
    old = AppleFacts(apple_silicon=True, chip="Apple M1", macos_version="12.7.6")
    text = "RuntimeError: The MPS backend is supported on MacOS 12.3+."
    found = check(MAC, python(), GpuVendorFacts(apple=old), torch("2.5.1", mps_available=False), pasted=text)
    finding = found["ED141"]
    assert "macOS 13 (Ventura)" in finding.title and "out of date" in finding.detail
    assert any("torch==2.4.1" in c for f in finding.fixes for c in f.commands)


def test_below_12_3_no_torch_has_mps() -> None:
    old = AppleFacts(apple_silicon=True, macos_version="12.2.1")
    finding = check(MAC, python(), GpuVendorFacts(apple=old), torch("1.13.1", mps_available=False))["ED141"]
    assert "CPU only" in finding.fixes[-1].summary


def test_bfloat16_needs_macos_14_only_when_an_error_shows_it_was_used() -> None:
    ventura = AppleFacts(apple_silicon=True, macos_version="13.6")
    facts = (python(), GpuVendorFacts(apple=ventura), torch("2.9.1", mps_available=True))
    assert "ED141" not in check(MAC, *facts)
    found = check(MAC, *facts, pasted="TypeError: MPS BFloat16 is only supported on MacOS 14 or newer")
    assert "bfloat16" in found["ED141"].title and "float16" in said(found["ED141"])
    sonoma = GpuVendorFacts(apple=replace(ventura, macos_version="14.1"))
    assert "ED141" not in check(
        MAC,
        python(),
        sonoma,
        torch("2.9.1", mps_available=True),
        pasted="MPS BFloat16 is only supported on MacOS 14 or newer",
    )


def test_a_working_mps_or_an_unknown_macos_is_not_judged() -> None:
    assert "ED141" not in check(MAC, python(), GpuVendorFacts(apple=SILICON), torch(mps_available=True))
    unknown = GpuVendorFacts(apple=AppleFacts(apple_silicon=True))
    assert "ED141" not in check(MAC, python(), unknown, torch(mps_available=False))


# --- ED142 Intel Macs -------------------------------------------------------------------------------


def test_an_intel_mac_with_torch_222_installed_is_left_alone() -> None:
    facts = GpuVendorFacts(apple=AppleFacts(apple_silicon=False, macos_version="14.6"))
    assert "ED142" not in check(INTEL_MAC, python("x86_64", "3.11.9"), facts, torch("2.2.2"))


def test_an_intel_mac_without_torch_or_with_the_pip_error_gets_torch_222() -> None:
    facts = GpuVendorFacts(apple=AppleFacts(apple_silicon=False, macos_version="14.6"))
    missing = check(INTEL_MAC, python("x86_64", "3.11.9"), facts, TorchFacts(installed=False))
    assert "2.2.2" in missing["ED142"].title
    text = (
        "ERROR: Could not find a version that satisfies the requirement torch==2.6.0 (from versions: 2.0.0, "
        "2.1.0, 2.2.0, 2.2.1, 2.2.2)"
    )
    pasted = check(INTEL_MAC, python("x86_64", "3.11.9"), facts, torch("2.2.2"), pasted=text)
    assert "torch==2.6.0 cannot be installed" in pasted["ED142"].detail


def test_python_313_on_an_intel_mac_needs_an_older_python() -> None:
    facts = GpuVendorFacts(apple=AppleFacts(apple_silicon=False))
    found = check(INTEL_MAC, python("x86_64", "3.13.1"), facts, TorchFacts(installed=False))
    assert "Python 3.12" in found["ED142"].fixes[0].summary
    # ED021 (no wheel for Python 3.13) shows the same command first; a report prints a command once.
    shown = [c for code in ("ED021", "ED142") for fix in found[code].fixes for c in fix.commands]
    assert shown.count("python3.12 -m venv .venv") == 1


# --- ED143 MPS operators ----------------------------------------------------------------------------

OP = "NotImplementedError: The operator 'aten::roll' is not currently implemented for the MPS device."


def test_a_missing_mps_operator_gets_the_fallback_variable_before_import() -> None:
    finding = check(MAC, python(), GpuVendorFacts(apple=SILICON), torch("2.1.0"), pasted=OP)["ED143"]
    assert "aten::roll" in finding.title and "is not set" in finding.detail
    assert finding.fixes[0].commands == ("export PYTORCH_ENABLE_MPS_FALLBACK=1",)
    assert "Upgrade torch" in finding.fixes[1].summary and finding.fixes[1].commands


def test_a_fallback_set_here_means_it_came_after_the_import() -> None:
    facts = GpuVendorFacts(apple=replace(SILICON, mps_fallback="1"))
    finding = check(MAC, python(), facts, torch(), pasted=OP)["ED143"]
    assert "after `import torch`" in finding.detail and "newer releases" in finding.fixes[1].summary


def test_no_operator_finding_without_the_error_or_off_macos() -> None:
    assert "ED143" not in check(MAC, python(), GpuVendorFacts(apple=SILICON), torch())
    assert "ED143" not in check(LINUX, python("x86_64"), GpuVendorFacts(), torch(), pasted=OP)


# --- ED150-ED152: what the corpus taught ------------------------------------------------------------


def test_an_apu_of_renoir_or_barcelo_runs_as_gfx900_and_the_override_is_no_wrong_family() -> None:
    gpu = amd("gfx90c", "0x15e7", integrated=True, hip=0)
    without = check(LINUX, NO_NVIDIA, GpuVendorFacts(gpus=(gpu,)), rocm())
    assert "HSA_OVERRIDE_GFX_VERSION=9.0.0" in said(without["ED150"])
    overridden = check(LINUX, NO_NVIDIA, GpuVendorFacts(gpus=(gpu,), hsa_override="9.0.0"), rocm())
    assert "ED150" not in overridden and "ED151" not in overridden


def test_an_empty_override_is_named_empty_and_the_missing_target_folds_under_it() -> None:
    found = check(LINUX, NO_NVIDIA, GpuVendorFacts(gpus=(amd("gfx1100", "0x744c"),), hsa_override=""), rocm())
    assert (
        found["ED151"].title.startswith("An empty HSA_OVERRIDE_GFX_VERSION")
        and "gfx000" in found["ED151"].detail
    )
    wrong = GpuVendorFacts(gpus=(amd("gfx1102", "0x7480"),), hsa_override="10.3.0")
    folded = check(LINUX, NO_NVIDIA, wrong, rocm("2.3.0+rocm6.0"))
    assert folded["ED150"].folded_under == "ED151" and "11.0.0" in said(folded["ED151"])


def test_a_cuda_torch_beside_an_amd_gpu_no_rocm_build_serves_gets_the_cpu_build() -> None:
    raven = GpuVendorFacts(gpus=(amd("gfx902", "0x15dd", integrated=True),))
    cuda = torch("2.4.1", cuda="12.1", accelerators=AcceleratorFacts())
    finding = check(LINUX, NO_NVIDIA, python("x86_64", "3.11.9"), raven, cuda)["ED152"]
    assert "CUDA 12.1 build" in finding.title and "whl/cpu" in said(finding)
    assert "ED152" not in check(LINUX, NO_NVIDIA, raven, torch("2.4.1+cpu", accelerators=AcceleratorFacts()))


# --- ED155 on WSL, ED156 integrated GPUs --------------------------------------------------------------


def test_wsl_with_pytorchs_bundled_hsa_runtime() -> None:
    facts = GpuVendorFacts(torch_hsa_runtime=("libhsa-runtime64.so",), system_hsa_runtime=True)
    lib = "/env/lib/python3.12/site-packages/torch"
    finding = check(LINUX, NO_NVIDIA, facts, rocm(available=False, location=f"{lib}/__init__.py"))["ED155"]
    assert "WSL" in finding.title and f"rm {lib}/lib/libhsa-runtime64.so*" in said(finding)
    assert "amdgpu-install" not in said(finding)
    missing = replace(facts, system_hsa_runtime=False)
    assert "amdgpu-install" in said(check(LINUX, NO_NVIDIA, missing, rocm(available=False))["ED155"])
    assert "ED155" not in check(LINUX, NO_NVIDIA, GpuVendorFacts(), rocm(available=False))  # not WSL: no GPU


def test_an_integrated_gpu_beside_the_card_is_hidden_by_its_rocm_index() -> None:
    gpus = (amd("gfx1036", "0x164e", integrated=True, hip=0, card="card0"), amd("gfx1030", "0x73af", hip=1))
    finding = check(LINUX, NO_NVIDIA, GpuVendorFacts(gpus=gpus), rocm(count=2))["ED156"]
    assert (
        finding.fixes[0].commands == ("export HIP_VISIBLE_DEVICES=1",) and "BIOS" in finding.fixes[1].summary
    )


@pytest.mark.parametrize(
    "change",
    [
        {"hip_visible_devices": "0"},
        {"rocr_visible_devices": "GPU-1234"},
    ],
)
def test_no_integrated_gpu_finding_once_devices_are_chosen(change: dict[str, str]) -> None:
    gpus = (amd("gfx1036", "0x164e", integrated=True, hip=0, card="card0"), amd("gfx1030", "0x73af", hip=1))
    assert "ED156" not in check(LINUX, NO_NVIDIA, GpuVendorFacts(gpus=gpus, **change), rocm(count=2))  # type: ignore[arg-type]


def test_no_integrated_gpu_finding_when_torch_sees_the_card_alone_or_for_a_cpu_torch() -> None:
    gpus = GpuVendorFacts(
        gpus=(amd("gfx1036", "0x164e", integrated=True, card="card0"), amd("gfx1030", "0x73af"))
    )
    assert "ED156" not in check(LINUX, NO_NVIDIA, gpus, rocm(count=1))
    assert "ED156" not in check(LINUX, NO_NVIDIA, gpus, torch("2.5.1+cpu", accelerators=AcceleratorFacts()))
    unknown = GpuVendorFacts(gpus=tuple(replace(g, hip_index=None) for g in gpus.gpus))
    finding = check(LINUX, NO_NVIDIA, unknown, rocm(count=2))["ED156"]
    assert "rocm-smi" in finding.fixes[0].summary and finding.fixes[0].commands == (
        "export HIP_VISIBLE_DEVICES=0",
    )


# --- ED157 device files -----------------------------------------------------------------------------

RENDER = DeviceNode("/dev/dri/renderD128", False, "crw-rw----", "root", "render")


def test_a_user_outside_the_render_group_folds_the_unavailable_gpu_under_it() -> None:
    facts = GpuVendorFacts(gpus=(intel(),), device_nodes=(RENDER,), user_groups=("user", "sudo"))
    xpu = torch("2.13.0+xpu", accelerators=AcceleratorFacts(xpu="20250200", xpu_available=False))
    found = check(LINUX, NO_NVIDIA, facts, xpu)
    finding = found["ED157"]
    assert finding.fixes[0].commands == ('sudo usermod -aG render,video "$USER"',)
    assert "groups: user, sudo" in finding.detail and "dgpu-docs.intel.com" in (finding.fixes[0].link or "")
    assert found["ED154"].folded_under == "ED157"


def test_a_root_only_kfd_needs_a_udev_rule_and_a_container_needs_group_add() -> None:
    kfd = DeviceNode("/dev/kfd", False, "crw-------", "root", "root")
    facts = GpuVendorFacts(
        gpus=(amd("gfx900", "0x687f"),), kfd_device=True, device_nodes=(kfd,), user_groups=("video",)
    )
    finding = check(LINUX, NO_NVIDIA, facts, rocm(available=False))["ED157"]
    assert 'KERNEL=="kfd", GROUP="render", MODE="0660"' in said(finding)
    inside = check(LINUX, NO_NVIDIA, facts, GpuAccessFacts(container="docker"), rocm(available=False))[
        "ED157"
    ]
    assert "--group-add $(getent group render | cut -d: -f3)" in inside.fixes[0].commands[0]


def test_usable_or_untested_device_files_are_no_finding() -> None:
    nodes = (DeviceNode("/dev/kfd", True), DeviceNode("/dev/dri/renderD128", None))
    facts = GpuVendorFacts(gpus=(amd("gfx1100", "0x744c"),), kfd_device=True, device_nodes=nodes)
    assert "ED157" not in check(LINUX, NO_NVIDIA, facts, rocm())


# --- ED154 built without XPU, ED153 beside IPEX, ED158 oneAPI ------------------------------------------


def test_an_xpu_wheel_built_without_xpu_is_told_apart_from_a_missing_runtime() -> None:
    facts = GpuVendorFacts(gpus=(intel(),))
    nightly = torch("2.8.0.dev20250327+xpu", accelerators=AcceleratorFacts(xpu=None, xpu_available=False))
    finding = check(LINUX, NO_NVIDIA, python("x86_64"), facts, nightly)["ED154"]
    assert "built without XPU" in finding.title and "whl/xpu" in said(finding)
    assert "apt-get" not in said(finding)


def test_ipex_brings_xpu_to_its_own_torch_and_is_judged_by_its_oneapi() -> None:
    facts = GpuVendorFacts(gpus=(intel("0x0bd5", "Intel Data Center GPU Max (Ponte Vecchio)"),))
    ipex_torch = torch("2.1.0a0+cxx11.abi", accelerators=AcceleratorFacts())
    mismatch = replace(facts, oneapi_versions=("2023.2.0",), ipex_version="2.1.10+xpu")
    found = check(LINUX, NO_NVIDIA, mismatch, ipex_torch)
    assert "ED153" not in found and "needs oneAPI 2024.0" in found["ED158"].title
    matching = replace(mismatch, oneapi_versions=("2023.2.0", "2024.0"))
    assert "ED158" not in check(LINUX, NO_NVIDIA, matching, ipex_torch)
    unlisted = replace(mismatch, ipex_version="2.3.110+xpu")
    assert "ED158" not in check(LINUX, NO_NVIDIA, unlisted, ipex_torch)


def test_a_missing_oneapi_library_names_the_basekit_that_ships_it() -> None:
    text = "ImportError: libmkl_sycl.so.3: cannot open shared object file: No such file or directory"
    facts = GpuVendorFacts(gpus=(intel(),), oneapi_versions=("2024.0",))
    finding = check(LINUX, NO_NVIDIA, facts, torch("2.1.0a0+cxx11.abi"), pasted=text)["ED158"]
    assert (
        "oneAPI 2023" in finding.title and "libmkl_sycl.so.3 ships with the 2023 basekits" in finding.detail
    )
