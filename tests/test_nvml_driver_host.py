"""The host's side of the NVIDIA driver (NvmlFacts.host): what the nvml probe reads where the driver
does not work, on aarch64 boards and on NVSwitch systems, from a FakeHost's files."""

from __future__ import annotations

from envdoctor.host.base import CommandResult
from envdoctor.knowledge import jetson
from envdoctor.model.findings import PlatformInfo
from envdoctor.probes import nvml
from tests.host_builder import Machine
from tests.support import context, records

KERNEL = "6.8.0-49-generic"
PLATFORM = PlatformInfo("Linux", KERNEL, "#49-Ubuntu SMP", "x86_64")
COMM = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
SECURE_BOOT_ON = "\x06\x00\x00\x00\x01"
MODULES_DEP_WITH = (
    "kernel/drivers/net/e1000e/e1000e.ko.zst: kernel/drivers/ptp/ptp.ko.zst\n"
    "updates/dkms/nvidia-uvm.ko.zst: updates/dkms/nvidia.ko.zst\n"
    "updates/dkms/nvidia.ko.zst:\n"
)
MODULES_DEP_WITHOUT = (
    "kernel/drivers/net/e1000e/e1000e.ko.zst:\nkernel/drivers/gpu/drm/nouveau/nouveau.ko.zst:\n"
)


def _gpu(machine: Machine, address: str, driver: str | None) -> None:
    machine.file(f"{nvml.PCI_DEVICES}/{address}/vendor", "0x10de\n")
    machine.file(f"{nvml.PCI_DEVICES}/{address}/class", "0x030200\n")
    if driver:
        machine.link(f"{nvml.PCI_DEVICES}/{address}/driver", f"/sys/bus/pci/drivers/{driver}")


def broken_machine(status: str = "driver_not_loaded") -> Machine:
    machine = Machine(PLATFORM)
    machine.child("nvml_probe.py", {"record": "nvml", "status": status, "error": COMM})
    _gpu(machine, "0000:01:00.0", None)
    machine.folder("/lib/modules/6.8.0-45-generic").folder(f"/lib/modules/{KERNEL}")
    machine.file(f"/lib/modules/{KERNEL}/modules.dep", MODULES_DEP_WITHOUT)
    machine.file("/lib/modules/6.8.0-45-generic/modules.dep", MODULES_DEP_WITH)
    machine.files("/usr/lib/x86_64-linux-gnu", "libc.so.6", "libnvidia-ml.so.1", "libnvidia-ml.so.550.120")
    machine.file("/proc/modules", "e1000e 331776 0 - Live 0x0\nnouveau 3096576 2 - Live 0x0\n")
    machine.file(
        "/proc/cmdline", "BOOT_IMAGE=/vmlinuz root=UUID=1 ro quiet splash modprobe.blacklist=nvidia_drm\n"
    )
    machine.file(
        "/etc/modprobe.d/blacklist.conf", "# comment\nblacklist nouveau # trailing\nblacklist floppy\n"
    )
    machine.file("/lib/modprobe.d/blacklist-nvidia.conf", "blacklist nvidia\nalias nvidia off\n")
    machine.file("/lib/modprobe.d/other.txt", "blacklist nvidia\n")  # not a .conf: modprobe ignores it
    machine.file("/etc/prime-discrete", "off\n")
    machine.folder("/sys/firmware/efi/efivars")
    machine.file(nvml.SECURE_BOOT_VAR, SECURE_BOOT_ON)
    machine.folder("/var/lib/dkms/nvidia/550.120").folder("/var/lib/dkms/nvidia/550.120/6.8.0-45-generic")
    machine.folder("/var/lib/dkms/nvidia/550.120/source")
    machine.link("/var/lib/dkms/nvidia/kernel-6.8.0-45-generic-x86_64", "550.120/6.8.0-45-generic/x86_64")
    machine.folder("/usr/src/nvidia-550.120").folder("/usr/src/linux-headers-6.8.0-45")
    machine.absent(nvml.PROC_DRIVER)
    return machine


