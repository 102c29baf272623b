"""The NVIDIA driver and GPUs, as NVML sees them (nvidia-smi when pynvml cannot load).

Also lists NVIDIA display devices on the PCI bus (Linux), so "a GPU is there but no driver works"
can be told apart from "there is no NVIDIA GPU".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envdoctor.host.base import Host
from envdoctor.host.ending import ending_of_outcome, ending_of_result
from envdoctor.knowledge import archs
from envdoctor.model.ending import EndingKind
from envdoctor.model.types import TextEnum
from envdoctor.probes.base import NotApplicable, ProbeContext, ProbeSpec
from envdoctor.util.limits import small_int

NVIDIA_PCI_VENDOR = "0x10de"
PCI_DEVICES = "/sys/bus/pci/devices"
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


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str | None = None
    capability: tuple[int, int] | None = None
    memory_total_bytes: int | None = None

    @property
    def sm(self) -> str | None:
        """ "sm_89" for compute capability 8.9."""
        return None if self.capability is None else archs.sm(self.capability)


@dataclass(frozen=True)
class NvmlFacts:
    status: NvmlStatus
    source: NvmlSource | None = None
    error: str | None = None
    driver_version: str | None = None  # "550.144.03"
    cuda_driver_version: int | None = None  # 12040: the newest CUDA the driver runs natively
    gpus: tuple[Gpu, ...] = ()
    pci_nvidia_devices: tuple[str, ...] = ()  # PCI addresses of NVIDIA display controllers
    errors: tuple[str, ...] = ()

    @property
    def driver_cuda(self) -> str | None:
        """ "12.4" from 12040, as nvidia-smi prints it."""
        v = self.cuda_driver_version
        return None if v is None else f"{v // 1000}.{(v % 1000) // 10}"

    @property
    def working(self) -> bool:
        return self.status == NvmlStatus.OK


def _pci_nvidia_devices(host: Host) -> tuple[str, ...]:
    try:
        addresses = host.list_dir(PCI_DEVICES)
    except OSError:
        return ()
    found = []
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
    return tuple(found)


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


def collect(ctx: ProbeContext) -> NvmlFacts:
    host = ctx.host
    if host.platform().system == "Darwin":
        raise NotApplicable("macOS has no NVIDIA CUDA driver")
    pci = _pci_nvidia_devices(host) if host.platform().system == "Linux" else ()
    # Half the probe's time for the NVML child, a fifth for each nvidia-smi run: a hung driver is
    # named before the probe's deadline, whatever --timeout is.
    child_timeout = ctx.options.child_limit(PROBE.timeout, _CHILD_TIMEOUT, share=0.5)
    smi_timeout = ctx.options.child_limit(PROBE.timeout, _SMI_TIMEOUT, share=0.2)
    outcome = host.python_json(host.own_python, "nvml_probe.py", (), child_timeout)
    records = [r for r in outcome.records if r.get("record") == "nvml"]
    if records:
        facts = _from_record(records[-1], pci)
        if facts.status != NvmlStatus.PYNVML_MISSING:
            return facts
        why = f"pynvml could not load ({facts.error})"
    else:
        ending = ending_of_outcome(outcome, limit=child_timeout)
        said = ending.last_output(width=300) if ending.kind is EndingKind.EXITED else ""
        why = f"the NVML query {ending.describe()}" + (f": {said}" if said else "")
    smi = _nvidia_smi(host)
    if smi:
        return _from_smi(host, smi, why, pci, smi_timeout)
    status = NvmlStatus.PYNVML_MISSING if records else NvmlStatus.FAILED
    return NvmlFacts(status=status, error=why, pci_nvidia_devices=pci)


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
