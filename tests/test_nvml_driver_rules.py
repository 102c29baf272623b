"""ED103's ranked causes and ED130-ED137 on facts: the boundaries the fixtures and the corpus do not
pin down (a container or WSL, a cause the facts rule out, a JetPack that does have the library)."""

from __future__ import annotations

from dataclasses import replace

from envdoctor.engine import evaluate, fold
from envdoctor.knowledge import jetson
from envdoctor.knowledge.linux_drivers import driver_install
from envdoctor.model.findings import Finding, Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes.gpu_access import GpuAccessFacts
from envdoctor.probes.nvml import (
    DkmsBuild,
    DriverHostFacts,
    Gpu,
    ModuleBlock,
    NvmlFacts,
    NvmlStatus,
    PciBinding,
)
from envdoctor.probes.system import SystemFacts
from envdoctor.probes.torch_build import PythonError, TorchFacts
from envdoctor.rules import RULES
from envdoctor.rules.base import RuleContext
from tests.support import PYTHON

KERNEL = "6.8.0-49-generic"
LINUX = PlatformInfo("Linux", KERNEL, "#49", "x86_64")
JETSON = PlatformInfo("Linux", "5.10.120-tegra", "#1", "aarch64")
UBUNTU = SystemFacts("linux", KERNEL, "#49", "x86_64", distro="ubuntu", distro_like=("debian",))
NOT_LOADED = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
A100 = Gpu(0, "NVIDIA A100-SXM4-80GB", (8, 0), 80 * 2**30)


def findings(*facts: object, platform: PlatformInfo = LINUX) -> dict[str, Finding]:
    probes = tuple(ProbeResult(type(f).__name__, ProbeStatus.OK, 0.0, f) for f in (PYTHON, *facts))
    ctx = RuleContext.build(platform, Interpreter("/env/bin/python", "r"), probes)
    return {f.code: f for f in fold(evaluate(ctx), RULES)}


def roots(*facts: object, platform: PlatformInfo = LINUX) -> list[str]:
    return sorted(c for c, f in findings(*facts, platform=platform).items() if f.folded_under is None)


def commands(finding: Finding) -> list[str]:
    return [c for fix in finding.fixes for c in fix.commands]


def not_loaded(host: DriverHostFacts | None, status: NvmlStatus = NvmlStatus.DRIVER_NOT_LOADED) -> NvmlFacts:
    return NvmlFacts(status=status, error=NOT_LOADED, pci_nvidia_devices=("0000:01:00.0",), host=host)


INSTALLED = DriverHostFacts(
    kernel=KERNEL,
    loaded_modules=(),
    module_indexed=True,
    module_file="updates/dkms/nvidia.ko.zst",
    dkms=(DkmsBuild("nvidia", "550.120", (KERNEL,)),),
    library_versions=("550.120",),
    pci=(PciBinding("0000:01:00.0", None),),
    secure_boot=False,
    blocks=(),
)


# -- ED103: the causes of "couldn't communicate", most likely first ----------------------------------


def ranked(finding: Finding) -> list[tuple[str, str]]:
    """(cause key, likelihood) in the order the finding lists them, from its evidence lines."""
    pairs = [line.split(": ", 1) for line in finding.evidence if ": " in line]
    return [(key, seen) for seen, key in pairs if seen in ("confirmed", "likely", "possible")]


def test_without_host_facts_every_cause_is_listed_in_the_threads_order() -> None:
    finding = findings(not_loaded(None))["ED103"]
    assert ranked(finding) == [
        ("module-missing", "possible"),
        ("secure-boot", "possible"),
        ("nouveau", "possible"),
        ("blacklisted", "possible"),
        ("not-loaded-yet", "possible"),
    ]
    assert finding.folded_under is None
    assert "(1) no nvidia kernel module is built for the running kernel" in finding.detail
    assert "`mokutil --sb-state; sudo modprobe nvidia`" in finding.detail
    assert "lspci -nnk -d 10de:" in finding.detail


def test_a_confirmed_cause_comes_first_and_what_the_facts_rule_out_is_left_out() -> None:
    host = replace(INSTALLED, secure_boot=None, pci=(PciBinding("0000:01:00.0", "nouveau"),))
    finding = findings(not_loaded(host))["ED103"]
    # What the facts show settles it: the causes they leave open are not listed beside it.
    assert ranked(finding) == [("nouveau", "confirmed")]
    assert finding.folded_under == "ED133"  # whose finding says it exactly


def test_with_every_cause_ruled_out_a_pending_reboot_is_what_is_left() -> None:
    result = findings(not_loaded(INSTALLED), UBUNTU)
    assert roots(not_loaded(INSTALLED), UBUNTU) == ["ED103"]
    finding = result["ED103"]
    assert "(1) the driver was installed or updated" in finding.detail and "(2)" not in finding.detail
    assert "sudo modprobe nvidia" in commands(finding) and "sudo reboot" in commands(finding)


