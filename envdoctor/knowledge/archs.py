"""Which GPU architectures each torch release x variant was compiled for, and whether a GPU is covered
(archs.json): the one home of the arch lists and of the cubin/PTX compatibility rule.

A cubin for sm_XY runs on GPUs X.Z with Z >= Y (same major); PTX runs on any newer GPU once JIT-compiled
by a driver at least as new as the toolkit. The integrated Tegra parts are exceptions, and so is code
built for one exact architecture (an "a" suffix: sm_90a).
"""

from __future__ import annotations

from functools import cache

from packaging.version import Version

from envdoctor.knowledge import overlay
from envdoctor.knowledge.provenance import Provenance, provenance
from envdoctor.knowledge.tables import Release, load_table
from envdoctor.model.types import TextEnum
from envdoctor.util.limits import small_int
from envdoctor.util.records import record

Capability = tuple[int, int]


def parse_capability(text: str) -> Capability | None:
    """(8, 6) from "8.6", "sm_86", "86", "12.0" or "sm_120"."""
    value = text.strip().lower()
    for prefix in ("sm_", "sm", "compute_"):
        if value.startswith(prefix):
            value = value[len(prefix) :]
            break
    if "." in value:
        major, _, minor = value.partition(".")
        whole, part = small_int(major), small_int(minor)
        if whole is not None and part is not None and len(minor) == 1:
            return whole, part
        return None
    if small_int(value) is not None and len(value) in (2, 3):  # ASCII digits: not "²²"
        return int(value[:-1]), int(value[-1])
    return None


def sm(capability: Capability) -> str:
    return f"sm_{capability[0]}{capability[1]}"


def dotted(capability: Capability) -> str:
    return f"{capability[0]}.{capability[1]}"


@record
class ArchList:
    """A build's TORCH_CUDA_ARCH_LIST: cubins and (Linux only) PTX."""

    cubins: tuple[Capability, ...]
    ptx: tuple[Capability, ...]
    inferred: bool  # the data copies a neighbouring release's list
    provenance: Provenance

    @property
    def source(self) -> tuple[str, ...]:
        """The public references the list comes from."""
        return self.provenance.source

    def describe(self) -> str:
        parts = [sm(c) for c in self.cubins] + [f"compute_{c[0]}{c[1]} (PTX)" for c in self.ptx]
        return " ".join(parts)


def _parse_list(text: str, with_ptx: bool) -> tuple[tuple[Capability, ...], tuple[Capability, ...]]:
    cubins: list[Capability] = []
    ptx: list[Capability] = []
    for item in text.split(";"):
        name, plus, _ = item.partition("+")
        capability = parse_capability(name)
        if capability is None:
            continue
        cubins.append(capability)
        if plus and with_ptx:
            ptx.append(capability)
    return tuple(cubins), tuple(ptx)


@cache
def arch_list(torch: Release, variant: str, platform: str) -> ArchList | None:
    """The arch list of `torch`'s `variant` build for `platform` ("linux-x86_64"); None when unknown.

    A release newer than the data (`torch.assumed`) takes the newest known series' list, marked
    inferred: an index cannot tell which GPUs a wheel was compiled for."""
    if not variant.startswith("cu"):
        return None
    table = load_table("archs.json")
    machine = "aarch64" if platform.endswith("aarch64") else "x86_64"
    with_ptx = not table["ptx_linux_only"] or platform.startswith("linux")
    rows = table["arch_lists"]
    if torch.assumed:
        rows = sorted(rows, key=lambda r: max(Version(s) for s in r["series"]), reverse=True)[:1]
    for row in rows:
        if torch.series not in row["series"] and not torch.assumed:
            continue
        lists = row.get("aarch64", {}) if machine == "aarch64" else row["variants"]
        text = lists.get(variant)
        if text is None:
            return None
        cubins, ptx = _parse_list(text, with_ptx)
        return ArchList(cubins, ptx, bool(row.get("inferred")) or torch.assumed, provenance(row))
    return _overlay_arch_list(torch, variant, machine, with_ptx)


overlay.derived(arch_list.cache_clear)


