"""The torch and CUDA versions the project asks for: require-cuda (ED703), require-torch (ED704),
with the newest known torch that meets both here as the fix."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor import knowledge
from envdoctor.install import plan as install
from envdoctor.knowledge.archs import CoverageKind, arch_list, coverage
from envdoctor.knowledge.drivers import DriverKind, driver_support
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.expectations.gpu_view import evidence, title, torch_problem
from envdoctor.rules.fixes import GET_STARTED, install_target, plan_commands
from envdoctor.settings import Expectations


def _spec(text: str | None) -> SpecifierSet | None:
    return SpecifierSet(text) if text else None


def _cuda_build(
    ctx: RuleContext, release: knowledge.Release, cuda: str
) -> tuple[install.InstallPlan, str] | None:
    """`release` built for `cuda`, if this driver runs it and it serves every GPU: the plan and why."""
    variant = knowledge.cuda_variant(cuda)
    target = dataclasses.replace(
        install_target(ctx, want_cuda=True, torch=release.torch), variant=variant, asked=True
    )  # require-cuda in the settings: the user asked
    plan = install.plan(target)
    if not plan.possible:
        return None
    support = driver_support(variant, target.driver_version, target.os, target.driver_cuda)
    if target.driver_version is None:
        # A build job may need the CUDA wheel on a machine without a GPU: say what runs it.
        need = f"; where it runs it needs an NVIDIA driver >= {support.native}" if support.native else ""
        return plan, f"torch {plan.torch} ({variant}){need}"
    if not support.runs:
        return None
    arch = arch_list(release, variant, target.platform)
    if arch is not None and any(
        coverage(arch, gpu).kind == CoverageKind.NONE for gpu in target.gpu_capabilities
    ):
        return None
    how = (
        "natively"
        if support.kind == DriverKind.NATIVE
        else f"through minor-version compatibility (>= {support.floor})"
    )
    return plan, f"driver {target.driver_version} runs {variant} {how} -> torch {plan.torch} ({variant})"


def matching_install(ctx: RuleContext, expect: Expectations) -> Fix | None:
    """The newest known torch that meets require-torch and require-cuda here, as a pinned command."""
    torch_spec, cuda_spec = _spec(expect.torch), _spec(expect.cuda)
    wanted = " and ".join(
        f"{key} {value}" for key, value in expect.items() if key in ("require-torch", "require-cuda")
    )
    for release in reversed(knowledge.releases()):
        if torch_spec is not None and not torch_spec.contains(release.torch, prereleases=True):
            continue
        found: tuple[install.InstallPlan, str] | None = None
        if cuda_spec is None:
            plan = install.plan(install_target(ctx, torch=release.torch))
            found = (plan, plan.reason) if plan.possible else None
        else:
            newest_first = sorted(release.cuda, key=Version, reverse=True)
            for cuda in (c for c in newest_first if cuda_spec.contains(c, prereleases=True)):
                found = _cuda_build(ctx, release, cuda)
                if found is not None:
                    break
        if found is not None:
            plan, why = found
            return Fix(
                summary=f"Install a torch that meets {wanted}: {why}",
                commands=plan_commands(ctx, plan),
                link=GET_STARTED,
            )
    return None


def _no_match_fix(expect: Expectations) -> Fix:
    return Fix(
        summary="No torch release in envdoctor's data meets these expectations on this machine "
        f"(data as of {knowledge.releases_as_of()}); check the expectations or pick a build by hand",
        link=GET_STARTED,
    )


@rule(
    code="ED703",
    name="cuda-requirement-unmet",
    severity=Severity.ERROR,
    summary="torch was built with a CUDA version outside require-cuda",
    needs=(Expectations,),
    doc=RuleDoc(
        what="torch.version.cuda (the CUDA torch was built with and bundles) against the "
        "require-cuda specifier; a CPU-only or ROCm build does not meet it.",
        why="Extensions and kernels built for a CUDA version (custom ops, FlashAttention "
        "wheels, TensorRT) need torch built with a matching CUDA.",
        fix="Install the torch build the fix names: the newest known release meeting "
        "require-cuda (and require-torch) whose CUDA this driver runs.",
        example='require-cuda = ">=12.1" with torch 2.1.2+cu118.',
    ),
)
def cuda_requirement_unmet(ctx: RuleContext) -> Iterator[Hit]:
    expect = ctx.need(Expectations)
    if expect.cuda is None:
        return
    torch = ctx.get(TorchFacts)
    problem = torch_problem(torch, ctx)
    if problem is None and torch is not None:
        if torch.cuda and SpecifierSet(expect.cuda).contains(torch.cuda, prereleases=True):
            return
        if torch.cuda:
            found = f"torch {torch.version} was built with CUDA {torch.cuda}"
        elif torch.hip:
            found = f"torch {torch.version} is a ROCm build (HIP {torch.hip}), not CUDA"
        else:
            found = f"torch {torch.version} is a CPU-only build"
    else:
        found = problem or "torch was not examined"
    yield Hit(
        title=title("require-cuda", expect.cuda, found),
        detail=f"The project needs torch built with CUDA {expect.cuda} (torch.version.cuda); {found}. "
        "Whether the driver can run that CUDA is checked by ED101/ED102.",
        evidence=evidence(
            "require-cuda", expect.cuda, f"torch.version.cuda = {torch.cuda if torch else None}"
        ),
        fixes=(matching_install(ctx, expect) or _no_match_fix(expect),),
    )


@rule(
    code="ED704",
    name="torch-requirement-unmet",
    severity=Severity.ERROR,
    summary="the installed torch version is outside require-torch",
    needs=(Expectations,),
    doc=RuleDoc(
        what="torch.__version__ (pre-releases included, local labels such as +cu121 ignored "
        "unless the specifier has one) against the require-torch specifier.",
        why="A job tested on one torch range can break on another (removed APIs, changed "
        "defaults); failing before the job starts is cheaper than failing in it.",
        fix="Install the pinned torch the fix names, from the index matching the driver.",
        example='require-torch = ">=2.4,<2.6" with torch 2.1.2 installed.',
    ),
)
def torch_requirement_unmet(ctx: RuleContext) -> Iterator[Hit]:
    expect = ctx.need(Expectations)
    if expect.torch is None:
        return
    torch = ctx.get(TorchFacts)
    version = torch.version or torch.dist_version if torch is not None else None
    if version and SpecifierSet(expect.torch).contains(version, prereleases=True):
        return
    if version:
        found = f"torch {version} is installed"
    elif torch is not None and torch.installed is False and torch.crash is None:
        found = "torch is not installed"
    else:
        found = torch_problem(torch, ctx) or "the torch version is unknown"
    yield Hit(
        title=title("require-torch", expect.torch, found),
        detail=f"The project needs torch {expect.torch}; {found} in {ctx.interpreter.path}.",
        evidence=evidence("require-torch", expect.torch, f"torch.__version__ = {version}"),
        fixes=(matching_install(ctx, expect) or _no_match_fix(expect),),
    )
