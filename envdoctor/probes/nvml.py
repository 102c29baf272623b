"""The NVIDIA driver and GPUs, as NVML sees them (nvidia-smi when pynvml cannot load).

Also lists NVIDIA display devices on the PCI bus (Linux), so "a GPU is there but no driver works"
can be told apart from "there is no NVIDIA GPU". Where the driver does not work on Linux (and on
aarch64 boards, and NVSwitch systems) it reads the host's side of the driver as well: the kernel
module for the running kernel, the driver each GPU is bound to, Secure Boot, modprobe.d blacklists,
the Fabric Manager and the Jetson release (DriverHostFacts). Every read may fail or be missing:
that is a fact too, never an error of the probe.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from envdoctor.host.base import Host
from envdoctor.host.ending import ending_of_outcome, ending_of_result
from envdoctor.knowledge import archs, jetson
from envdoctor.model.ending import EndingKind
from envdoctor.model.types import TextEnum
from envdoctor.probes.base import NotApplicable, ProbeContext, ProbeSpec
from envdoctor.util.limits import small_int
from envdoctor.util.records import record

NVIDIA_PCI_VENDOR = "0x10de"
PCI_DEVICES = "/sys/bus/pci/devices"
NVSWITCH_CLASS = "0x0680"  # NVSwitch chips enumerate as "other bridge" devices of NVIDIA's
_CHILD_TIMEOUT = 15.0
_SMI_TIMEOUT = 10.0


class NvmlStatus(TextEnum):
    OK = "ok"
    LIBRARY_NOT_FOUND = "library_not_found"  # no driver installed (or not passed into a container)
    DRIVER_NOT_LOADED = "driver_not_loaded"
    VERSION_MISMATCH = "version_mismatch"  # libraries and kernel module differ: a reboot is pending
    NO_PERMISSION = "no_permission"
    ERROR = "error"  # any other NVML error
    PYNVML_MISSING = "pynvml_missing"  # pynvml cannot load, and there is no nvidia-smi either
    FAILED = "failed"  # the NVML child crashed or hung, and there is no nvidia-smi


class NvmlSource(TextEnum):
    NVML = "nvml"
    NVIDIA_SMI = "nvidia-smi"


@record
class Gpu:
    index: int
    name: str | None = None
    capability: tuple[int, int] | None = None
    memory_total_bytes: int | None = None

    @property
    def sm(self) -> str | None:
        """ "sm_89" for compute capability 8.9."""
        return None if self.capability is None else archs.sm(self.capability)


@record
class PciBinding:
    """Which kernel driver holds one NVIDIA GPU (from /sys/bus/pci/devices/<address>/driver)."""

    address: str
    driver: str | None = None  # nvidia, nouveau, nova_core, vfio-pci; None: no driver bound


@record
class ModuleBlock:
    """A rule that keeps a kernel module from loading: a modprobe.d line or a kernel parameter."""

    module: str  # as written, with "_" for "-": nvidia, nvidia_drm, nouveau, nova_core
    source: str  # the modprobe.d file, or "/proc/cmdline"
    how: str  # "blacklist", "install /bin/false", "alias off", "modprobe.blacklist=", ...


@record
class DkmsBuild:
    """One version of an NVIDIA module DKMS knows, and the kernels it was built for."""

    module: str  # nvidia, nvidia-current, ...
    version: str
    kernels: tuple[str, ...] = ()


@record
class DriverHostFacts:
    """The host's side of the NVIDIA driver (Linux): read where NVML does not work, on aarch64
    boards and on NVSwitch systems. None in a field: not readable or not looked at."""

    kernel: str | None = None  # the running kernel's release, as `uname -r` prints it
    loaded_version: str | None = None  # the loaded nvidia module's version (/proc/driver/nvidia)
    loaded_modules: tuple[str, ...] | None = None  # nvidia*, nouveau, nova* in /proc/modules
    module_indexed: bool | None = None  # whether the running kernel's modules.dep could be read
    module_file: str | None = None  # the nvidia module modules.dep lists for the running kernel
    kernels_with_module: tuple[str, ...] = ()  # other installed kernels whose modules.dep has it
    dkms: tuple[DkmsBuild, ...] = ()
    module_sources: tuple[str, ...] = ()  # driver versions whose module source is in /usr/src (DKMS's)
    library_versions: tuple[str, ...] = ()  # user-space driver: libnvidia-ml.so.<version> files
    pci: tuple[PciBinding, ...] = ()
    nvswitches: int = 0  # NVSwitch chips on the PCI bus
    secure_boot: bool | None = None  # None: the EFI variable could not be read
    blocks: tuple[ModuleBlock, ...] | None = None  # None: modprobe.d was not read
    prime_profile: str | None = None  # nvidia-prime's /etc/prime-discrete: on, off, on-demand
    fabric_manager: str | None = None  # nvidia-fabricmanager: active, inactive, failed, not-installed
    fabric_manager_version: str | None = None
    gpu_fabric: tuple[str, ...] = ()  # each GPU's NVML fabric state: completed, not_started, ...
    tegra_release: str | None = None  # L4T release from /etc/nv_tegra_release: "35.4.1"
    tegra_model: str | None = None  # /proc/device-tree/model: "NVIDIA Jetson Xavier NX ..."
    errors: tuple[str, ...] = ()  # files that exist but could not be read

    @property
    def jetson(self) -> bool:
        model = (self.tegra_model or "").lower()
        return self.tegra_release is not None or "jetson" in model or "tegra" in model

    @property
    def nvidia_loaded(self) -> bool | None:
        if self.loaded_modules is None:
            return None if self.loaded_version is None else True
        named = any(_NVIDIA_LOADED.fullmatch(m) for m in self.loaded_modules)
        return named or bool(self.loaded_version)

    def blocked(self, *modules: str) -> tuple[ModuleBlock, ...]:
        return tuple(b for b in self.blocks or () if b.module in modules)

    def bound_to(self, *drivers: str) -> tuple[PciBinding, ...]:
        return tuple(p for p in self.pci if p.driver in drivers)

    def dkms_kernels(self, version: str | None = None) -> tuple[str, ...]:
        """Kernels DKMS built an NVIDIA module for (of `version`, when given)."""
        found = [k for b in self.dkms if version is None or b.version == version for k in b.kernels]
        return tuple(dict.fromkeys(found))


@record
class NvmlFacts:
    status: NvmlStatus
    source: NvmlSource | None = None
    error: str | None = None
    driver_version: str | None = None  # "550.144.03"
    cuda_driver_version: int | None = None  # 12040: the newest CUDA the driver runs natively
    gpus: tuple[Gpu, ...] = ()
    pci_nvidia_devices: tuple[str, ...] = ()  # PCI addresses of NVIDIA display controllers
    errors: tuple[str, ...] = ()
    host: DriverHostFacts | None = None  # None: not read (a working driver, older snapshots)

    @property
    def driver_cuda(self) -> str | None:
        """ "12.4" from 12040, as nvidia-smi prints it."""
        v = self.cuda_driver_version
        return None if v is None else f"{v // 1000}.{(v % 1000) // 10}"

    @property
    def working(self) -> bool:
        return self.status == NvmlStatus.OK


def _pci_scan(host: Host) -> tuple[tuple[str, ...], int]:
    """NVIDIA display controllers on the PCI bus (their addresses), and how many NVSwitch chips."""
    try:
        addresses = host.list_dir(PCI_DEVICES)
    except OSError:
        return (), 0
    found = []
    switches = 0
    for address in addresses:
        try:
            vendor = host.read_text(f"{PCI_DEVICES}/{address}/vendor").strip()
            if vendor != NVIDIA_PCI_VENDOR:
                continue
            device_class = host.read_text(f"{PCI_DEVICES}/{address}/class").strip()
        except OSError:
            continue
        # 0x03xxxx: display controllers (VGA, 3D controller): what a GPU enumerates as.
        if device_class.startswith("0x03"):
            found.append(address)
        elif device_class.startswith(NVSWITCH_CLASS):
            switches += 1
    return tuple(found), switches


def _pci_nvidia_devices(host: Host) -> tuple[str, ...]:
    return _pci_scan(host)[0]


def _from_record(record: Mapping[str, Any], pci: tuple[str, ...]) -> NvmlFacts:
    gpus: list[Gpu] = []
    for raw in record.get("gpus") or ():
        capability = raw.get("capability")
        gpus.append(
            Gpu(
                index=int(raw.get("index", len(gpus))),
                name=raw.get("name"),
                capability=(int(capability[0]), int(capability[1])) if capability else None,
                memory_total_bytes=raw.get("memory_total_bytes"),
            )
        )
    status = NvmlStatus.parse(record.get("status"), NvmlStatus.ERROR)
    return NvmlFacts(
        status=status,
        source=NvmlSource.NVML if status != NvmlStatus.PYNVML_MISSING else None,
        error=record.get("error"),
        driver_version=record.get("driver_version"),
        cuda_driver_version=record.get("cuda_driver_version"),
        gpus=tuple(gpus),
        pci_nvidia_devices=pci,
        errors=tuple(str(e) for e in record.get("errors") or ()),
    )


def _nvidia_smi(host: Host) -> str | None:
    found = host.which("nvidia-smi")
    if found:
        return found
    if host.platform().system == "Windows":
        system_root = host.env.get("SystemRoot", "C:\\Windows")
        program_files = host.env.get("ProgramFiles", "C:\\Program Files")
        for candidate in (
            f"{system_root}\\System32\\nvidia-smi.exe",
            f"{program_files}\\NVIDIA Corporation\\NVSMI\\nvidia-smi.exe",
        ):
            if host.exists(candidate):
                return candidate
    return None


_CUDA_HEADER = re.compile(r"CUDA Version:\s*(\d+)\.(\d+)")
_SMI_FIELDS = "index,name,compute_cap,memory.total,driver_version"


def parse_smi_csv(text: str) -> tuple[tuple[Gpu, ...], str | None]:
    """Parse `nvidia-smi --query-gpu=index,name,compute_cap,memory.total,driver_version`."""
    gpus = []
    driver = None
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        index_number = small_int(cells[0]) if len(cells) == 5 else None
        if index_number is None:
            continue
        _, name, cap, memory, driver = cells
        capability = None
        if re.fullmatch(r"[0-9]{1,3}\.[0-9]{1,3}", cap):
            major, minor = cap.split(".")
            capability = (int(major), int(minor))
        megabytes = small_int(memory)
        memory_bytes = megabytes * 2**20 if megabytes is not None else None
        gpus.append(Gpu(index_number, name, capability, memory_bytes))
    return tuple(gpus), driver


def parse_smi_cuda_version(text: str) -> int | None:
    """12020 from the header line "... CUDA Version: 12.2"."""
    match = _CUDA_HEADER.search(text)
    if not match:
        return None
    return int(match.group(1)) * 1000 + int(match.group(2)) * 10


def _from_smi(
    host: Host, path: str, why: str, pci: tuple[str, ...], timeout: float = _SMI_TIMEOUT
) -> NvmlFacts:
    query = host.run([path, f"--query-gpu={_SMI_FIELDS}", "--format=csv,noheader,nounits"], timeout)
    if not query.ok:
        detail = query.stderr.strip() or query.stdout.strip() or query.start_error or "failed"
        status = NvmlStatus.ERROR
        if query.timed_out:  # named, so a hung driver is not just "failed"
            ending = ending_of_result(query, limit=timeout)
            detail = f"{why}; then {path} {ending.describe()} and was stopped"
        if "couldn't communicate" in detail.lower():
            status = NvmlStatus.DRIVER_NOT_LOADED
        if "mismatch" in detail.lower():
            status = NvmlStatus.VERSION_MISMATCH
        return NvmlFacts(
            status=status, source=NvmlSource.NVIDIA_SMI, error=detail[:500], pci_nvidia_devices=pci
        )
    gpus, driver = parse_smi_csv(query.stdout)
    header = host.run([path], timeout)
    return NvmlFacts(
        status=NvmlStatus.OK,
        source=NvmlSource.NVIDIA_SMI,
        error=why,
        driver_version=driver,
        cuda_driver_version=parse_smi_cuda_version(header.stdout) if header.ok else None,
        gpus=gpus,
        pci_nvidia_devices=pci,
    )


# -- the host's side of the driver (Linux) -----------------------------------------------------------

_READ_LIMIT = 1024 * 1024
_MODULES_DEP_LIMIT = 16 * 1024 * 1024  # modules.dep of a distribution kernel is ~1 MB
_MAX_KERNELS = 8  # installed kernels looked at for an nvidia module, newest names first
_MAX_CONF_FILES = 200
MODULE_DIRS = ("/lib/modules", "/usr/lib/modules")
LIBRARY_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib")
MODPROBE_DIRS = ("/etc/modprobe.d", "/run/modprobe.d", "/lib/modprobe.d", "/usr/lib/modprobe.d")
DKMS_DIR = "/var/lib/dkms"
SOURCE_DIR = "/usr/src"
PROC_DRIVER = "/proc/driver/nvidia/version"
EFI_DIR = "/sys/firmware/efi"
SECURE_BOOT_VAR = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
PRIME_PROFILE = "/etc/prime-discrete"
FABRIC_MANAGER_UNIT = "nvidia-fabricmanager"
FABRIC_MANAGER = "nv-fabricmanager"
# The nvidia module as distributions name its file: nvidia.ko(.xz|.zst), Debian's nvidia-current.ko,
# nvidia-tesla-470.ko, nvidia-legacy-390xx.ko, older Ubuntu's nvidia_384.ko; never nvidia-uvm/-drm/-modeset.
_NVIDIA_KO = re.compile(
    r"^(\S*?/)?nvidia(?:-current|-tesla(?:-\d+)?|-legacy-\w+|_\d+)?\.ko(?:\.[a-z]+)?:", re.M
)
_DKMS_MODULE = re.compile(r"nvidia(?:-current|-open|-tesla(?:-\d+)?|-legacy-\w+)?")
_SOURCE = re.compile(r"nvidia-(\d+\.\d+(?:\.\d+)?)")
_LIBRARY = re.compile(r"libnvidia-ml\.so\.(\d+\.\d+(?:\.\d+)?)")
_KERNEL_MODULE = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)")
_TEGRA_RELEASE = re.compile(r"#\s*R(\d+)\s*\(release\),\s*REVISION:\s*(\d+(?:\.\d+)*)")
_VERSION = re.compile(r"(\d+\.\d+(?:\.\d+)?)")
_NVIDIA_LOADED = re.compile(r"nvidia(?:_current|_\d+)?")
_WATCHED = ("nvidia", "nouveau", "nova")  # module names whose load state and blocks are facts
_CMDLINE_LISTS = ("modprobe.blacklist=", "module_blacklist=", "rd.driver.blacklist=")
_FABRIC_STATES = {0: "not_supported", 1: "not_started", 2: "in_progress", 3: "completed"}


def parse_tegra_release(text: str) -> str | None:
    """ "32.4.3" from "# R32 (release), REVISION: 4.3, GCID: ..." (/etc/nv_tegra_release)."""
    match = _TEGRA_RELEASE.search(text[:4096])
    return f"{match.group(1)}.{match.group(2)}" if match else None


def parse_kernel_module_version(text: str) -> str | None:
    """ "535.104.05" from /proc/driver/nvidia/version's NVRM line (proprietary or open module)."""
    match = _KERNEL_MODULE.search(text[:4096])
    return match.group(1) if match else None


