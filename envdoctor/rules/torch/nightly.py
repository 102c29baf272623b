"""Nightly (dev) builds in the companion check (ED202): torch 2.x.0.devYYYYMMDD beside a
torchvision/torchaudio from another night or from a release. Each nightly companion is built
against the torch of its own night (its metadata pins torch==<that dev version>), so only a set
from one night of one index belongs together."""

from __future__ import annotations

from collections.abc import Iterator

from packaging.version import InvalidVersion, Version

from envdoctor.install.packages import PackageRequest
from envdoctor.knowledge.mirrors import OFFICIAL_WHEEL_BASE
from envdoctor.model.findings import Fix
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext
from envdoctor.rules.fixes import package_fix, with_uninstall
from envdoctor.shell import quote

COMPANIONS = ("torchvision", "torchaudio")
NIGHTLY_DOCS = "https://pytorch.org/get-started/locally/"


def night(version: str | None) -> str | None:
    """ "2024-11-12" for "2.6.0.dev20241112+cu124"; None for a release or an unreadable version."""
    try:
        dev = Version(version or "").dev
    except InvalidVersion:
        return None
    if dev is None:
        return None
    digits = str(dev)
    return f"{digits[:4]}-{digits[4:6]}-{digits[6:8]}" if len(digits) == 8 else digits


def involved(torch: TorchFacts, torch_version: str) -> bool:
    """Whether torch or one of its companions is a nightly: then the nights decide, not releases.json."""
    return night(torch_version) is not None or any(night(torch.companion(n)) for n in COMPANIONS)


def _label(version: str | None) -> str | None:
    return version.split("+", 1)[1] if version and "+" in version else None


def _index_variant(torch: TorchFacts, torch_version: str) -> str:
    """The nightly index to take the set from: torch's own label, else its build's variant."""
    label = _label(torch_version)
    if label:
        return label
    return torch.variant or "cpu"


def reinstall_fix(ctx: RuleContext, torch: TorchFacts, torch_version: str) -> Fix:
    """All of them again, from one nightly index in one resolve: pip then takes a companion whose
    pin matches the torch it installs."""
    variant = _index_variant(torch, torch_version)
    names = ["torch", *(n for n in COMPANIONS if torch.companion(n) is not None)]
    python = quote(ctx.interpreter.path, ctx.platform.os)
    index = f"{OFFICIAL_WHEEL_BASE}/nightly/{variant}"
    summary = (
        f"Reinstall {', '.join(names)} together from the {variant} nightly index, so that all come from "
        "one night (leave out a companion the index has no build of for that night; if PyTorch no longer "
        "builds this variant, take the nightly command pytorch.org shows)"
    )
    install = package_fix(
        ctx, summary, PackageRequest(tuple(names), index=index, options=("--pre",)), NIGHTLY_DOCS
    )
    return with_uninstall(f"{python} -m pip uninstall -y {' '.join(names)}", install)


def mismatches(ctx: RuleContext, torch: TorchFacts, torch_version: str) -> Iterator[Hit]:
    """ED202's hits when nightlies are involved: a companion from another night, or a release
    beside a nightly (either way round), or another build label."""
    torch_night = night(torch_version)
    for name in COMPANIONS:
        installed = torch.companion(name)
        if installed is None:
            continue
        theirs = night(installed)
        problems = []
        if torch_night and theirs and theirs != torch_night:
            problems.append(f"{name} is the nightly of {theirs}, torch the nightly of {torch_night}")
        elif torch_night and not theirs:
            problems.append(f"{name} {installed} is a release, torch the nightly of {torch_night}")
        elif theirs and not torch_night:
            problems.append(f"{name} is the nightly of {theirs}, torch the release {torch_version}")
        label, torch_label = _label(installed), _label(torch_version)
        if torch_label and label and label != torch_label:
            problems.append(f"{name} is the {label} build while torch is {torch_label}")
        if not problems:
            continue
        yield Hit(
            title=f"{name} {installed} does not belong to torch {torch_version}",
            detail="; ".join(problems) + ". A nightly torchvision/torchaudio is built against the "
            "torch of the same night and pins it exactly; beside another torch it fails at import "
            "('operator torchvision::nms does not exist', undefined symbols) or breaks in its "
            "custom operators. pip only warns ('... has requirement torch==<night>, but you'll "
            "have torch ... which is incompatible').",
            evidence=(f"torch {torch_version}", f"{name} {installed}"),
            fixes=(reinstall_fix(ctx, torch, torch_version),),
        )