def test_in_wsl_or_a_container_the_host_causes_are_not_listed() -> None:
    wsl = replace(UBUNTU, wsl=True)
    finding = findings(not_loaded(None), wsl)["ED103"]
    assert "Secure Boot" in finding.detail and "1)" not in finding.detail


# -- ED130 ---------------------------------------------------------------------------------------------


MISMATCH = DriverHostFacts(
    kernel=KERNEL,
    loaded_version="550.107.02",
    library_versions=("550.120",),
    dkms=(DkmsBuild("nvidia", "550.120", (KERNEL,)),),
)


def test_a_mismatch_on_the_host_is_a_reboot_and_a_hold_not_a_reinstall() -> None:
    found = findings(not_loaded(MISMATCH, NvmlStatus.VERSION_MISMATCH), UBUNTU)
    finding = found["ED130"]
    assert found["ED103"].folded_under == "ED130"
    assert commands(finding)[0] == "sudo reboot"
    assert "550.107.02" in finding.detail and "550.120" in finding.detail
    assert any("50unattended-upgrades" in f.summary for f in finding.fixes)
    assert not any("apt install" in c for c in commands(finding))


def test_a_half_done_upgrade_is_finished_first() -> None:
    stuck = replace(MISMATCH, dkms=(DkmsBuild("nvidia", "550.107.02", (KERNEL,)),))
    finding = findings(not_loaded(stuck, NvmlStatus.VERSION_MISMATCH), UBUNTU)["ED130"]
    assert "stopped half-way" in finding.detail
    assert commands(finding)[:2] == ["sudo apt update", "sudo apt install --fix-broken"]
    assert "sudo dkms install -m nvidia -v 550.120 -k 6.8.0-49-generic" in commands(finding)


def test_a_mismatch_in_a_container_is_not_the_hosts_reboot() -> None:
    docker = replace(UBUNTU, container="docker")
    found = findings(
        not_loaded(MISMATCH, NvmlStatus.VERSION_MISMATCH), docker, GpuAccessFacts(container="docker")
    )
    assert "ED130" not in found and found["ED122"].folded_under is None


def test_fedora_has_no_unattended_upgrades_hold() -> None:
    fedora = SystemFacts("linux", KERNEL, "#1", "x86_64", distro="fedora")
    finding = findings(not_loaded(MISMATCH, NvmlStatus.VERSION_MISMATCH), fedora)["ED130"]
    assert not any("unattended" in f.summary.lower() for f in finding.fixes)


# -- ED131-ED134 ---------------------------------------------------------------------------------------


def test_no_module_for_the_running_kernel() -> None:
    host = replace(INSTALLED, module_file=None, dkms=(DkmsBuild("nvidia", "550.120", ("6.8.0-45-generic",)),))
    host = replace(host, kernels_with_module=("6.8.0-45-generic",), secure_boot=True)
    found = findings(not_loaded(host), UBUNTU)
    assert roots(not_loaded(host), UBUNTU) == ["ED131"]  # Secure Boot waits: there is no module yet
    finding = found["ED131"]
    assert commands(finding)[:2] == [
        "sudo apt install linux-headers-6.8.0-49-generic dkms",
        "sudo dkms install -m nvidia -v 550.120 -k 6.8.0-49-generic",
    ]
    assert any("boot kernel 6.8.0-45-generic" in f.summary for f in finding.fixes)


def test_a_run_installed_driver_is_reinstalled_with_dkms_first() -> None:
    host = replace(INSTALLED, module_file=None, dkms=())
    finding = findings(not_loaded(host), UBUNTU)["ED131"]
    assert commands(finding)[0] == "sudo sh NVIDIA-Linux-x86_64-550.120.run --dkms"


def test_a_loaded_module_or_an_unreadable_index_is_not_a_missing_module() -> None:
    assert "ED131" not in findings(
        not_loaded(replace(INSTALLED, module_file=None, module_indexed=None)), UBUNTU
    )
    loaded = replace(INSTALLED, module_file=None, loaded_modules=("nvidia",))
    assert "ED131" not in findings(not_loaded(loaded), UBUNTU)


def test_secure_boot_with_a_built_module() -> None:
    host = replace(INSTALLED, secure_boot=True)
    finding = findings(not_loaded(host), UBUNTU)["ED132"]
    assert commands(finding)[0] == "sudo update-secureboot-policy --enroll-key"
    assert any("Turn Secure Boot off" in f.summary for f in finding.fixes)
    assert "ED132" not in findings(not_loaded(replace(host, secure_boot=False)), UBUNTU)