def nvidia_module_in(modules_dep: str) -> str | None:
    """The nvidia module's path in a modules.dep text ("updates/dkms/nvidia.ko.zst"), if listed."""
    match = _NVIDIA_KO.search(modules_dep)
    return match.group(0).rstrip(":") if match else None


def _watched(name: str) -> str | None:
    name = name.strip().replace("-", "_")
    return name if name.startswith(_WATCHED) else None


def parse_modprobe_conf(text: str, source: str) -> tuple[ModuleBlock, ...]:
    """The blocks of watched modules a modprobe.d file sets (blacklist, install /bin/false, alias off)."""
    found = []
    for raw in text[:65536].splitlines():
        words = raw.split("#", 1)[0].split()
        if len(words) < 2:
            continue
        keyword, module = words[0], _watched(words[1])
        if module is None:
            continue
        if keyword == "blacklist":
            found.append(ModuleBlock(module, source, "blacklist"))
        elif keyword == "install" and len(words) >= 3 and words[2].rsplit("/", 1)[-1] in ("false", "true"):
            found.append(ModuleBlock(module, source, f"install {words[2]}"))
        elif keyword == "alias" and len(words) >= 3 and words[2] == "off":
            found.append(ModuleBlock(module, source, "alias off"))
    return tuple(found)


