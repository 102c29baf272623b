"""AMD, Intel and Apple GPUs. On Linux: the display devices in /sys/class/drm, each AMD GPU's gfx
target (the KFD topology, rocminfo as a fallback), the variables that steer ROCm
(HSA_OVERRIDE_GFX_VERSION, HIP_VISIBLE_DEVICES), whether this user may open the GPU's device files,
and what WSL's and Intel's GPU stacks need (the HSA runtime bundled in torch, the oneAPI releases
installed). On macOS: the Mac's chip, its macOS version and PYTORCH_ENABLE_MPS_FALLBACK. NVIDIA
GPUs are the NVML probe's.

Fast by design: a few sysfs reads; programs run only where there is something to ask (rocminfo for
an AMD GPU whose gfx target the KFD topology does not give; `test` for each AMD/Intel device file;
one `sysctl` on a Mac), each bounded. A tool that hangs, fails or prints garbage, and sysfs entries
that cannot be read, become facts.
"""

from __future__ import annotations

import re
from dataclasses import replace

from envdoctor.host.base import Host
from envdoctor.host.ending import ending_of_result
from envdoctor.knowledge import gpu_vendors as known
from envdoctor.model.types import TextEnum
from envdoctor.probes.base import NotApplicable, ProbeContext, ProbeSpec
from envdoctor.target import TargetError
from envdoctor.util.limits import small_int
from envdoctor.util.records import record

DRM = "/sys/class/drm"
KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"
KFD_DEVICE = "/dev/kfd"
ROCM_VERSION_FILE = "/opt/rocm/.info/version"
DXG = "/dev/dxg"  # WSL 2's GPU paravirtualisation device
SYSTEM_HSA_RUNTIME = "/opt/rocm/lib/libhsa-runtime64.so.1"  # AMD's WSL runtime installs it here
ONEAPI_ROOT = "/opt/intel/oneapi"
IPEX_DIST = "intel_extension_for_pytorch"
AMD_VENDOR = "0x1002"
INTEL_VENDOR = "0x8086"
NVIDIA_VENDOR = "0x10de"  # the NVML probe's
OVERRIDE_VARIABLE = "HSA_OVERRIDE_GFX_VERSION"
HIP_VISIBLE = "HIP_VISIBLE_DEVICES"
ROCR_VISIBLE = "ROCR_VISIBLE_DEVICES"
MPS_FALLBACK = "PYTORCH_ENABLE_MPS_FALLBACK"
# One sysctl answers all three on a Mac; hw.optional.arm64 is 1 on Apple Silicon even for a
# process that Rosetta translates (an Intel Mac has no such name: sysctl says so on stderr).
SYSCTL_NAMES = ("hw.optional.arm64", "machdep.cpu.brand_string", "kern.osproductversion")
_TOOL_TIMEOUT = 5.0  # rocminfo answers in well under a second on a healthy machine
_CARD = re.compile(r"^card(\d+)$")
_RENDER = re.compile(r"^renderD\d{1,4}$")
_VERSION_FOLDER = re.compile(r"^\d{4}\.\d+(\.\d+)*$")  # oneAPI's 2024.0, 2023.2.0
_HSA_LIBRARY = re.compile(r"^libhsa-runtime64\.so(\.\d+)*$")
_SMALL_READ = 16384  # a KFD properties file is about 1.5 KiB, a sysfs id a line


class Vendor(TextEnum):
    AMD = "amd"
    INTEL = "intel"


class ToolStatus(TextEnum):
    OK = "ok"
    NOT_FOUND = "not_found"  # not on PATH
    TIMED_OUT = "timed_out"
    FAILED = "failed"  # did not start, or exited non-zero
    GARBLED = "garbled"  # answered, but with no gfx target in its output


@record
class ToolRun:
    """One bounded run of a vendor tool (rocminfo) and how it ended."""

    tool: str
    status: ToolStatus
    detail: str | None = None