def test_nouveau_without_an_nvidia_driver_is_a_driver_to_install() -> None:
    bare = DriverHostFacts(pci=(PciBinding("0000:01:00.0", "nouveau"),), loaded_modules=("nouveau",))
    nvml = NvmlFacts(status=NvmlStatus.LIBRARY_NOT_FOUND, pci_nvidia_devices=("0000:01:00.0",), host=bare)
    found = findings(nvml, UBUNTU)
    assert "ED133" not in found
    assert "open-source driver" in found["ED103"].detail and "sudo ubuntu-drivers install" in commands(
        found["ED103"]
    )


def test_nouveau_with_the_driver_installed_is_blacklisted() -> None:
    held = replace(INSTALLED, pci=(PciBinding("0000:01:00.0", "nouveau"),), loaded_modules=("nouveau",))
    finding = findings(not_loaded(held), UBUNTU)["ED133"]
    assert commands(finding)[0].endswith("| sudo tee /etc/modprobe.d/blacklist-nouveau.conf")
    assert "blacklist nova_core" in commands(finding)[0] and "sudo update-initramfs -u" in commands(finding)
    already = replace(held, blocks=(ModuleBlock("nouveau", "/etc/modprobe.d/nouveau.conf", "blacklist"),))
    again = findings(not_loaded(already), UBUNTU)["ED133"]
    assert commands(again) == ["sudo update-initramfs -u", "sudo reboot"]


def test_nova_core_holds_the_gpu_even_before_the_driver_is_installed() -> None:
    nova = DriverHostFacts(pci=(PciBinding("0000:01:00.0", "NovaCore"),), loaded_modules=("nova_core",))
    nvml = NvmlFacts(status=NvmlStatus.LIBRARY_NOT_FOUND, pci_nvidia_devices=("0000:01:00.0",), host=nova)
    found = findings(nvml, UBUNTU)
    assert "nova_core" in found["ED133"].title and found["ED103"].folded_under == "ED133"


def test_a_blacklist_by_hand_and_one_by_prime_select() -> None:
    by_hand = replace(INSTALLED, blocks=(ModuleBlock("nvidia", "/etc/modprobe.d/no-gpu.conf", "blacklist"),))
    finding = findings(not_loaded(by_hand), UBUNTU)["ED134"]
    assert "/etc/modprobe.d/no-gpu.conf" in finding.fixes[0].summary
    assert commands(finding) == ["sudo update-initramfs -u", "sudo reboot"]
    prime = replace(INSTALLED, prime_profile="off")
    assert commands(findings(not_loaded(prime), UBUNTU)["ED134"]) == [
        "sudo prime-select on-demand",
        "sudo reboot",
    ]
    on_demand = replace(INSTALLED, prime_profile="on-demand")
    assert "ED134" not in findings(not_loaded(on_demand), UBUNTU)
    cmdline = replace(INSTALLED, blocks=(ModuleBlock("nvidia", "/proc/cmdline", "modprobe.blacklist="),))
    assert "GRUB_CMDLINE_LINUX" in findings(not_loaded(cmdline), UBUNTU)["ED134"].fixes[0].summary


def test_the_host_rules_stay_out_of_containers() -> None:
    held = replace(INSTALLED, module_file=None, pci=(PciBinding("0000:01:00.0", "nouveau"),))
    docker = replace(UBUNTU, container="docker")
    found = findings(not_loaded(held), docker)
    assert not {"ED131", "ED132", "ED133", "ED134"} & set(found)


# -- ED135 ---------------------------------------------------------------------------------------------


def hgx(**host: object) -> NvmlFacts:
    return NvmlFacts(
        status=NvmlStatus.OK,
        driver_version="550.54.15",
        cuda_driver_version=12040,
        gpus=(A100,),
        host=DriverHostFacts(nvswitches=6, **host),  # type: ignore[arg-type]
    )


def test_the_fabric_manager_must_run_at_the_drivers_version() -> None:
    missing = findings(hgx(fabric_manager="not-installed"), UBUNTU)["ED135"]
    assert commands(missing)[:2] == [
        "sudo apt install nvidia-fabricmanager-550",
        "sudo systemctl enable --now nvidia-fabricmanager",
    ]
    other = findings(hgx(fabric_manager="failed", fabric_manager_version="550.54.14"), UBUNTU)["ED135"]
    assert "550.54.14 but the driver is 550.54.15" in other.detail
    assert "ED135" not in findings(hgx(fabric_manager="active", fabric_manager_version="550.54.15"), UBUNTU)
    hopper = replace(
        hgx(fabric_manager="active"),
        host=DriverHostFacts(fabric_manager="active", gpu_fabric=("in_progress",)),
    )
    assert "journalctl" in findings(hopper, UBUNTU)["ED135"].detail