def parse_cmdline_blocks(cmdline: str) -> tuple[ModuleBlock, ...]:
    """Blocks the kernel command line sets: modprobe.blacklist=a,b and its kin, nouveau.modeset=0."""
    found = []
    for token in cmdline[:8192].split():
        for prefix in _CMDLINE_LISTS:
            if token.startswith(prefix):
                for name in token[len(prefix) :].split(","):
                    module = _watched(name)
                    if module is not None:
                        found.append(ModuleBlock(module, "/proc/cmdline", prefix))
        if token == "nouveau.modeset=0":
            found.append(ModuleBlock("nouveau", "/proc/cmdline", token))
    return tuple(found)


class _Reader:
    """Reads what exists and records what exists but cannot be read."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.errors: list[str] = []

    def text(self, path: str, limit: int = _READ_LIMIT) -> str | None:
        if not self.host.exists(path):
            return None
        try:
            return self.host.read_text(path, max_bytes=limit)
        except (OSError, UnicodeDecodeError) as exc:
            self.errors.append(f"{path}: {getattr(exc, 'strerror', None) or exc}")
            return None

    def listing(self, path: str) -> tuple[str, ...] | None:
        if not self.host.is_dir(path):
            return None
        try:
            return self.host.list_dir(path)
        except OSError as exc:
            self.errors.append(f"{path}: {exc.strerror or exc}")
            return None


def _module_root(read: _Reader) -> str | None:
    return next((d for d in MODULE_DIRS if read.host.is_dir(d)), None)


def _module_for(read: _Reader, root: str, kernel: str) -> tuple[bool, str | None]:
    """(modules.dep readable, the nvidia module it lists) for one kernel."""
    text = read.text(f"{root}/{kernel}/modules.dep", _MODULES_DEP_LIMIT)
    if text is None:
        return False, None
    return True, nvidia_module_in(text)


def _dkms(read: _Reader) -> tuple[DkmsBuild, ...]:
    builds = []
    for module in sorted(read.listing(DKMS_DIR) or ()):
        if not _DKMS_MODULE.fullmatch(module):
            continue
        for version in sorted(read.listing(f"{DKMS_DIR}/{module}") or ()):
            if not version[:1].isdigit():
                continue  # kernel-<release>-<arch> links and the like
            inside = read.listing(f"{DKMS_DIR}/{module}/{version}") or ()
            kernels = tuple(sorted(k for k in inside if k[:1].isdigit()))
            builds.append(DkmsBuild(module, version, kernels))
    return tuple(builds[:32])


def _module_sources(read: _Reader) -> tuple[str, ...]:
    names = (_SOURCE.fullmatch(n) for n in sorted(read.listing(SOURCE_DIR) or ()))
    return tuple(m.group(1) for m in names if m)[:16]


def _library_versions(read: _Reader) -> tuple[str, ...]:
    found: list[str] = []
    for folder in LIBRARY_DIRS:
        for name in read.listing(folder) or ():
            match = _LIBRARY.fullmatch(name)
            if match and match.group(1) not in found:
                found.append(match.group(1))
    return tuple(found)


def _bindings(host: Host, addresses: tuple[str, ...]) -> tuple[PciBinding, ...]:
    found = []
    for address in addresses:
        link = f"{PCI_DEVICES}/{address}/driver"
        target = host.realpath(link)
        # The driver link resolves to /sys/bus/pci/drivers/<name>; no link, no driver bound.
        name = target.rstrip("/").rsplit("/", 1)[-1] if "/drivers/" in target else None
        found.append(PciBinding(address, name))
    return tuple(found)


def _secure_boot(read: _Reader) -> bool | None:
    if not read.host.exists(EFI_DIR):
        return False  # booted through BIOS: there is no Secure Boot
    if not read.host.exists(SECURE_BOOT_VAR):
        return False  # UEFI without the variable: the firmware has no Secure Boot
    text = read.text(SECURE_BOOT_VAR, 64)
    # efivarfs: four bytes of attributes, then the one-byte value (1: enabled).
    return None if text is None or len(text) < 5 else text[4] == "\x01"


def _blocks(read: _Reader) -> tuple[ModuleBlock, ...]:
    found: list[ModuleBlock] = []
    seen = 0
    for folder in MODPROBE_DIRS:
        for name in sorted(read.listing(folder) or ()):
            if not name.endswith(".conf") or seen >= _MAX_CONF_FILES:
                continue
            seen += 1
            text = read.text(f"{folder}/{name}", 256 * 1024)
            if text:
                found += parse_modprobe_conf(text, f"{folder}/{name}")
    cmdline = read.text("/proc/cmdline", 64 * 1024)
    if cmdline:
        found += parse_cmdline_blocks(cmdline)
    return tuple(found)


def _loaded(read: _Reader) -> tuple[str, ...] | None:
    text = read.text("/proc/modules", 4 * 1024 * 1024)
    if text is None:
        return None
    names = (_watched(line.split(" ", 1)[0]) for line in text.splitlines())
    return tuple(sorted({n for n in names if n}))


def _fabric_manager(host: Host, timeout: float) -> tuple[str | None, str | None]:
    """(state of the nvidia-fabricmanager service, the version of nv-fabricmanager)."""
    binary = host.which(FABRIC_MANAGER)
    version = None
    if binary:
        answer = host.run([binary, "--version"], timeout)
        match = _VERSION.search(answer.stdout + answer.stderr) if answer.ok else None
        version = match.group(1) if match else None
    systemctl = host.which("systemctl")
    state = None
    if systemctl:
        answer = host.run([systemctl, "is-active", FABRIC_MANAGER_UNIT], timeout)
        state = (answer.stdout.strip().splitlines() or [""])[0][:40] or None
    if binary is None and state in (None, "inactive", "unknown"):
        state = "not-installed"
    return state, version


def gpu_fabric_states(record: Mapping[str, Any]) -> tuple[str, ...]:
    """Each GPU's NVML fabric state from the child's record (absent: the query is unavailable)."""
    states = []
    for raw in record.get("gpus") or ():
        state = raw.get("fabric_state") if isinstance(raw, dict) else None
        if isinstance(state, int):
            states.append(_FABRIC_STATES.get(state, f"state {state}"))
    return tuple(states)


def wants_host_facts(facts: NvmlFacts, machine: str, nvswitches: int, fabric: tuple[str, ...]) -> bool:
    """Whether the host's side of the driver is worth reading: the driver does not work, an aarch64
    board may be a Jetson, or an NVSwitch system needs its Fabric Manager."""
    unfinished = any(state in ("not_started", "in_progress") for state in fabric)
    return not facts.working or machine in ("aarch64", "arm64") or nvswitches > 0 or unfinished


def host_facts(
    host: Host, pci: tuple[str, ...], nvswitches: int, fabric: tuple[str, ...], timeout: float
) -> DriverHostFacts:
    read = _Reader(host)
    kernel = host.platform().release or None
    root = _module_root(read)
    indexed, module_file = _module_for(read, root, kernel) if root and kernel else (False, None)
    others: list[str] = []
    if root and indexed and module_file is None:
        # Only where the running kernel lacks it: which other kernels have it (a kernel upgrade).
        for other in sorted(read.listing(root) or (), reverse=True)[:_MAX_KERNELS]:
            if other != kernel and _module_for(read, root, other)[1]:
                others.append(other)
    proc = read.text(PROC_DRIVER)
    loaded_version = parse_kernel_module_version(proc) if proc else None
    if loaded_version is None:
        sys_version = read.text("/sys/module/nvidia/version")
        loaded_version = sys_version.strip() or None if sys_version else None
    tegra_text = read.text(jetson.release_file())
    model = read.text(jetson.model_file())
    profile = read.text(PRIME_PROFILE)
    unfinished = any(state in ("not_started", "in_progress") for state in fabric)
    manager, manager_version = (
        _fabric_manager(host, timeout) if nvswitches > 0 or unfinished else (None, None)
    )
    return DriverHostFacts(
        kernel=kernel,
        loaded_version=loaded_version,
        loaded_modules=_loaded(read),
        module_indexed=indexed if root and kernel else None,
        module_file=module_file,
        kernels_with_module=tuple(others),
        dkms=_dkms(read),
        module_sources=_module_sources(read),
        library_versions=_library_versions(read),
        pci=_bindings(host, pci),
        nvswitches=nvswitches,
        secure_boot=_secure_boot(read),
        blocks=_blocks(read),
        prime_profile=profile.strip()[:40] or None if profile else None,
        fabric_manager=manager,
        fabric_manager_version=manager_version,
        gpu_fabric=fabric,
        tegra_release=parse_tegra_release(tegra_text) if tegra_text else None,
        tegra_model=model.replace("\x00", "").strip()[:200] or None if model else None,
        errors=tuple(read.errors[:20]),
    )


def collect(ctx: ProbeContext) -> NvmlFacts:
    host = ctx.host
    plat = host.platform()
    if plat.system == "Darwin":
        raise NotApplicable("macOS has no NVIDIA CUDA driver")
    linux = plat.system == "Linux"
    pci, nvswitches = _pci_scan(host) if linux else ((), 0)
    facts, fabric = _driver_facts(ctx, pci)
    if linux and wants_host_facts(facts, plat.machine, nvswitches, fabric):
        timeout = ctx.options.child_limit(PROBE.timeout, _SMI_TIMEOUT, share=0.1)
        facts = replace(facts, host=host_facts(host, pci, nvswitches, fabric, timeout))
    return facts


def _driver_facts(ctx: ProbeContext, pci: tuple[str, ...]) -> tuple[NvmlFacts, tuple[str, ...]]:
    """NVML's facts (nvidia-smi's where pynvml cannot load), and each GPU's fabric state."""
    host = ctx.host
    # Half the probe's time for the NVML child, a fifth for each nvidia-smi run: a hung driver is
    # named before the probe's deadline, whatever --timeout is.
    child_timeout = ctx.options.child_limit(PROBE.timeout, _CHILD_TIMEOUT, share=0.5)
    smi_timeout = ctx.options.child_limit(PROBE.timeout, _SMI_TIMEOUT, share=0.2)
    outcome = host.python_json(host.own_python, "nvml_probe.py", (), child_timeout)
    records = [r for r in outcome.records if r.get("record") == "nvml"]
    if records:
        facts = _from_record(records[-1], pci)
        if facts.status != NvmlStatus.PYNVML_MISSING:
            return facts, gpu_fabric_states(records[-1])
        why = f"pynvml could not load ({facts.error})"
    else:
        ending = ending_of_outcome(outcome, limit=child_timeout)
        said = ending.last_output(width=300) if ending.kind is EndingKind.EXITED else ""
        why = f"the NVML query {ending.describe()}" + (f": {said}" if said else "")
    smi = _nvidia_smi(host)
    if smi:
        return _from_smi(host, smi, why, pci, smi_timeout), ()
    status = NvmlStatus.PYNVML_MISSING if records else NvmlStatus.FAILED
    return NvmlFacts(status=status, error=why, pci_nvidia_devices=pci), ()


