"""AMD and Intel GPUs: the display devices in /sys/class/drm, each AMD GPU's gfx target (the KFD
topology, rocminfo as a fallback) and HSA_OVERRIDE_GFX_VERSION. NVIDIA GPUs are the NVML probe's.

Fast by design: a few sysfs reads; a program runs only when an AMD GPU is there whose gfx target
the KFD topology does not give, and then bounded. A tool that hangs, fails or prints garbage, and
sysfs entries that cannot be read, become facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from envdoctor.host.base import Host
from envdoctor.host.ending import ending_of_result
from envdoctor.knowledge import gpu_vendors as known
from envdoctor.model.types import TextEnum
from envdoctor.probes.base import NotApplicable, ProbeContext, ProbeSpec
from envdoctor.util.limits import small_int

DRM = "/sys/class/drm"
KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"
KFD_DEVICE = "/dev/kfd"
ROCM_VERSION_FILE = "/opt/rocm/.info/version"
AMD_VENDOR = "0x1002"
INTEL_VENDOR = "0x8086"
NVIDIA_VENDOR = "0x10de"  # the NVML probe's
OVERRIDE_VARIABLE = "HSA_OVERRIDE_GFX_VERSION"
_TOOL_TIMEOUT = 5.0  # rocminfo answers in well under a second on a healthy machine
_CARD = re.compile(r"^card(\d+)$")
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


@dataclass(frozen=True)
class ToolRun:
    """One bounded run of a vendor tool (rocminfo) and how it ended."""

    tool: str
    status: ToolStatus
    detail: str | None = None


@dataclass(frozen=True)
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

    @property
    def label(self) -> str:
        if self.vendor is Vendor.AMD:
            what = self.name or known.gfx_examples(self.gfx_target or "") or f"AMD GPU {self.device_id}"
            return f"{what} ({self.gfx_target or 'gfx target unknown'})"
        return f"{self.xpu_family or 'Intel GPU'} ({self.device_id}, {self.driver or 'no driver'})"


@dataclass(frozen=True)
class GpuVendorFacts:
    gpus: tuple[VendorGpu, ...] = ()
    hsa_override: str | None = None  # HSA_OVERRIDE_GFX_VERSION as set; None: unset
    kfd_device: bool | None = None  # /dev/kfd is there (None: not looked, no AMD GPU)
    rocm_version: str | None = None  # /opt/rocm/.info/version
    tool: ToolRun | None = None  # None: no tool was needed
    errors: tuple[str, ...] = ()  # sysfs entries that could not be read

    @property
    def amd(self) -> tuple[VendorGpu, ...]:
        return tuple(g for g in self.gpus if g.vendor is Vendor.AMD)

    @property
    def intel(self) -> tuple[VendorGpu, ...]:
        return tuple(g for g in self.gpus if g.vendor is Vendor.INTEL)

    @property
    def xpu_gpus(self) -> tuple[VendorGpu, ...]:
        return tuple(g for g in self.intel if g.xpu_family is not None)


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


@dataclass(frozen=True)
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
                gpu = replace(gpu, gfx_target=node.gfx, integrated=node.integrated)
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


def collect(ctx: ProbeContext) -> GpuVendorFacts:
    host = ctx.host
    if host.platform().system != "Linux":
        raise NotApplicable("AMD and Intel GPUs are looked for in Linux's sysfs only")
    errors: list[str] = []
    gpus = [gpu for card in _cards(host, errors) if (gpu := _device(host, card, errors)) is not None]
    override = host.env.get(OVERRIDE_VARIABLE)
    if not any(g.vendor is Vendor.AMD for g in gpus):
        return GpuVendorFacts(gpus=tuple(gpus), hsa_override=override, errors=tuple(errors))
    gpus = _with_kfd(gpus, _kfd_nodes(host, errors))
    tool = None
    if any(g.vendor is Vendor.AMD and g.gfx_target is None for g in gpus):
        limit = ctx.options.child_limit(PROBE.timeout, _TOOL_TIMEOUT, share=0.5)
        tool, agents = _rocminfo(host, limit)
        gpus = _with_rocminfo(gpus, agents)
    rocm = _read(host, ROCM_VERSION_FILE, errors) if host.exists(ROCM_VERSION_FILE) else None
    return GpuVendorFacts(
        gpus=tuple(gpus),
        hsa_override=override,
        kfd_device=host.exists(KFD_DEVICE),
        rocm_version=(rocm or "")[:40] or None,
        tool=tool,
        errors=tuple(errors),
    )


def describe(facts: GpuVendorFacts) -> str:
    said = "no AMD or Intel GPU" if not facts.gpus else "; ".join(g.label for g in facts.gpus)
    if facts.hsa_override is not None:
        said += f"; {OVERRIDE_VARIABLE}={facts.hsa_override}"
    if facts.amd and facts.kfd_device is False:
        said += f"; no {KFD_DEVICE}"
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