def test_no_nvswitch_no_fabric_manager_finding() -> None:
    plain = replace(hgx(), host=DriverHostFacts(gpu_fabric=("not_supported",)))
    assert "ED135" not in findings(plain, UBUNTU)


# -- Jetson: ED136, ED137, and ED104's silence ---------------------------------------------------------


def tegra(release: str | None = "35.4.1") -> NvmlFacts:
    host = DriverHostFacts(tegra_release=release, tegra_model="NVIDIA Jetson Xavier NX Developer Kit")
    return NvmlFacts(status=NvmlStatus.LIBRARY_NOT_FOUND, error="NVML Shared Library Not Found", host=host)


def torch(version: str, cuda: str | None, available: bool | None = False, **kw: object) -> TorchFacts:
    return TorchFacts(installed=True, version=version, cuda=cuda, cuda_available=available, **kw)  # type: ignore[arg-type]


def test_a_cpu_torch_on_a_jetson_gets_the_jetpack_wheel() -> None:
    found = findings(tegra(), torch("2.4.1", None), platform=JETSON)
    assert "ED104" not in found
    finding = found["ED136"]
    assert commands(finding) == [
        "/env/bin/python -m pip uninstall -y torch torchvision torchaudio",
        "/env/bin/python -m pip install "
        "https://developer.download.nvidia.com/compute/redist/jp/v512/pytorch/"
        "torch-2.1.0a0+41361538.nv23.06-cp38-cp38-linux_aarch64.whl",
    ]
    assert "Python 3.8" in finding.fixes[0].summary


def test_jetpack_6_uses_the_jetson_ai_lab_index_and_a_pytorch_sbsa_build_is_no_better() -> None:
    sbsa = torch("2.7.0+cu128", "12.8")
    finding = findings(tegra("36.4.3"), sbsa, platform=JETSON)["ED136"]
    assert "SBSA" in finding.detail
    assert commands(finding)[1].endswith(
        "install torch torchvision --index-url https://pypi.jetson-ai-lab.io/jp6/cu126"
    )


def test_nvidias_own_build_and_an_unknown_release() -> None:
    nvidia = torch("2.1.0a0+41361538.nv23.06", "11.4", available=True)
    assert "ED136" not in findings(tegra(), nvidia, platform=JETSON)
    unknown = findings(tegra("38.2.0"), torch("2.9.0", None), platform=JETSON)["ED136"]
    assert unknown.fixes[0].commands == () and "does not know its wheel yet" in unknown.fixes[0].summary


def test_a_wheel_for_another_jetpack() -> None:
    def broken(library: str) -> TorchFacts:
        error = PythonError(
            "ImportError", f"{library}: cannot open shared object file: No such file or directory"
        )
        return TorchFacts(installed=True, dist_version="1.1.0", import_error=error)

    found = findings(tegra("32.4.3"), broken("libcudart.so.10.0"), platform=JETSON)
    assert "JetPack 4.4 (L4T R32.4.3) ships CUDA 10.2" in found["ED137"].detail
    # The library this JetPack does ship is missing for another reason: not this finding.
    assert "ED137" not in findings(tegra("32.4.3"), broken("libcudart.so.10.2"), platform=JETSON)
    assert "ED137" in findings(tegra("36.4.3"), broken("libcudnn.so.8"), platform=JETSON)
    assert "ED137" not in findings(tegra("36.4.3"), broken("libcudnn.so.9"), platform=JETSON)
    # Off a Jetson the same text is not this cause.
    x86 = NvmlFacts(status=NvmlStatus.OK, driver_version="550.120", gpus=(A100,))
    assert "ED137" not in findings(x86, broken("libcudart.so.10.0"))


def test_the_jetson_table() -> None:
    assert jetson.jetpack_of("35.4.1") == "5.1.2" and jetson.jetpack_of("36.3") == "6.0"
    assert jetson.wheel_for("32.7.4") is not None and jetson.wheel_for("32.7.4").python == "3.6"  # type: ignore[union-attr]
    assert jetson.wheel_for("36.2.0").is_index  # type: ignore[union-attr]
    assert jetson.wheel_for("31.1") is None and jetson.wheel_for(None) is None


def test_rebuild_commands_name_the_driver_version_when_known() -> None:
    ubuntu = driver_install("ubuntu")
    assert (
        ubuntu.rebuild_for("6.8.0-49-generic", "550.120")[1]
        == "sudo dkms install -m nvidia -v 550.120 -k 6.8.0-49-generic"
    )
    assert ubuntu.rebuild_for("6.8.0-49-generic")[1] == "sudo dkms autoinstall -k 6.8.0-49-generic"
    assert driver_install("cachyos", ("arch",)).family == "Arch Linux"
