"""The gpu_vendors probe on scripted machines: AMD GPUs through the KFD topology or rocminfo, Intel
GPUs by device id, and what becomes of sysfs that cannot be read and of a rocminfo that hangs,
fails or prints garbage (facts, never tracebacks or hangs). No program runs without an AMD GPU."""

from __future__ import annotations

import pytest

from envdoctor.host.base import CommandResult
from envdoctor.model.findings import PlatformInfo
from envdoctor.probes import gpu_vendors
from envdoctor.probes.base import NotApplicable
from envdoctor.probes.gpu_vendors import GpuVendorFacts, ToolStatus, Vendor, parse_rocminfo
from tests.host_builder import WINDOWS_11, Machine
from tests.support import context

DRM = gpu_vendors.DRM
KFD = gpu_vendors.KFD_NODES
ROCMINFO = "/opt/rocm/bin/rocminfo"
SITE = "/home/user/.venv/lib/python3.11/site-packages"  # tests.support.PYTHON's

ROCMINFO_OUTPUT = """ROCk module is loaded
*******
Agent 1
*******
  Name:                    AMD Ryzen 9 7950X 16-Core Processor
  Marketing Name:          AMD Ryzen 9 7950X 16-Core Processor
*******
Agent 2
*******
  Name:                    gfx1100
  Uuid:                    GPU-XX
  Marketing Name:          Radeon RX 7900 XTX
  Vendor Name:             AMD
"""


def _card(machine: Machine, card: str, vendor: str, device: str, driver: str, slot: str) -> None:
    base = f"{DRM}/{card}/device"
    machine.file(f"{base}/vendor", vendor + "\n").file(f"{base}/device", device + "\n")
    machine.file(f"{base}/uevent", f"DRIVER={driver}\nPCI_SLOT_NAME={slot}\n")


def _kfd_node(machine: Machine, node: str, gfx_version: int, device_id: int, cpu_cores: int = 0) -> None:
    simd = 0 if gfx_version == 0 else 192
    machine.file(
        f"{KFD}/{node}/properties",
        f"cpu_cores_count {cpu_cores}\nsimd_count {simd}\ngfx_target_version {gfx_version}\n"
        f"vendor_id 4098\ndevice_id {device_id}\n",
    )


def _machine(env: dict[str, str] | None = None) -> Machine:
    machine = Machine(env=env)
    machine.folder(DRM)
    machine.absent(gpu_vendors.ROCM_VERSION_FILE)
    machine.program("test", None)  # no device-file test unless the test scripts one
    return machine


def _collect(machine: Machine) -> GpuVendorFacts:
    return gpu_vendors.collect(context(machine.host))


def _amd_without_kfd(machine: Machine) -> None:
    _card(machine, "card0", "0x1002", "0x744c", "amdgpu", "0000:03:00.0")
    machine.host.dirs[DRM] = ("card0", "card0-DP-1", "renderD128")