@record
class VendorGpu:
    card: str  # "card1"
    vendor: Vendor
    device_id: str  # "0x744c", lower case
    pci_address: str | None = None  # "0000:03:00.0"
    driver: str | None = None  # amdgpu, i915, xe; None: no driver bound
    gfx_target: str | None = None  # AMD: "gfx1100"; None: unknown
    name: str | None = None  # rocminfo's marketing name, when it ran
    integrated: bool | None = None  # part of the CPU package (an APU, Core Ultra graphics)
    xpu_family: str | None = None  # Intel: the family torch.xpu serves; None: not one it serves
    render_node: str | None = None  # "/dev/dri/renderD128": the file compute opens
    # AMD: the GPU's place among the KFD topology's GPU nodes, which is the order ROCm counts them
    # in (HIP_VISIBLE_DEVICES=0 is the first); None: not in the topology.
    hip_index: int | None = None

    @property
    def label(self) -> str:
        if self.vendor is Vendor.AMD:
            what = self.name or known.gfx_examples(self.gfx_target or "") or f"AMD GPU {self.device_id}"
            return f"{what} ({self.gfx_target or 'gfx target unknown'})"
        return f"{self.xpu_family or 'Intel GPU'} ({self.device_id}, {self.driver or 'no driver'})"


@record
class DeviceNode:
    """A GPU device file compute opens (/dev/kfd, /dev/dri/renderD128) and whether this user may."""

    path: str
    usable: bool | None = None  # opens for reading and writing (ACLs counted); None: not tested
    mode: str | None = None  # "crw-rw----", when it is not usable
    owner: str | None = None
    group: str | None = None  # "render"


@record
class AppleFacts:
    """A Mac: its chip and macOS version as the system says them (not as an old binary is told)."""

    apple_silicon: bool | None = None  # hw.optional.arm64; None: sysctl did not answer
    chip: str | None = None  # "Apple M2 Pro"
    macos_version: str | None = None  # "14.5"
    mps_fallback: str | None = None  # PYTORCH_ENABLE_MPS_FALLBACK as set; None: unset
    tool: ToolRun | None = None  # how sysctl ended when it did not answer


@record
class GpuVendorFacts:
    gpus: tuple[VendorGpu, ...] = ()
    hsa_override: str | None = None  # HSA_OVERRIDE_GFX_VERSION as set; None: unset
    kfd_device: bool | None = None  # /dev/kfd is there (None: not looked, no AMD GPU)
    rocm_version: str | None = None  # /opt/rocm/.info/version
    tool: ToolRun | None = None  # None: no tool was needed
    errors: tuple[str, ...] = ()  # sysfs entries that could not be read
    hip_visible_devices: str | None = None  # HIP_VISIBLE_DEVICES as set; None: unset
    rocr_visible_devices: str | None = None  # ROCR_VISIBLE_DEVICES as set; None: unset
    device_nodes: tuple[DeviceNode, ...] = ()  # /dev/kfd and the GPUs' render nodes
    user_groups: tuple[str, ...] | None = None  # `id -Gn`, asked only when a node is not usable
    # WSL 2 (/dev/dxg): the libhsa-runtime64 files inside the examined torch's lib folder, which
    # PyTorch's own ROCm wheels bundle and AMD's WSL wheels must not use; None: not looked.
    torch_hsa_runtime: tuple[str, ...] | None = None
    system_hsa_runtime: bool | None = None  # /opt/rocm/lib/libhsa-runtime64.so.1 (WSL only)
    oneapi_versions: tuple[str, ...] = ()  # release folders under /opt/intel/oneapi/compiler
    ipex_version: str | None = None  # intel_extension_for_pytorch in the examined environment
    apple: AppleFacts | None = None  # macOS only

    @property
    def amd(self) -> tuple[VendorGpu, ...]:
        return tuple(g for g in self.gpus if g.vendor is Vendor.AMD)

    @property
    def intel(self) -> tuple[VendorGpu, ...]:
        return tuple(g for g in self.gpus if g.vendor is Vendor.INTEL)

    @property
    def xpu_gpus(self) -> tuple[VendorGpu, ...]:
        return tuple(g for g in self.intel if g.xpu_family is not None)

    @property
    def unusable_nodes(self) -> tuple[DeviceNode, ...]:
        return tuple(n for n in self.device_nodes if n.usable is False)


def _read(host: Host, path: str, errors: list[str]) -> str | None:
    """A small sysfs file's text, stripped; None when it is not there or cannot be read (said)."""
    try:
        return host.read_text(path, max_bytes=_SMALL_READ).strip()
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        errors.append(f"{path}: {getattr(exc, 'strerror', None) or exc}")
        return None


