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


# --- device files, ROCm's order, variables, WSL and oneAPI -----------------------------------------

TEST = "/usr/bin/test"


def _amd_with_render(machine: Machine) -> None:
    _card(machine, "card1", "0x1002", "0x744c", "amdgpu", "0000:03:00.0")
    _card(machine, "card0", "0x1002", "0x164e", "amdgpu", "0000:12:00.0")
    machine.files(f"{DRM}/card1/device/drm", "card1", "renderD129")
    machine.files(f"{DRM}/card0/device/drm", "card0", "renderD128")
    _kfd_node(machine, "0", 0, 0, cpu_cores=16)
    _kfd_node(machine, "1", 100306, 0x164E, cpu_cores=8)  # the iGPU comes first in the topology
    _kfd_node(machine, "2", 110000, 0x744C)
    machine.file(gpu_vendors.KFD_DEVICE).file("/dev/dri/renderD128").file("/dev/dri/renderD129")


def test_each_gpu_gets_its_render_node_and_rocms_index() -> None:
    machine = _machine({"HIP_VISIBLE_DEVICES": "1", "ROCR_VISIBLE_DEVICES": "GPU-1"})
    _amd_with_render(machine)
    machine.program("test", TEST)
    for path in (gpu_vendors.KFD_DEVICE, "/dev/dri/renderD128", "/dev/dri/renderD129"):
        machine.command((TEST, "-r", path, "-a", "-w", path), "")
    facts = _collect(machine)
    by_card = {g.card: g for g in facts.gpus}
    assert by_card["card0"].hip_index == 0 and by_card["card0"].integrated is True
    assert by_card["card1"].hip_index == 1 and by_card["card1"].render_node == "/dev/dri/renderD129"
    assert facts.hip_visible_devices == "1" and facts.rocr_visible_devices == "GPU-1"
    assert [n.usable for n in facts.device_nodes] == [True, True, True] and facts.user_groups is None
    assert not [c for c in machine.host.calls if c[0] in ("/usr/bin/stat", "/usr/bin/id")]


def test_a_device_file_this_user_cannot_open_is_looked_at_with_the_users_groups() -> None:
    machine = _machine()
    _amd_with_render(machine)
    machine.program("test", TEST).program("stat", "/usr/bin/stat").program("id", "/usr/bin/id")
    machine.command((TEST, "-r", "/dev/kfd", "-a", "-w", "/dev/kfd"), "", returncode=1)
    machine.command((TEST, "-r", "/dev/dri/renderD128", "-a", "-w", "/dev/dri/renderD128"), "", returncode=2)
    machine.command((TEST, "-r", "/dev/dri/renderD129", "-a", "-w", "/dev/dri/renderD129"), "")
    machine.command(("/usr/bin/stat", "-L", "-c", "%A %U %G", "/dev/kfd"), "crw-rw---- root render\n")
    machine.command(("/usr/bin/id", "-Gn"), "user adm sudo\n")
    facts = _collect(machine)
    kfd, igpu, card = facts.device_nodes
    assert kfd == gpu_vendors.DeviceNode("/dev/kfd", False, "crw-rw----", "root", "render")
    assert igpu.usable is None and card.usable is True  # `test` said neither yes nor no
    assert facts.user_groups == ("user", "adm", "sudo") and facts.unusable_nodes == (kfd,)
    assert "/dev/kfd not usable by this user" in gpu_vendors.describe(facts)


def test_garbled_stat_output_and_no_test_program_leave_the_facts_unknown() -> None:
    machine = _machine()
    _amd_with_render(machine)
    facts = _collect(machine)  # `test` is not on PATH here
    assert [n.usable for n in facts.device_nodes] == [None, None, None]
    machine = _machine()
    _amd_with_render(machine)
    machine.program("test", TEST).program("stat", "/usr/bin/stat").program("id", None)
    for path in (gpu_vendors.KFD_DEVICE, "/dev/dri/renderD128", "/dev/dri/renderD129"):
        machine.command((TEST, "-r", path, "-a", "-w", path), "", returncode=1)
        machine.command(("/usr/bin/stat", "-L", "-c", "%A %U %G", path), "stat: cannot statx\n", returncode=1)
    facts = _collect(machine)
    assert all(n.usable is False and n.mode is None for n in facts.device_nodes) and facts.user_groups is None