def test_a_driver_that_does_not_load_brings_the_host_facts_with_it() -> None:
    facts = nvml.collect(context(broken_machine().host))
    host = facts.host
    assert host is not None
    assert host.kernel == KERNEL
    assert host.module_indexed is True and host.module_file is None
    assert host.kernels_with_module == ("6.8.0-45-generic",)
    assert host.library_versions == ("550.120",)
    assert host.dkms == (nvml.DkmsBuild("nvidia", "550.120", ("6.8.0-45-generic",)),)
    assert host.module_sources == ("550.120",)
    assert host.pci == (nvml.PciBinding("0000:01:00.0", None),)
    assert host.loaded_modules == ("nouveau",) and host.nvidia_loaded is False
    assert host.secure_boot is True
    assert host.prime_profile == "off"
    blocks = {(b.module, b.source, b.how) for b in host.blocks or ()}
    assert blocks == {
        ("nouveau", "/etc/modprobe.d/blacklist.conf", "blacklist"),
        ("nvidia", "/lib/modprobe.d/blacklist-nvidia.conf", "blacklist"),
        ("nvidia", "/lib/modprobe.d/blacklist-nvidia.conf", "alias off"),
        ("nvidia_drm", "/proc/cmdline", "modprobe.blacklist="),
    }
    assert host.tegra_release is None and not host.jetson
    assert host.fabric_manager is None  # no NVSwitch: the Fabric Manager is not asked about


def test_the_bound_driver_and_the_running_kernels_module() -> None:
    machine = broken_machine()
    machine.host.files[f"/lib/modules/{KERNEL}/modules.dep"] = MODULES_DEP_WITH
    machine.link(f"{nvml.PCI_DEVICES}/0000:01:00.0/driver", "/sys/bus/pci/drivers/nouveau")
    host = nvml.collect(context(machine.host)).host
    assert host is not None
    assert host.module_file == "updates/dkms/nvidia.ko.zst"
    assert host.kernels_with_module == ()  # only looked for where the running kernel lacks it
    assert host.bound_to("nouveau") == (nvml.PciBinding("0000:01:00.0", "nouveau"),)


def test_a_working_driver_on_x86_reads_nothing_more() -> None:
    machine = Machine(PLATFORM)
    machine.child(
        "nvml_probe.py",
        {
            "record": "nvml",
            "status": "ok",
            "driver_version": "550.120",
            "gpus": [{"index": 0, "name": "A10"}],
        },
    )
    machine.absent(nvml.PCI_DEVICES)
    facts = nvml.collect(context(machine.host))
    assert facts.working and facts.host is None


def test_legacy_boot_has_no_secure_boot_and_unreadable_files_are_facts() -> None:
    machine = broken_machine()
    del machine.host.files[nvml.SECURE_BOOT_VAR]
    machine.host.dirs.pop("/sys/firmware/efi/efivars")
    machine.host.dirs.pop("/sys/firmware/efi")
    machine.host.unreadable.add("/etc/prime-discrete")
    host = nvml.collect(context(machine.host)).host
    assert host is not None and host.secure_boot is False
    assert host.prime_profile is None
    assert any("/etc/prime-discrete" in e for e in host.errors)


def test_an_nvswitch_system_asks_the_fabric_manager() -> None:
    machine = Machine(PLATFORM)
    machine.child(
        "nvml_probe.py",
        {
            "record": "nvml",
            "status": "ok",
            "driver_version": "550.54.15",
            "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "fabric_state": 1}],
        },
    )
    _gpu(machine, "0000:18:00.0", "nvidia")
    machine.file(f"{nvml.PCI_DEVICES}/0000:a0:00.0/vendor", "0x10de\n")
    machine.file(f"{nvml.PCI_DEVICES}/0000:a0:00.0/class", "0x068000\n")  # an NVSwitch
    machine.program("nv-fabricmanager", "/usr/bin/nv-fabricmanager").program(
        "systemctl", "/usr/bin/systemctl"
    )
    machine.command(("/usr/bin/nv-fabricmanager", "--version"), "Fabric Manager version is : 550.54.14\n")
    machine.command(("/usr/bin/systemctl", "is-active", "nvidia-fabricmanager"), "failed\n", returncode=3)
    machine.host.missing_ok = True  # the rest of the host tree: not there
    facts = nvml.collect(context(machine.host))
    host = facts.host
    assert host is not None
    assert host.nvswitches == 1 and host.gpu_fabric == ("not_started",)
    assert host.fabric_manager == "failed" and host.fabric_manager_version == "550.54.14"


def test_no_fabric_manager_installed() -> None:
    assert nvml.gpu_fabric_states({"gpus": [{"fabric_state": 3}, {"fabric_state": 0}, {}]}) == (
        "completed",
        "not_supported",
    )
    machine = Machine(PLATFORM)
    machine.program("nv-fabricmanager", None).program("systemctl", "/usr/bin/systemctl")
    machine.host.commands[("/usr/bin/systemctl", "is-active", "nvidia-fabricmanager")] = CommandResult(
        3, "inactive\n"
    )
    assert nvml._fabric_manager(machine.host, 5.0) == ("not-installed", None)