def _uevent(text: str | None) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def _cards(host: Host, errors: list[str]) -> list[str]:
    if not host.is_dir(DRM):
        return []
    try:
        names = host.list_dir(DRM)
    except OSError as exc:
        errors.append(f"{DRM}: {exc.strerror or exc}")
        return []
    cards = [(int(m.group(1)), name) for name in names if (m := _CARD.match(name))]
    return [name for _, name in sorted(cards)]


def _device(host: Host, card: str, errors: list[str]) -> VendorGpu | None:
    base = f"{DRM}/{card}/device"
    vendor = (_read(host, f"{base}/vendor", errors) or "").lower()
    if vendor not in (AMD_VENDOR, INTEL_VENDOR):
        return None  # NVIDIA (the NVML probe's), a virtual or BMC display, or unreadable
    device_id = (_read(host, f"{base}/device", errors) or "?").lower()
    uevent = _uevent(_read(host, f"{base}/uevent", errors))
    if vendor == AMD_VENDOR:
        return VendorGpu(card, Vendor.AMD, device_id, uevent.get("PCI_SLOT_NAME"), uevent.get("DRIVER"))
    family = known.xpu_family(device_id)
    return VendorGpu(
        card,
        Vendor.INTEL,
        device_id,
        uevent.get("PCI_SLOT_NAME"),
        uevent.get("DRIVER"),
        integrated="Core Ultra" in family.name if family else None,
        xpu_family=family.name if family else None,
    )


@record
class _KfdNode:
    gfx: str
    device_id: int | None
    integrated: bool


def _properties(text: str) -> dict[str, int]:
    values: dict[str, int] = {}
    for line in text.splitlines()[:200]:
        key, _, value = line.strip().partition(" ")
        number = small_int(value.strip())
        if key and number is not None:
            values[key] = number
    return values


def _kfd_nodes(host: Host, errors: list[str]) -> list[_KfdNode]:
    """The GPU nodes of the KFD topology (the amdgpu kernel driver's compute view)."""
    if not host.is_dir(KFD_NODES):
        return []
    try:
        names = sorted(host.list_dir(KFD_NODES), key=lambda n: small_int(n) or 0)
    except OSError as exc:
        errors.append(f"{KFD_NODES}: {exc.strerror or exc}")
        return []
    nodes = []
    for name in names:
        text = _read(host, f"{KFD_NODES}/{name}/properties", errors)
        props = _properties(text or "")
        gfx = known.gfx_from_version(props.get("gfx_target_version", 0))
        if gfx is None or not props.get("simd_count"):
            continue  # a CPU node, or one that says nothing usable
        # An APU's GPU node also counts the CPU cores it shares the package with.
        nodes.append(_KfdNode(gfx, props.get("device_id"), bool(props.get("cpu_cores_count"))))
    return nodes


def _with_kfd(gpus: list[VendorGpu], nodes: list[_KfdNode]) -> list[VendorGpu]:
    """Each AMD GPU with the gfx target of the KFD node of its device id (in order, for twins)."""
    left = list(nodes)
    found = []
    for gpu in gpus:
        if gpu.vendor is Vendor.AMD:
            wanted = int(gpu.device_id, 16) if re.fullmatch(r"0x[0-9a-f]{1,4}", gpu.device_id) else None
            node = next((n for n in left if n.device_id == wanted), None)
            if node is not None:
                left.remove(node)
                gpu = replace(
                    gpu, gfx_target=node.gfx, integrated=node.integrated, hip_index=nodes.index(node)
                )
        found.append(gpu)
    return found


_AGENT_NAME = re.compile(r"^\s*Name:\s*(gfx[0-9a-f]{3,4})\s*$")
_MARKETING = re.compile(r"^\s*Marketing Name:\s*(.+?)\s*$")


