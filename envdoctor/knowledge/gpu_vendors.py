"""AMD (ROCm) and Intel (XPU) GPUs: which gfx targets each ROCm build of torch carries, the ISA
families HSA_OVERRIDE_GFX_VERSION may move a GPU within, and which Intel GPUs torch.xpu serves.
Data: rocm.json and xpu.json (sources there)."""

from __future__ import annotations

import re
from functools import cache

from envdoctor.knowledge import load_table, parse_version
from envdoctor.knowledge.provenance import Provenance, provenance
from envdoctor.util.lazy_re import Lazy
from envdoctor.util.records import record

_GFX = Lazy(r"^gfx([0-9]{1,2})([0-9a-f])([0-9a-f])$")
_OVERRIDE = Lazy(r"^\s*([0-9]{1,2})\.([0-9]{1,2})\.([0-9]{1,2})\s*$")


@record
class RocmArchList:
    """The gfx targets of the torch builds for one range of ROCm versions."""

    first: str  # "6.0"
    last: str | None  # "6.2.99"; None: up to now
    arch: tuple[str, ...]
    provenance: Provenance


@record
class GfxFamily:
    prefix: str  # "gfx103"
    name: str  # "RDNA 2"
    stand_in: str | None  # the family member the builds carry, which the others may pose as
    override: str | None  # HSA_OVERRIDE_GFX_VERSION for that: "10.3.0"
    provenance: Provenance


@record
class XpuFamily:
    name: str
    ids: tuple[str, ...]  # "0x56a0", lower case
    provenance: Provenance
    names: tuple[str, ...] = ()  # model names: "Arc A770"


def gfx_from_version(value: int) -> str | None:
    """ "gfx1100" from KFD's gfx_target_version 110000 (major*10000 + minor*100 + stepping)."""
    if value <= 0 or value >= 1_000_000:
        return None
    major, minor, stepping = value // 10000, (value // 100) % 100, value % 100
    if minor > 15 or stepping > 15:
        return None
    return f"gfx{major}{minor:x}{stepping:x}"


def gfx_from_override(text: str) -> str | None:
    """ "gfx1030" from HSA_OVERRIDE_GFX_VERSION=10.3.0; None when the value is malformed."""
    match = _OVERRIDE.match(text)
    if match is None:
        return None
    major, minor, stepping = (int(g) for g in match.groups())
    if major == 0 or minor > 15 or stepping > 15:
        return None
    return f"gfx{major}{minor:x}{stepping:x}"


def is_gfx(text: str | None) -> bool:
    return bool(text) and _GFX.match(text or "") is not None


@cache
def _rocm() -> dict[str, object]:
    return load_table("rocm.json")


@cache
def rocm_arch_lists() -> tuple[RocmArchList, ...]:
    rows = _rocm()["builds"]
    assert isinstance(rows, list)
    return tuple(
        RocmArchList(first=row["from"], last=row["to"], arch=tuple(row["arch"]), provenance=provenance(row))
        for row in rows
    )


def rocm_version(variant: str) -> str | None:
    """ "6.2" from "rocm6.2" (or from torch.version.hip "6.2.41133-dd7f95766")."""
    text = variant[4:] if variant.startswith("rocm") else variant
    parts = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?", text)
    if parts is None:
        return None
    return ".".join(p for p in parts.groups() if p is not None)


def rocm_arch_list(variant: str) -> RocmArchList | None:
    """The gfx targets PyTorch's `variant` (rocm6.2) builds carry, per its build scripts."""
    version = parse_version(rocm_version(variant))
    if version is None:
        return None
    for row in rocm_arch_lists():
        first = parse_version(row.first)
        last = parse_version(row.last) if row.last else None
        if first is not None and version >= first and (last is None or version <= last):
            return row
    return None


@cache
def gfx_families() -> tuple[GfxFamily, ...]:
    rows = _rocm()["families"]
    assert isinstance(rows, list)
    return tuple(
        GfxFamily(
            prefix=row["prefix"],
            name=row["name"],
            stand_in=row.get("stand_in"),
            override=row.get("override"),
            provenance=provenance(row),
        )
        for row in rows
    )


