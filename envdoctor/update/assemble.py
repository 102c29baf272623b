"""Overlay rows from what the indexes showed: releases.json's shape, plus what was assumed.

What no index tells is carried forward from the nearest known build and marked assumed: a new
build's GPU arch list, a new CUDA version's minimum driver, and (where no metadata said) the
variant plain `pip install torch` gives on a platform or a companion's pairing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from envdoctor.knowledge import Release, load_table, variant_cuda
from envdoctor.knowledge.provenance import references
from envdoctor.update.gather import COMPANIONS, Build, Metadata, Seen
from envdoctor.util.records import record

MAX_NEW_RELEASES = 8  # the newest ones, should the data be very old
# A platform's "pypi" where the default index has no wheel for it: plain `pip install torch` gets no
# build there, so every command names PyTorch's index (knowledge.pypi_plain matches no variant).
NOT_ON_DEFAULT_INDEX = "none"


@record
class NewRelease:
    torch: str
    torchvision: str | None
    torchaudio: str | None
    platforms: tuple[tuple[str, tuple[str, ...]], ...]  # platform -> variants
    new_variants: tuple[str, ...]  # variants the newest known release did not have


@dataclass
class Assembly:
    rows: list[dict[str, Any]] = field(default_factory=list)
    arch_lists: list[dict[str, Any]] = field(default_factory=list)
    drivers: dict[str, dict[str, Any]] = field(default_factory=dict)  # by CUDA version
    assumed: list[str] = field(default_factory=list)  # one line each, for the output
    new: list[NewRelease] = field(default_factory=list)


def variant_order(variant: str) -> tuple[int, Version]:
    """cpu first, then CUDA and ROCm versions in order."""
    if variant == "cpu":
        return (0, Version("0"))
    cuda = variant_cuda(variant)
    if cuda is not None:
        return (1, Version(cuda))
    if variant.startswith("rocm"):
        try:
            return (2, Version(variant[4:]))
        except ValueError:
            pass
    return (3, Version("0"))


def _by_version(values: set[str]) -> list[str]:
    return sorted(values, key=Version)


def _series(row: Mapping[str, Any]) -> Version:
    return max(Version(s) for s in row["series"])


def _lists(row: Mapping[str, Any], machine: str) -> Mapping[str, str]:
    found = row.get("aarch64", {}) if machine == "aarch64" else row["variants"]
    return found if isinstance(found, dict) else {}


@record
class Carried:
    arch_list: str
    origin: str  # "torch 2.13 cu130"
    references: tuple[str, ...]  # the public sources of that list


def carry_arch(variant: str, machine: str) -> Carried | None:
    """The arch list of the nearest known build: the same variant in the newest series that has it,
    else the nearest CUDA version of the same major."""
    newest_first = sorted(load_table("archs.json")["arch_lists"], key=_series, reverse=True)
    for row in newest_first:
        lists = _lists(row, machine)
        if variant in lists:
            return Carried(lists[variant], f"torch {_series(row)} {variant}", references(row.get("source")))
    cuda = variant_cuda(variant)
    if cuda is None:
        return None
    wanted = Version(cuda)
    best: tuple[int, Carried] | None = None
    for row in newest_first:
        for other, text in _lists(row, machine).items():
            found = variant_cuda(other)
            if found is None or Version(found).major != wanted.major:
                continue
            distance = abs(Version(found).minor - wanted.minor)
            if best is None or distance < best[0]:  # among equals the newest series, met first
                best = (
                    distance,
                    Carried(text, f"torch {_series(row)} {other}", references(row.get("source"))),
                )
    return best[1] if best else None


def carry_driver(cuda: str) -> dict[str, Any] | None:
    """A CUDA version the driver table lacks: the minimums of the nearest older version of the same
    major. A new major needs a new driver branch, so nothing is carried across majors."""
    rows = load_table("cuda_drivers.json")["toolkit_minimum_driver"]
    if any(row["cuda"] == cuda for row in rows):
        return None
    wanted = Version(cuda)
    older = [r for r in rows if Version(r["cuda"]).major == wanted.major and Version(r["cuda"]) < wanted]
    if not older:
        return None
    nearest = max(older, key=lambda r: Version(r["cuda"]))
    return {
        "cuda": cuda,
        "linux": nearest.get("linux"),
        "windows": nearest.get("windows"),
        "from": f"CUDA {nearest['cuda']}",
        "assumed": True,
    }


def _companion(
    torch: str, project: str, seen: Seen, found: Metadata, known: tuple[Release, ...]
) -> tuple[str | None, bool]:
    """(version, assumed): the release whose metadata requires this torch, else the known
    numbering (torchvision 0.(minor+15), torchaudio = torch) when the index lists that version."""
    pinned = [v for v, t in found.pins.get(project, {}).items() if t == torch]
    if pinned:
        return max(pinned, key=Version), False
    model = next((r for r in reversed(known) if getattr(r, project) is not None), None)
    if model is None:
        return None, False
    companion = Version(str(getattr(model, project)))
    wanted = Version(torch)
    guess = (
        f"{wanted.major + companion.major - model.version.major}."
        f"{wanted.minor + companion.minor - model.version.minor}.{wanted.micro}"
    )
    return (guess, True) if guess in seen.companions.get(project, {}) else (None, False)


@dataclass
class _Platform:
    variants: dict[str, Build]
    pythons: set[str]
    pypi: str


def _platform(
    torch: str, platform: str, seen: Seen, found: Metadata, newest: Release, out: Assembly
) -> _Platform | None:
    variants = dict(seen.builds.get(torch, {}).get(platform, {}))
    default = seen.default.get(torch, {}).get(platform)
    pythons: set[str] = set()
    for build in [*variants.values(), *([default] if default else [])]:
        pythons |= build.pythons
    pypi = found.pypi.get((torch, platform))
    if pypi is None and default is None and seen.default_answered:
        pypi = NOT_ON_DEFAULT_INDEX  # the default index has no wheel of it for this platform
    if pypi is None:
        before = newest.builds(platform)
        pypi = before.pypi if before is not None else NOT_ON_DEFAULT_INDEX
        why = "no metadata said" if default is not None else "the default index was not read"
        out.assumed.append(
            f"torch {torch}: plain `pip install torch` on {platform} taken to give {pypi}, as for "
            f"{newest.torch} ({why})"
        )
    if default is not None and pypi not in variants and pypi != NOT_ON_DEFAULT_INDEX:
        variants[pypi] = default  # the default index's build, where PyTorch's pages did not show it
    if not variants:
        return None
    return _Platform(variants, pythons, pypi)


def _row(torch: str, seen: Seen, found: Metadata, known: tuple[Release, ...], out: Assembly) -> None:
    newest = known[-1]
    names = set(seen.builds.get(torch, {})) | set(seen.default.get(torch, {}))
    platforms = {p: b for p in sorted(names) if (b := _platform(torch, p, seen, found, newest, out))}
    if not platforms:
        return
    cudas = {
        found.cuda.get((torch, p, v)) or variant_cuda(v) or ""
        for p, b in platforms.items()
        for v in b.variants
        if v.startswith("cu")
    } - {""}
    main = platforms["linux-x86_64"].pythons if "linux-x86_64" in platforms else set()
    if not main:
        main = set().union(*(b.pythons for b in platforms.values()))
    assumed_fields = [
        f"platforms.{p}.pypi"
        for p in platforms
        if (torch, p) not in found.pypi and (p in seen.default.get(torch, {}) or not seen.default_answered)
    ]
    companions: dict[str, str | None] = {}
    for project in COMPANIONS:
        version, guessed = _companion(torch, project, seen, found, known)
        companions[project] = version
        if guessed:
            assumed_fields.append(project)
            out.assumed.append(f"torch {torch}: {project} {version} paired by the known numbering")
    shape: dict[str, dict[str, Any]] = {}
    for name, builds in platforms.items():
        shape[name] = {"variants": sorted(builds.variants, key=variant_order), "pypi": builds.pypi}
        if builds.pythons != main:
            shape[name]["python"] = _by_version(builds.pythons)
    every = sorted({v for b in platforms.values() for v in b.variants}, key=variant_order)
    row: dict[str, Any] = {
        "torch": torch,
        "torchvision": companions["torchvision"],
        "torchaudio": companions["torchaudio"],
        "python": _by_version(main),
        "cuda": _by_version(cudas),
        "rocm": _by_version({v[4:] for v in every if v.startswith("rocm")}),
        "pypi_linux_x86_64_default": shape.get("linux-x86_64", {}).get("pypi", NOT_ON_DEFAULT_INDEX),
        "platforms": shape,
        "source": "envdoctor update: the indexes' file names and PEP 658 metadata",
    }
    if assumed_fields:
        row["assumed_fields"] = assumed_fields
    out.rows.append(row)
    _carry(torch, shape, cudas, out)
    out.new.append(
        NewRelease(
            torch=torch,
            torchvision=companions["torchvision"],
            torchaudio=companions["torchaudio"],
            platforms=tuple((p, tuple(b["variants"])) for p, b in shape.items()),
            new_variants=tuple(v for v in every if v not in newest.variants),
        )
    )


def _carry(torch: str, shape: Mapping[str, Mapping[str, Any]], cudas: set[str], out: Assembly) -> None:
    carried: dict[str, list[str]] = {}
    done: set[tuple[str, str]] = set()
    for platform, builds in shape.items():
        machine = "aarch64" if platform.endswith("aarch64") else "x86_64"
        for variant in builds["variants"]:
            if not variant.startswith("cu") or (variant, machine) in done:
                continue
            done.add((variant, machine))
            found = carry_arch(variant, machine)
            if found is None:
                continue
            out.arch_lists.append(
                {
                    "torch": torch,
                    "variant": variant,
                    "machine": machine,
                    "arch_list": found.arch_list,
                    "from": found.origin,
                    "source": list(found.references),
                    "assumed": True,
                }
            )
            carried.setdefault(found.origin, []).append(f"{variant} ({machine})")
    for origin, what in carried.items():
        out.assumed.append(f"torch {torch}: GPU arch list of {', '.join(what)} carried forward from {origin}")
    for cuda in _by_version(cudas):
        row = None if cuda in out.drivers else carry_driver(cuda)
        if row is not None:
            out.drivers[cuda] = row
            out.assumed.append(f"CUDA {cuda}: minimum driver carried forward from {row['from']}")


def assemble(seen: Seen, found: Metadata, known: tuple[Release, ...]) -> Assembly:
    out = Assembly()
    versions = sorted(set(seen.builds) | set(seen.default), key=Version)[-MAX_NEW_RELEASES:]
    for torch in versions:
        _row(torch, seen, found, known, out)
    return out