def test_wsl_looks_for_the_hsa_runtime_torch_carries() -> None:
    machine = _machine()
    machine.file(gpu_vendors.DXG)
    machine.files(f"{SITE}/torch/lib", "libc10_hip.so", "libhsa-runtime64.so", "libtorch_hip.so")
    machine.file(gpu_vendors.SYSTEM_HSA_RUNTIME)
    facts = _collect(machine)
    assert facts.gpus == () and facts.torch_hsa_runtime == ("libhsa-runtime64.so",)
    assert facts.system_hsa_runtime is True
    plain = _collect(_machine())  # no /dev/dxg: not looked for
    assert plain.torch_hsa_runtime is None and plain.system_hsa_runtime is None


def test_oneapi_releases_and_the_intel_extension_are_read_where_oneapi_is() -> None:
    machine = _machine()
    machine.files(f"{gpu_vendors.ONEAPI_ROOT}/compiler", "2023.2.0", "2024.0", "latest")
    machine.files(
        SITE, "intel_extension_for_pytorch-2.1.10+xpu.dist-info", "torch-2.1.0a0+cxx11.abi.dist-info"
    )
    facts = _collect(machine)
    assert facts.oneapi_versions == ("2023.2.0", "2024.0") and facts.ipex_version == "2.1.10+xpu"


# --- macOS ---------------------------------------------------------------------------------------------

SYSCTL = "/usr/sbin/sysctl"
SEQUOIA = PlatformInfo("Darwin", "24.1.0", "Darwin Kernel Version 24.1.0", "x86_64")


def _mac(env: dict[str, str] | None = None) -> Machine:
    machine = Machine(platform=SEQUOIA, env=env)
    machine.program("sysctl", SYSCTL)
    return machine


def test_a_mac_says_its_chip_and_version_through_one_sysctl() -> None:
    machine = _mac({"PYTORCH_ENABLE_MPS_FALLBACK": "1"})
    answer = "hw.optional.arm64: 1\nmachdep.cpu.brand_string: Apple M2 Pro\nkern.osproductversion: 15.1\n"
    machine.command((SYSCTL, *gpu_vendors.SYSCTL_NAMES), answer)
    facts = _collect(machine)
    assert facts.apple == gpu_vendors.AppleFacts(True, "Apple M2 Pro", "15.1", "1", None)
    assert gpu_vendors.describe(facts) == "Apple M2 Pro, macOS 15.1; PYTORCH_ENABLE_MPS_FALLBACK=1"


def test_an_intel_mac_has_no_arm64_name_and_a_silent_sysctl_is_a_fact() -> None:
    machine = _mac()
    intel_answer = (
        "machdep.cpu.brand_string: Intel(R) Core(TM) i7-9750H CPU @ 2.60GHz\nkern.osproductversion: 14.6\n"
    )
    machine.host.commands[(SYSCTL, *gpu_vendors.SYSCTL_NAMES)] = CommandResult(
        returncode=1, stdout=intel_answer, stderr="sysctl: unknown oid 'hw.optional.arm64'\n"
    )
    apple = _collect(machine).apple
    assert apple is not None and apple.apple_silicon is False and apple.macos_version == "14.6"
    machine = _mac()
    machine.host.commands[(SYSCTL, *gpu_vendors.SYSCTL_NAMES)] = CommandResult(
        returncode=None, timed_out=True
    )
    stopped = _collect(machine)
    assert stopped.apple is not None and stopped.apple.apple_silicon is None
    assert stopped.apple.tool is not None and stopped.apple.tool.status is ToolStatus.TIMED_OUT
    assert "macOS (version unknown)" in gpu_vendors.describe(stopped)


def test_garbage_from_sysctl_gives_no_version() -> None:
    assert gpu_vendors.parse_sysctl("kern.osproductversion: 15.1\nother.name: 3\ngarbage") == {
        "kern.osproductversion": "15.1"
    }
    machine = _mac()
    machine.command((SYSCTL, *gpu_vendors.SYSCTL_NAMES), "kern.osproductversion: fifteen\n")
    apple = _collect(machine).apple
    assert apple is not None and apple.macos_version is None and apple.apple_silicon is False


def test_without_a_working_target_the_environment_is_not_listed() -> None:
    from envdoctor.model.findings import Interpreter
    from envdoctor.probes.base import ProbeContext
    from envdoctor.target import Target

    machine = _machine()
    machine.file(gpu_vendors.DXG).file(gpu_vendors.SYSTEM_HSA_RUNTIME)
    nobody = Target(Interpreter("/gone/bin/python", "given with --python"))  # never asked: no info
    facts = gpu_vendors.collect(ProbeContext(host=machine.host, target=nobody))
    assert facts.torch_hsa_runtime is None and facts.system_hsa_runtime is True
