"""What one CUDA toolkit's nvcc can build: the newest gcc it accepts, the GPU architectures it can
target, and the TORCH_CUDA_ARCH_LIST entries torch.utils.cpp_extension accepts by torch release.

Data: nvcc.json beside this file (sources there). Versions newer than the data answer None: the
callers then say nothing rather than guess.
"""

from __future__ import annotations

from functools import cache

from envdoctor.knowledge.provenance import Provenance, provenance
from envdoctor.knowledge.tables import load_table
from envdoctor.util.limits import small_int
from envdoctor.util.records import record

_TABLE = "nvcc.json"

Version2 = tuple[int, int]


def version2(text: str | None) -> Version2 | None:
    """(12, 4) from "12.4", "12.4.131" or "V12.4"; None when the text has no major.minor."""
    if not text:
        return None
    parts = text.strip().lstrip("vV").split(".")
    if len(parts) < 2:
        return None
    major, minor = small_int(parts[0]), small_int(parts[1])
    if major is None or minor is None:
        return None
    return major, minor


@record
class HostCompilerLimit:
    cuda: str  # the row's CUDA major.minor: "12.1"
    gcc_below: int  # the first gcc major this nvcc refuses
    provenance: Provenance

    @property
    def newest_gcc(self) -> int:
        return self.gcc_below - 1


@cache
def _host_rows() -> tuple[HostCompilerLimit, ...]:
    rows = load_table(_TABLE)["host_compilers"]["rows"]
    return tuple(HostCompilerLimit(str(r["cuda"]), int(r["gcc_below"]), provenance(r)) for r in rows)


def host_compiler_limit(cuda: str | None) -> HostCompilerLimit | None:
    """The gcc limit of nvcc from CUDA `cuda`: its own row, else the nearest older row of the same
    major (a minor release the data skips keeps its predecessor's limit); None past the data."""
    wanted = version2(cuda)
    if wanted is None:
        return None
    rows = sorted(_host_rows(), key=lambda r: version2(r.cuda) or (0, 0))
    newest = version2(rows[-1].cuda) if rows else None
    if newest is None or wanted > newest:
        return None
    best = None
    for row in rows:
        have = version2(row.cuda)
        if have is not None and have[0] == wanted[0] and have <= wanted:
            best = row
    return best


def first_cuda_accepting(gcc_major: int, newer_than: str | None) -> str | None:
    """The first CUDA release after `newer_than` (same major) whose nvcc accepts gcc `gcc_major`."""
    after = version2(newer_than)
    for row in sorted(_host_rows(), key=lambda r: version2(r.cuda) or (0, 0)):
        have = version2(row.cuda)
        if have is None or (after is not None and (have <= after or have[0] != after[0])):
            continue
        if row.gcc_below > gcc_major:
            return row.cuda
    return None


@record
class ArchSupport:
    arch: str  # "8.9"
    first: str  # the first CUDA release whose nvcc targets it
    dropped: str | None  # the first CUDA release that no longer does
    provenance: Provenance


@cache
def _arch_rows() -> dict[str, ArchSupport]:
    rows = load_table(_TABLE)["architectures"]["rows"]
    return {
        str(r["arch"]): ArchSupport(str(r["arch"]), str(r["first"]), r.get("dropped"), provenance(r))
        for r in rows
    }


def arch_support(arch: str) -> ArchSupport | None:
    """The CUDA releases whose nvcc can build for `arch` ("8.9"; a suffix such as "9.0a" is the
    same architecture); None when the data does not know the architecture."""
    return _arch_rows().get(arch.rstrip("af"))


def nvcc_builds_for(cuda: str | None, arch: str) -> bool | None:
    """Whether nvcc of CUDA `cuda` can target `arch`; None when either is unknown to the data."""
    have = version2(cuda)
    support = arch_support(arch)
    if have is None or support is None:
        return None
    first = version2(support.first)
    dropped = version2(support.dropped)
    if first is None:
        return None
    return have >= first and (dropped is None or have < dropped)


@record
class TorchArch:
    arch: str  # "9.0", "9.0a"
    first: str  # the first torch release whose cpp_extension accepts it
    removed: str | None
    provenance: Provenance


@cache
def _torch_arch_rows() -> dict[str, TorchArch]:
    rows = load_table(_TABLE)["cpp_extension_arches"]["rows"]
    return {
        str(r["arch"]): TorchArch(str(r["arch"]), str(r["first"]), r.get("removed"), provenance(r))
        for r in rows
    }


@cache
def named_arches() -> tuple[tuple[str, str], ...]:
    """cpp_extension's named architectures in its order (combined names before single ones)."""
    named = load_table(_TABLE)["cpp_extension_arches"]["named"]
    return tuple((str(k), str(v)) for k, v in named.items())


def arch_list_entries(value: str) -> tuple[str, ...]:
    """The entries of a TORCH_CUDA_ARCH_LIST value as cpp_extension reads them: spaces become ';',
    named architectures are expanded, then the value is split on ';' (empty entries kept, as there)."""
    text = value.replace(" ", ";")
    for name, archs in named_arches():
        text = text.replace(name, archs)
    return tuple(text.split(";"))


def torch_accepts_arch(torch: str | None, entry: str) -> bool | None:
    """Whether torch release `torch`'s cpp_extension accepts the TORCH_CUDA_ARCH_LIST entry `entry`
    ("8.6", "9.0+PTX"); False for an entry no release accepts; None when torch is newer than the
    data or unknown (newer releases may accept more)."""
    arch = entry[: -len("+PTX")] if entry.endswith("+PTX") else entry
    row = _torch_arch_rows().get(arch)
    if row is None:
        return False if _looks_unknown(arch) else None
    release = version2(torch)
    if release is None:
        return None
    removed = version2(row.removed)
    first = version2(row.first)
    if first is not None and release < first:
        return False
    return removed is None or release < removed


def _looks_unknown(arch: str) -> bool:
    """An entry that is no architecture in any torch release's spelling ("sm_86", "86", "8.6;"
    leftovers), as opposed to a newer architecture the data does not know yet ("13.0")."""
    major, dot, minor = arch.partition(".")
    return not (dot and major.isdigit() and minor.rstrip("af").isdigit())


def torch_arch_row(entry: str) -> TorchArch | None:
    arch = entry[: -len("+PTX")] if entry.endswith("+PTX") else entry
    return _torch_arch_rows().get(arch)
