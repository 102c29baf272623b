"""Installed packages whose metadata requires another torch (or triton) than the one installed
(ED205): the dependents of torch, judged from the Requires-Dist lines the torch child read.

A compiled extension whose load failed, or whose own build info names another torch, is ED212's
(extensions.py), with the pin as part of its evidence: one cause, one finding.
"""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor import knowledge
from envdoctor.install import plan as install
from envdoctor.install.packages import PackageRequest
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import install_target, package_fix
from envdoctor.rules.torch.companions import (
    UnmetRequirement,
    downgrade_words,
    installed_companions,
    installed_pin,
    pair_fix,
    platform_key,
    torch_build,
    unmet_requirements,
)
from envdoctor.rules.torch.extensions import mismatches
from envdoctor.util.pep503 import normalize_name


def _torch_for(ctx: RuleContext, torch: TorchFacts, unmet: UnmetRequirement) -> Fix | None:
    """The newest known torch the requirement accepts, in this torch's variant, with its companions."""
    built = torch_build(ctx, torch)
    for release in reversed(knowledge.releases()):
        if not unmet.requirement.specifier.contains(release.version, prereleases=True):
            continue
        builds = release.builds(platform_key(ctx))
        if builds is None:
            continue
        variant = built.variant if built and built.variant in builds.variants else None
        variant = variant or install.plan(install_target(ctx, torch=release.torch)).variant
        if variant is None:
            continue
        old = built.public if built else unmet.installed.version
        return pair_fix(
            ctx,
            f"Install torch {release.torch}, which {unmet.dependent.name} {unmet.dependent.version} accepts"
            + downgrade_words(release.torch, old),
            release.torch,
            variant,
            installed_companions(torch),
        )
    return None


def _dependent_fixes(ctx: RuleContext, torch: TorchFacts, unmet: UnmetRequirement) -> tuple[Fix, ...]:
    dependent, installed = unmet.dependent, unmet.installed
    if normalize_name(dependent.name) == "torch":
        # torch's own requirement (triton): install what torch was built with.
        summary = f"Install the {installed.name} torch {dependent.version} was built with"
        return (package_fix(ctx, summary, PackageRequest((unmet.wanted,))),)
    hold = installed_pin(installed.name, installed.version)
    keep = PackageRequest((dependent.name,), hold=(hold,), options=("--upgrade",))
    fixes = [
        package_fix(
            ctx,
            f"Install the {dependent.name} build made for {installed.name} {installed.version} "
            f"(pip looks for a release of {dependent.name} that accepts it, keeping {installed.name} "
            "as it is)",
            keep,
        )
    ]
    if normalize_name(installed.name) == "torch":
        other = _torch_for(ctx, torch, unmet)
        if other is not None:
            fixes.append(other)
    else:
        summary = f"Install the {installed.name} {dependent.name} was built for"
        fixes.append(package_fix(ctx, summary, PackageRequest((unmet.wanted,))))
    return tuple(fixes)


@rule(
    code="ED205",
    name="dependent-pinned-to-another-torch",
    severity=Severity.ERROR,
    summary="an installed package requires a torch (or triton) other than the one installed",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="The Requires-Dist lines of every installed distribution that names torch, torchvision, "
        "torchaudio or triton, read from metadata files in the torch child (nothing is imported), "
        "against the versions installed; markers are evaluated for the examined interpreter.",
        why="Packages with compiled code (xformers, flash-attn, torch-scatter and friends) are built "
        "against one torch release and pin it; beside another torch their extensions fail to load or "
        "crash. torch pins the triton it was built with: another triton breaks torch.compile. pip "
        "warns about such conflicts once, at install time, and never again.",
        fix="Either install the dependent's build made for the installed torch (the command keeps "
        "torch pinned as it is), or install the torch it was built for, with its companions.",
        example="torch 2.0.1+cu118 from PyTorch's cu118 index beside xformers 0.0.22.post7, installed "
        "later without letting pip touch torch: its metadata says torch==2.1.0.",
    ),
)
def dependent_pinned_to_another_torch(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    # An extension whose load failed (or whose own build info names another torch) is ED212's,
    # with this pin as part of its evidence: one cause, one finding.
    reported = {normalize_name(m.ext.name) for m in mismatches(torch)}
    for unmet in unmet_requirements(ctx, torch):
        dependent, installed = unmet.dependent, unmet.installed
        if normalize_name(dependent.name) in reported:
            continue
        exact = any(spec.operator in ("==", "===") for spec in unmet.requirement.specifier)
        meaning = (
            f"An exact pin means {dependent.name} was built against that {installed.name} release: "
            "its compiled parts are not expected to load or work beside another one."
            if exact
            else f"{dependent.name}'s authors declared it incompatible with {installed.name} "
            f"{installed.version}."
        )
        yield Hit(
            title=f"{dependent.name} {dependent.version} requires {unmet.wanted}, but "
            f"{installed.name} {installed.version} is installed",
            detail=f"{dependent.name} {dependent.version}'s metadata says Requires-Dist: "
            f"{unmet.requirement}. {meaning} pip reported the conflict once when it installed one of "
            "them; it stays until one side changes.",
            evidence=(
                f"{dependent.name} {dependent.version} Requires-Dist: {unmet.requirement}",
                f"{installed.name} {installed.version} installed",
            ),
            fixes=_dependent_fixes(ctx, torch, unmet),
        )