def test_amd_gpu_through_the_kfd_topology_runs_no_program() -> None:
    machine = _machine({"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})
    _card(machine, "card1", "0x1002", "0x744c", "amdgpu", "0000:03:00.0")
    _card(machine, "card0", "0x1002", "0x164e", "amdgpu", "0000:12:00.0")  # Raphael iGPU
    _kfd_node(machine, "0", 0, 0, cpu_cores=16)  # the CPU node
    _kfd_node(machine, "1", 110000, 0x744C)
    _kfd_node(machine, "2", 100306, 0x164E, cpu_cores=0)
    machine.file(gpu_vendors.KFD_DEVICE)
    facts = _collect(machine)
    assert [g.card for g in facts.gpus] == ["card0", "card1"]
    by_card = {g.card: g for g in facts.gpus}
    assert by_card["card1"].gfx_target == "gfx1100" and by_card["card1"].driver == "amdgpu"
    assert by_card["card1"].pci_address == "0000:03:00.0"
    assert by_card["card0"].gfx_target == "gfx1036"
    assert facts.hsa_override == "11.0.0" and facts.kfd_device is True and facts.tool is None
    assert not [c for c in machine.host.calls if c and not c[0].startswith(("url",))]
    line = gpu_vendors.describe(facts)
    assert "Radeon RX 7900 XTX/XT/GRE, PRO W7900 (gfx1100)" in line
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0" in line


def test_an_apu_gpu_node_is_integrated() -> None:
    machine = _machine()
    _card(machine, "card0", "0x1002", "0x15bf", "amdgpu", "0000:c4:00.0")
    _kfd_node(machine, "1", 110003, 0x15BF, cpu_cores=8)
    machine.absent(gpu_vendors.KFD_DEVICE)
    facts = _collect(machine)
    assert facts.amd[0].gfx_target == "gfx1103" and facts.amd[0].integrated is True
    assert facts.kfd_device is False
    assert "no /dev/kfd" in gpu_vendors.describe(facts)


def test_without_kfd_rocminfo_names_the_gfx_target() -> None:
    machine = _machine()
    _amd_without_kfd(machine)
    machine.program("rocminfo", ROCMINFO).command((ROCMINFO,), ROCMINFO_OUTPUT)
    facts = _collect(machine)
    assert facts.amd[0].gfx_target == "gfx1100" and facts.amd[0].name == "Radeon RX 7900 XTX"
    assert facts.tool is not None and facts.tool.status is ToolStatus.OK
    assert gpu_vendors.describe(facts).startswith("Radeon RX 7900 XTX (gfx1100)")


def test_a_hanging_rocminfo_is_a_fact_with_its_limit() -> None:
    machine = _machine()
    _amd_without_kfd(machine)
    machine.program("rocminfo", ROCMINFO)
    machine.host.commands[(ROCMINFO,)] = CommandResult(returncode=None, timed_out=True)
    facts = _collect(machine)
    assert facts.tool is not None and facts.tool.status is ToolStatus.TIMED_OUT
    assert facts.amd[0].gfx_target is None
    line = gpu_vendors.describe(facts)
    assert "gfx target unknown" in line and "rocminfo" in line and "stopped" in line


@pytest.mark.parametrize(
    ("result", "status"),
    [
        (
            CommandResult(returncode=0, stdout="\x00\x17 garbage \ufffd\nName: not-a-gpu\n"),
            ToolStatus.GARBLED,
        ),
        (
            CommandResult(returncode=1, stderr="hsa api call failure at: rocminfo.cc:1306\n"),
            ToolStatus.FAILED,
        ),
        (CommandResult(returncode=None, start_error="permission denied"), ToolStatus.FAILED),
    ],
)
def test_rocminfo_that_fails_or_prints_garbage(result: CommandResult, status: ToolStatus) -> None:
    machine = _machine()
    _amd_without_kfd(machine)
    machine.program("rocminfo", ROCMINFO)
    machine.host.commands[(ROCMINFO,)] = result
    facts = _collect(machine)
    assert facts.tool is not None and facts.tool.status is status and facts.tool.detail
    assert facts.amd[0].gfx_target is None
    assert facts.tool.detail in gpu_vendors.describe(facts)


def test_no_rocminfo_on_path() -> None:
    machine = _machine()
    _amd_without_kfd(machine)
    machine.program("rocminfo", None)
    facts = _collect(machine)
    assert facts.tool is not None and facts.tool.status is ToolStatus.NOT_FOUND
    assert "rocminfo: not found" in gpu_vendors.describe(facts)


def test_unreadable_sysfs_entries_are_facts() -> None:
    machine = _machine()
    machine.host.dirs[DRM] = ("card0", "card1")
    machine.folder(f"{DRM}/card0/device").folder(f"{DRM}/card1/device")
    machine.host.unreadable.add(f"{DRM}/card0/device/vendor")
    _card(machine, "card1", "0x1002", "0x73df", "amdgpu", "0000:03:00.0")
    machine.host.dirs[DRM] = ("card0", "card1")
    machine.folder(KFD)
    machine.host.unreadable.add(f"{KFD}/1/properties")
    machine.host.dirs[KFD] = ("1",)
    machine.program("rocminfo", None)
    machine.absent(gpu_vendors.KFD_DEVICE)
    facts = _collect(machine)
    assert [g.card for g in facts.gpus] == ["card1"]
    assert len(facts.errors) == 2 and all("Permission denied" in e for e in facts.errors)
    assert "2 sysfs entries unreadable" in gpu_vendors.describe(facts)


def test_an_unlistable_drm_folder_is_a_fact() -> None:
    machine = Machine()
    machine.host.dirs[DRM] = ()
    machine.host.unreadable.add(DRM)
    original = machine.host.list_dir

    def refuse(path: str) -> tuple[str, ...]:
        if path == DRM:
            raise PermissionError(13, "Permission denied", path)
        return original(path)

    machine.host.list_dir = refuse  # type: ignore[method-assign]
    facts = _collect(machine)
    assert facts.gpus == () and facts.errors == (f"{DRM}: Permission denied",)


def test_intel_gpus_by_device_id_and_nvidia_left_to_nvml() -> None:
    machine = _machine()
    _card(machine, "card0", "0x8086", "0x3e92", "i915", "0000:00:02.0")  # UHD 630: not an XPU
    _card(machine, "card1", "0x8086", "0x56a0", "i915", "0000:03:00.0")  # Arc A770
    _card(machine, "card2", "0x10de", "0x2684", "nvidia", "0000:04:00.0")
    machine.absent(SITE)  # intel_extension_for_pytorch is looked for beside an Intel GPU
    facts = _collect(machine)
    assert [g.vendor for g in facts.gpus] == [Vendor.INTEL, Vendor.INTEL]
    assert [g.xpu_family for g in facts.xpu_gpus] == ["Intel Arc A-series (Alchemist)"]
    assert facts.kfd_device is None and facts.tool is None and not machine.host.calls
    assert "Intel GPU (0x3e92, i915)" in gpu_vendors.describe(facts)


def test_no_drm_folder_means_no_gpu_and_no_reads() -> None:
    machine = Machine()  # nothing scripted: a strict host fails on any read or program
    facts = _collect(machine)
    assert facts == GpuVendorFacts()
    assert gpu_vendors.describe(facts) == "no AMD or Intel GPU"


def test_windows_is_not_applicable() -> None:
    with pytest.raises(NotApplicable):
        _collect(Machine(platform=WINDOWS_11))


def test_rocminfo_parser_pairs_names_with_marketing_names() -> None:
    agents = parse_rocminfo(ROCMINFO_OUTPUT + "  Name:                    gfx90a\n")
    assert agents == [("gfx1100", "Radeon RX 7900 XTX"), ("gfx90a", None)]
    assert parse_rocminfo("") == []


def test_the_registered_probe_is_this_one() -> None:
    assert gpu_vendors.PROBE.collect is gpu_vendors.collect and gpu_vendors.PROBE.timeout <= 10


def test_install_plans_rocm_for_an_amd_gpu_it_detects() -> None:
    from envdoctor.install.session import Given, run
    from tests.machine_sources import this_machine

    machine = this_machine()
    machine.program("test", None)
    _card(machine, "card1", "0x1002", "0x744c", "amdgpu", "0000:03:00.0")
    machine.host.dirs[DRM] = ("card1",)
    _kfd_node(machine, "1", 110000, 0x744C)
    machine.file(gpu_vendors.KFD_DEVICE)
    machine.absent(gpu_vendors.ROCM_VERSION_FILE)
    session = run(Given(offline=True), machine.host)
    inputs = {i.name: (i.value, i.origin) for i in session.inputs}
    assert inputs["AMD/Intel GPUs"] == ("Radeon RX 7900 XTX/XT/GRE, PRO W7900 (gfx1100)", "detected")
    assert session.target.gfx_targets == ("gfx1100",)
    assert session.plan.variant is not None and session.plan.variant.startswith("rocm")