def test_a_jetson_reads_its_l4t_release_and_model() -> None:
    machine = Machine(PlatformInfo("Linux", "5.10.120-tegra", "#1 SMP PREEMPT", "aarch64"))
    machine.child(
        "nvml_probe.py",
        {"record": "nvml", "status": "library_not_found", "error": "NVML Shared Library Not Found"},
    )
    machine.file(
        jetson.release_file(),
        "# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64, "
        "DATE: Tue Aug  1 19:57:35 UTC 2023\n",
    )
    machine.file(jetson.model_file(), "NVIDIA Jetson Xavier NX Developer Kit\x00")
    machine.host.missing_ok = True
    host = nvml.collect(context(machine.host)).host
    assert host is not None and host.jetson
    assert host.tegra_release == "35.4.1" and host.tegra_model == "NVIDIA Jetson Xavier NX Developer Kit"


def test_parsers_on_recorded_texts() -> None:
    assert (
        nvml.parse_tegra_release("# R32 (release), REVISION: 4.3, GCID: 21589087, BOARD: t210ref") == "32.4.3"
    )
    assert (
        nvml.parse_tegra_release("# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic") == "36.4.3"
    )
    assert nvml.parse_tegra_release("garbage") is None
    proprietary = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  520.56.06  Thu Oct  6 21:38:55 UTC 2022"
    assert nvml.parse_kernel_module_version(proprietary) == "520.56.06"
    open_module = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.104.05  Release Build"
    assert nvml.parse_kernel_module_version(open_module) == "535.104.05"
    assert nvml.nvidia_module_in("updates/dkms/nvidia-current.ko: x\n") == "updates/dkms/nvidia-current.ko"
    assert nvml.nvidia_module_in("kernel/nvidia-535/nvidia.ko:\n") == "kernel/nvidia-535/nvidia.ko"
    assert nvml.nvidia_module_in("updates/dkms/nvidia_384.ko:\n") == "updates/dkms/nvidia_384.ko"
    assert nvml.nvidia_module_in("updates/dkms/nvidia-uvm.ko: updates/dkms/nvidia.ko\n") is None
    assert nvml.nvidia_module_in("updates/dkms/nvidia_384_uvm.ko:\n") is None
    conf = (
        "install nvidia /bin/false\ninstall nvidia-drm /usr/bin/true\nblacklist\noptions nouveau modeset=0\n"
    )
    assert [(b.module, b.how) for b in nvml.parse_modprobe_conf(conf, "f")] == [
        ("nvidia", "install /bin/false"),
        ("nvidia_drm", "install /usr/bin/true"),
    ]
    blocks = nvml.parse_cmdline_blocks("quiet rd.driver.blacklist=nouveau,nova-core nouveau.modeset=0")
    assert [(b.module, b.how) for b in blocks] == [
        ("nouveau", "rd.driver.blacklist="),
        ("nova_core", "rd.driver.blacklist="),
        ("nouveau", "nouveau.modeset=0"),
    ]


def test_the_child_reports_each_gpus_fabric_state() -> None:
    """nvml_probe.py's fabric query, against a stand-in pynvml with the struct NVML fills in."""
    import types

    from envdoctor.child import nvml_probe

    class Info:
        state = 0

    def query(handle: object, info: Info) -> None:
        info.state = 2

    fake = types.SimpleNamespace(nvmlDeviceGetGpuFabricInfo=query, c_nvmlGpuFabricInfo_t=Info)
    assert nvml_probe.fabric_state(fake, object()) == 2
    assert nvml_probe.fabric_state(types.SimpleNamespace(), object()) is None

    def unsupported(handle: object, info: Info) -> None:
        raise RuntimeError("Not Supported")

    fake.nvmlDeviceGetGpuFabricInfo = unsupported
    assert nvml_probe.fabric_state(fake, object()) is None


def test_records_of_the_child_are_unchanged_for_old_readers() -> None:
    outcome = records(
        {"record": "nvml", "status": "ok", "gpus": [{"index": 0, "name": "A", "fabric_state": 3}]}
    )
    facts = nvml._from_record(outcome.records[0], ())
    assert facts.gpus[0].name == "A"  # the extra key is the probe's, not the Gpu's