def gfx_family(gfx: str) -> GfxFamily | None:
    """The ISA family of a gfx target: the longest matching prefix (gfx1031 -> gfx103, RDNA 2)."""
    found = [f for f in gfx_families() if gfx.startswith(f.prefix)]
    return max(found, key=lambda f: len(f.prefix)) if found else None


def override_provenance() -> Provenance:
    return provenance(_rocm(), "override")


def gfx_examples(gfx: str) -> str | None:
    """ "Radeon RX 7900 XTX/XT/GRE, PRO W7900" for gfx1100, when the table knows it."""
    targets = _rocm()["targets"]
    assert isinstance(targets, dict)
    found = targets.get(gfx)
    return str(found["shown"]) if found else None


# Words a GPU's marketing name may carry or leave out ("AMD Radeon RX 7900 XTX" and "7900 XTX",
# "Intel Arc A770 Graphics" and "A770"): names are compared without them.
_NAME_NOISE = frozenset(
    {"amd", "ati", "radeon", "rx", "pro", "instinct", "intel", "arc", "graphics", "gpu", "data", "center"}
)


def name_key(text: str) -> str:
    """A GPU name as the tables compare it: lower case, without vendor and series words."""
    return " ".join(w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _NAME_NOISE)


@cache
def _gfx_by_name() -> dict[str, str]:
    targets = _rocm()["targets"]
    assert isinstance(targets, dict)
    return {name_key(n): gfx for gfx, row in targets.items() for n in row["names"]}


def gfx_for_name(text: str) -> str | None:
    """The gfx target of an AMD GPU's marketing name ("RX 7900 XTX" -> gfx1100), from rocm.json."""
    key = name_key(text)
    return _gfx_by_name().get(key) if key else None


def amd_name_provenance() -> Provenance:
    return provenance(_rocm(), "targets")


def gfx_words(gfx: str) -> str:
    examples = gfx_examples(gfx)
    return f"{gfx} ({examples})" if examples else gfx


@cache
def _xpu() -> dict[str, object]:
    return load_table("xpu.json")


@cache
def xpu_families() -> tuple[XpuFamily, ...]:
    rows = _xpu()["families"]
    assert isinstance(rows, list)
    return tuple(
        XpuFamily(
            name=row["name"],
            ids=tuple(i.lower() for i in row["ids"]),
            provenance=provenance(row),
            names=tuple(row.get("names", ())),
        )
        for row in rows
    )


def xpu_family_for_name(text: str) -> XpuFamily | None:
    """The XPU-capable family of an Intel GPU's model name ("Arc A770" -> Alchemist), from xpu.json."""
    key = name_key(text)
    if not key:
        return None
    return next((f for f in xpu_families() if key in {name_key(n) for n in f.names}), None)


def xpu_name_provenance() -> Provenance:
    return provenance(_xpu(), "names")


def xpu_family(device_id: str) -> XpuFamily | None:
    """The XPU-capable family of an Intel PCI device id ("0x56a0"); None: torch.xpu does not serve it."""
    key = device_id.strip().lower()
    return next((f for f in xpu_families() if key in f.ids), None)


def xpu_index() -> str:
    return str(_xpu()["index"])


def xpu_platforms() -> tuple[str, ...]:
    releases = _xpu()["releases"]
    assert isinstance(releases, dict)
    return tuple(releases["platforms"])


def xpu_first_release() -> str:
    releases = _xpu()["releases"]
    assert isinstance(releases, dict)
    return str(releases["from"])


def has_xpu_build(torch: str, platform: str) -> bool:
    """Whether torch `torch` has +xpu wheels for `platform` on PyTorch's xpu index."""
    version = parse_version(torch.split("+", 1)[0])
    first = parse_version(xpu_first_release())
    return version is not None and first is not None and version >= first and platform in xpu_platforms()


def xpu_driver_provenance() -> Provenance:
    return provenance(_xpu(), "driver")