def parse_rocminfo(text: str) -> list[tuple[str, str | None]]:
    """(gfx target, marketing name) of each GPU agent in rocminfo's output, in order."""
    agents: list[tuple[str, str | None]] = []
    pending: str | None = None
    for line in text.splitlines()[:20000]:
        name = _AGENT_NAME.match(line)
        if name is not None:
            if pending is not None:
                agents.append((pending, None))
            pending = name.group(1)
            continue
        marketing = _MARKETING.match(line)
        if marketing is not None and pending is not None:
            agents.append((pending, marketing.group(1)[:120]))
            pending = None
    if pending is not None:
        agents.append((pending, None))
    return agents


def _rocminfo(host: Host, timeout: float) -> tuple[ToolRun, list[tuple[str, str | None]]]:
    path = host.which("rocminfo")
    if path is None:
        return ToolRun("rocminfo", ToolStatus.NOT_FOUND), []
    result = host.run([path], timeout)
    if result.timed_out:
        ending = ending_of_result(result, limit=timeout)
        return ToolRun("rocminfo", ToolStatus.TIMED_OUT, f"rocminfo {ending.describe()} and was stopped"), []
    if not result.ok:
        said = result.stderr.strip() or result.stdout.strip() or result.start_error or "failed"
        said = said.splitlines()[-1][:300] if said.splitlines() else said[:300]
        return ToolRun("rocminfo", ToolStatus.FAILED, f"exit {result.returncode}: {said}"), []
    agents = parse_rocminfo(result.stdout)
    if not agents:
        return ToolRun("rocminfo", ToolStatus.GARBLED, "its output names no gfx target"), []
    return ToolRun("rocminfo", ToolStatus.OK), agents


def _with_rocminfo(gpus: list[VendorGpu], agents: list[tuple[str, str | None]]) -> list[VendorGpu]:
    left = list(agents)
    found = []
    for gpu in gpus:
        if gpu.vendor is Vendor.AMD and gpu.gfx_target is None and left:
            gfx, name = left.pop(0)
            gpu = replace(gpu, gfx_target=gfx, name=name)
        found.append(gpu)
    return found