_MEANING = {
    NvmlStatus.LIBRARY_NOT_FOUND: "no NVIDIA driver (NVML library not found)",
    NvmlStatus.DRIVER_NOT_LOADED: "NVIDIA driver installed but not loaded",
    NvmlStatus.VERSION_MISMATCH: "driver/library version mismatch (reboot pending?)",
    NvmlStatus.NO_PERMISSION: "no permission to query the NVIDIA driver",
    NvmlStatus.PYNVML_MISSING: "cannot query (pynvml not importable, no nvidia-smi)",
}


def describe(facts: NvmlFacts) -> str:
    if facts.working:
        names = ", ".join(f"{g.name or 'GPU'} ({g.sm or '?'})" for g in facts.gpus) or "no GPUs"
        cuda = f", CUDA {facts.driver_cuda}" if facts.driver_cuda else ""
        via = " via nvidia-smi" if facts.source == NvmlSource.NVIDIA_SMI else ""
        return f"driver {facts.driver_version}{cuda}{via}; {names}"
    pci = (
        f"; {len(facts.pci_nvidia_devices)} NVIDIA GPU(s) on the PCI bus" if facts.pci_nvidia_devices else ""
    )
    meaning = _MEANING.get(facts.status, f"NVML query failed: {facts.error}")
    return meaning + pci


PROBE = ProbeSpec(
    name="nvml",
    title="NVIDIA driver",
    facts_type=NvmlFacts,
    collect=collect,
    describe=describe,
    timeout=20.0,
)