def _overlay_arch_list(torch: Release, variant: str, machine: str, with_ptx: bool) -> ArchList | None:
    """A release `envdoctor update` added: its list is assumed, carried forward from a known build."""
    found = overlay.arch_list(torch.torch, variant, machine)
    if found is None:
        return None
    cubins, ptx = _parse_list(found.arch_list, with_ptx)
    basis = f"assumed: carried forward from {found.origin} by `envdoctor update` (no index tells arch lists)"
    return ArchList(cubins, ptx, True, Provenance(found.references, basis, verified=False))


@record
class _Rule:
    self_only: frozenset[Capability]
    also_runs_on: dict[Capability, frozenset[Capability]]
    exact_suffixes: frozenset[str]


def _capability(text: str) -> Capability:
    found = parse_capability(text)
    if found is None:
        raise ValueError(f"archs.json: {text!r} is not a compute capability")
    return found


@cache
def _rule() -> _Rule:
    raw = load_table("archs.json")["cubin_rule"]
    suffixes = raw["suffixes"]
    return _Rule(
        self_only=frozenset(_capability(c) for c in raw["self_only"]),
        also_runs_on={
            _capability(k): frozenset(_capability(c) for c in v) for k, v in raw["also_runs_on"].items()
        },
        exact_suffixes=frozenset(k for k, v in suffixes.items() if v == "exact"),
    )


def cubin_runs_on(cubin: Capability, gpu: Capability, suffix: str = "") -> bool:
    """Whether an sm_XY cubin (`suffix` "a" for sm_XYa) runs on a GPU of compute capability `gpu`
    (DEVICE_REQUIREMENT rules)."""
    rule = _rule()
    if cubin == gpu:
        return True
    if suffix in rule.exact_suffixes:
        return False
    if gpu in rule.also_runs_on.get(cubin, frozenset()):
        return True
    if gpu in rule.self_only or cubin in rule.self_only:
        return False
    return cubin[0] == gpu[0] and gpu[1] >= cubin[1]


def ptx_runs_on(ptx: Capability, gpu: Capability, suffix: str = "") -> bool:
    """Whether compute_XY PTX can be JIT-compiled for `gpu` (given a driver new enough for it)."""
    if suffix in _rule().exact_suffixes:
        return ptx == gpu
    return gpu >= ptx


class CoverageKind(TextEnum):
    CUBIN = "cubin"  # compiled code for the GPU (or one it runs)
    PTX = "ptx"  # only PTX the driver JIT-compiles: needs a driver as new as the toolkit
    NONE = "none"


@record
class Coverage:
    """How a build serves one GPU: by a cubin, only by PTX JIT, or not at all."""

    kind: CoverageKind
    by: Capability | None = None


def coverage(arch: ArchList, gpu: Capability) -> Coverage:
    """The newest cubin that runs on `gpu`, else the newest PTX that compiles for it (as the CUDA
    runtime picks)."""
    for cubin in sorted(arch.cubins, reverse=True):
        if cubin_runs_on(cubin, gpu):
            return Coverage(CoverageKind.CUBIN, cubin)
    for ptx in sorted(arch.ptx, reverse=True):
        if ptx_runs_on(ptx, gpu):
            return Coverage(CoverageKind.PTX, ptx)
    return Coverage(CoverageKind.NONE)


@cache
def _first_cuda() -> dict[Capability, str]:
    raw = load_table("archs.json")["first_cuda"]
    return {_capability(k): str(v) for k, v in raw["capabilities"].items()}


def first_cuda(capability: Capability) -> tuple[int, int] | None:
    """The first CUDA release that knows GPUs of `capability`, as (major, minor); None for one the
    table lacks (older than Pascal, or newer than the data: nothing is claimed about it). A plain
    tuple: this module loads on the install path, which counts its classes."""
    found = _first_cuda().get(capability)
    return cuda_number(found) if found is not None else None


def first_cuda_provenance() -> Provenance:
    return provenance(load_table("archs.json")["first_cuda"])


def cuda_number(text: str | None) -> tuple[int, int] | None:
    """(11, 8) from "11.8", "11.8.89" or "cu118"; None for anything else."""
    if not text:
        return None
    value = text.strip().lower()
    if value.startswith("cu") and value[2:].isdigit() and len(value) >= 4:
        return int(value[2:-1]), int(value[-1])
    parts = value.split(".")
    if len(parts) >= 2 and small_int(parts[0]) is not None and small_int(parts[1]) is not None:
        return int(parts[0]), int(parts[1])
    return None