def _render_node(host: Host, card: str, errors: list[str]) -> str | None:
    """The render node of a card (device/drm lists "card1" and "renderD128"): compute opens it."""
    folder = f"{DRM}/{card}/device/drm"
    try:
        names = host.list_dir(folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        errors.append(f"{folder}: {exc.strerror or exc}")
        return None
    found = next((n for n in sorted(names) if _RENDER.match(n)), None)
    return f"/dev/dri/{found}" if found else None


def _stat_words(host: Host, path: str, timeout: float) -> tuple[str | None, str | None, str | None]:
    """(mode, owner, group) of a device file, as `stat` says them; Nones when it cannot."""
    stat = host.which("stat")
    if stat is None:
        return None, None, None
    result = host.run([stat, "-L", "-c", "%A %U %G", path], timeout)
    words = result.stdout.split() if result.ok else []
    if len(words) != 3 or not re.fullmatch(r"[-a-zA-Z+.]{10,11}", words[0]):
        return None, None, None
    return words[0], words[1][:64], words[2][:64]


def _device_nodes(
    host: Host, paths: list[str], timeout: float
) -> tuple[tuple[DeviceNode, ...], tuple[str, ...] | None]:
    """Whether this user may open each device file: `test -r -w` asks the kernel itself, so the
    ACLs a local login grants count (mode bits alone would say no to a desktop user outside the
    render group). Only a file that cannot be opened is looked at further, with the user's groups."""
    tester = host.which("test") if paths else None
    if tester is None:
        return tuple(DeviceNode(p) for p in paths), None
    nodes = []
    for path in paths:
        result = host.run([tester, "-r", path, "-a", "-w", path], timeout)
        usable = True if result.returncode == 0 else False if result.returncode == 1 else None
        if usable is False:
            mode, owner, group = _stat_words(host, path, timeout)
            nodes.append(DeviceNode(path, False, mode, owner, group))
        else:
            nodes.append(DeviceNode(path, usable))
    groups = None
    if any(n.usable is False for n in nodes):
        ident = host.which("id")
        said = host.run([ident, "-Gn"], timeout) if ident is not None else None
        if said is not None and said.ok:
            groups = tuple(g[:64] for g in said.stdout.split()[:200])
    return tuple(nodes), groups


def _site_packages(ctx: ProbeContext) -> str | None:
    """The examined environment's site-packages; None where the interpreter could not say (the
    install path's detection may run before, or without, a working target)."""
    try:
        info = ctx.target.info
    except TargetError:
        return None
    return f"{info.prefix}/lib/python{info.minor}/site-packages" if info.prefix else None


def _listing(host: Host, folder: str) -> tuple[str, ...] | None:
    try:
        return host.list_dir(folder)
    except OSError:
        return None


def _wsl_runtime(ctx: ProbeContext) -> tuple[tuple[str, ...] | None, bool | None]:
    """On WSL 2: the HSA runtime files torch carries in its lib folder, and whether AMD's WSL
    runtime is installed. Nones elsewhere, and where torch's folder cannot be listed."""
    host = ctx.host
    if not host.exists(DXG):
        return None, None
    site = _site_packages(ctx)
    names = _listing(host, f"{site}/torch/lib") if site else None
    bundled = tuple(n for n in names or () if _HSA_LIBRARY.match(n)) if names is not None else None
    return bundled, host.exists(SYSTEM_HSA_RUNTIME)


def _oneapi(ctx: ProbeContext, intel: bool) -> tuple[tuple[str, ...], str | None]:
    """The oneAPI releases under /opt/intel/oneapi (its compiler's version folders) and the
    intel_extension_for_pytorch the environment holds: looked for where an Intel GPU or oneAPI is."""
    host = ctx.host
    versions: tuple[str, ...] = ()
    if host.is_dir(ONEAPI_ROOT):
        folders = _listing(host, f"{ONEAPI_ROOT}/compiler") or ()
        versions = tuple(sorted(n for n in folders if _VERSION_FOLDER.match(n))[:20])
    elif not intel:
        return (), None
    site = _site_packages(ctx)
    names = _listing(host, site) if site else None
    prefix = f"{IPEX_DIST}-"
    ipex = next(
        (
            n[len(prefix) : -len(".dist-info")]
            for n in names or ()
            if n.startswith(prefix) and n.endswith(".dist-info")
        ),
        None,
    )
    return versions, (ipex or "")[:60] or None


_SYSCTL_LINE = re.compile(r"^([a-z0-9_.]+):\s*(.*?)\s*$")


def parse_sysctl(text: str) -> dict[str, str]:
    """ "name: value" lines of `sysctl NAME...` (an unknown name is said on stderr, not here)."""
    found: dict[str, str] = {}
    for line in text.splitlines()[:50]:
        match = _SYSCTL_LINE.match(line)
        if match is not None and match.group(1) in SYSCTL_NAMES:
            found[match.group(1)] = match.group(2)[:120]
    return found


def _apple(ctx: ProbeContext) -> AppleFacts:
    host = ctx.host
    fallback = host.env.get(MPS_FALLBACK)
    sysctl = host.which("sysctl") or ("/usr/sbin/sysctl" if host.exists("/usr/sbin/sysctl") else None)
    if sysctl is None:
        return AppleFacts(mps_fallback=fallback, tool=ToolRun("sysctl", ToolStatus.NOT_FOUND))
    limit = ctx.options.child_limit(PROBE.timeout, _TOOL_TIMEOUT, share=0.5)
    result = host.run([sysctl, *SYSCTL_NAMES], limit)
    values = parse_sysctl(result.stdout) if not result.timed_out else {}
    tool = None
    if result.timed_out:
        tool = ToolRun(
            "sysctl", ToolStatus.TIMED_OUT, f"sysctl {ending_of_result(result, limit=limit).describe()}"
        )
    elif not values:
        said = (result.stderr.strip() or result.start_error or "no answer").splitlines()
        tool = ToolRun("sysctl", ToolStatus.FAILED, said[-1][:300] if said else "no answer")
    arm64 = values.get("hw.optional.arm64")
    version = values.get("kern.osproductversion")
    return AppleFacts(
        # An Intel Mac has no hw.optional.arm64: sysctl answered the other names, not that one.
        apple_silicon=(arm64 == "1") if arm64 is not None else (False if values else None),
        chip=values.get("machdep.cpu.brand_string") or None,
        macos_version=version if version and re.fullmatch(r"\d{1,2}(\.\d{1,3}){0,2}", version) else None,
        mps_fallback=fallback,
        tool=tool,
    )


def collect(ctx: ProbeContext) -> GpuVendorFacts:
    host = ctx.host
    system = host.platform().system
    if system == "Darwin":
        return GpuVendorFacts(apple=_apple(ctx))
    if system != "Linux":
        raise NotApplicable("AMD and Intel GPUs are looked for in Linux's sysfs, Apple GPUs on macOS")
    errors: list[str] = []
    env = host.env
    gpus = [gpu for card in _cards(host, errors) if (gpu := _device(host, card, errors)) is not None]
    gpus = [replace(g, render_node=_render_node(host, g.card, errors)) for g in gpus]
    amd = any(g.vendor is Vendor.AMD for g in gpus)
    intel = any(g.vendor is Vendor.INTEL for g in gpus)
    tool = None
    kfd = None
    rocm = None
    if amd:
        gpus = _with_kfd(gpus, _kfd_nodes(host, errors))
        if any(g.vendor is Vendor.AMD and g.gfx_target is None for g in gpus):
            limit = ctx.options.child_limit(PROBE.timeout, _TOOL_TIMEOUT, share=0.5)
            tool, agents = _rocminfo(host, limit)
            gpus = _with_rocminfo(gpus, agents)
        rocm = _read(host, ROCM_VERSION_FILE, errors) if host.exists(ROCM_VERSION_FILE) else None
        kfd = host.exists(KFD_DEVICE)
    paths = ([KFD_DEVICE] if kfd else []) + [
        g.render_node for g in gpus if g.render_node and host.exists(g.render_node)
    ]
    nodes, groups = _device_nodes(
        host, list(dict.fromkeys(paths)), ctx.options.child_limit(PROBE.timeout, 2.0, 0.1)
    )
    bundled, system_hsa = _wsl_runtime(ctx) if not gpus else (None, None)
    oneapi, ipex = _oneapi(ctx, intel)
    return GpuVendorFacts(
        gpus=tuple(gpus),
        hsa_override=env.get(OVERRIDE_VARIABLE),
        kfd_device=kfd,
        rocm_version=(rocm or "")[:40] or None,
        tool=tool,
        errors=tuple(errors),
        hip_visible_devices=env.get(HIP_VISIBLE),
        rocr_visible_devices=env.get(ROCR_VISIBLE),
        device_nodes=nodes,
        user_groups=groups,
        torch_hsa_runtime=bundled,
        system_hsa_runtime=system_hsa,
        oneapi_versions=oneapi,
        ipex_version=ipex,
    )


def _describe_apple(apple: AppleFacts) -> str:
    chip = apple.chip or (
        "Apple Silicon" if apple.apple_silicon else "Intel Mac" if apple.apple_silicon is False else "Mac"
    )
    said = f"{chip}, macOS {apple.macos_version or '(version unknown)'}"
    if apple.mps_fallback is not None:
        said += f"; {MPS_FALLBACK}={apple.mps_fallback}"
    if apple.tool is not None:
        said += f"; {apple.tool.tool}: {apple.tool.detail or apple.tool.status.value.replace('_', ' ')}"
    return said


def describe(facts: GpuVendorFacts) -> str:
    if facts.apple is not None:
        return _describe_apple(facts.apple)
    said = "no AMD or Intel GPU" if not facts.gpus else "; ".join(g.label for g in facts.gpus)
    if facts.hsa_override is not None:
        said += f"; {OVERRIDE_VARIABLE}={facts.hsa_override}"
    if facts.amd and facts.kfd_device is False:
        said += f"; no {KFD_DEVICE}"
    for node in facts.unusable_nodes:
        said += f"; {node.path} not usable by this user"
    if facts.tool is not None and facts.tool.status is not ToolStatus.OK:
        said += f"; {facts.tool.tool}: {facts.tool.detail or facts.tool.status.value.replace('_', ' ')}"
    if facts.errors:
        said += f"; {len(facts.errors)} sysfs entr{'y' if len(facts.errors) == 1 else 'ies'} unreadable"
    return said


PROBE = ProbeSpec(
    name="gpu_vendors",
    title="AMD and Intel GPUs",
    facts_type=GpuVendorFacts,
    collect=collect,
    describe=describe,
    timeout=10.0,
)
