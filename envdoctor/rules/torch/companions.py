"""torch's companions and dependents: torchvision/torchaudio loaded for real, packages pinned to a torch.

A companion (torchvision, torchaudio) links against one torch build: its release and its variant
(cpu, cu130, rocm6.4, ...). The child loads each installed companion beside torch (ED204); where no
load check ran (snapshots, --from), the pair is judged from versions and variants (ED202, in
build.py, with the helpers here). A wheel without a variant label ("0.28.0") is the build its index
serves by default: on PyPI that is the release's `pypi` variant for the platform in the knowledge.
Any other installed distribution whose metadata requires a torch (or triton) that is not installed
is ED205 (dependents.py).

Fix commands pin both sides exactly: `name==X+variant` for a labelled build, `name===X` for PyPI's
unlabelled one. A plain `torch==2.13.0` is also satisfied by `2.13.0+cpu`, and pip prefers the
labelled wheel when a find-links folder or another index offers it: the command would rebuild the
broken pair. With exact pins pip either installs the working pair or fails without changing anything.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import replace

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from envdoctor import knowledge
from envdoctor.install import plan as install
from envdoctor.install.commands import choose_index
from envdoctor.install.packages import PackageRequest
from envdoctor.knowledge import Release
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.torch_build import (
    CompanionLoad,
    Distribution,
    LoadStatus,
    TorchFacts,
)
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import GET_STARTED, install_target, package_fix
from envdoctor.util.pep503 import normalize_name
from envdoctor.util.records import record

COMPANIONS = ("torchvision", "torchaudio")
_VARIANT = re.compile(r"cu\d+|cpu|rocm[\d.]+|xpu")


# -- what each side of a pair is -------------------------------------------------------------


@record
class Build:
    """torch or a companion as installed: its version, its variant and how the variant is known."""

    name: str  # torch, torchvision, torchaudio
    version: str  # as installed: "2.13.0+cpu", "0.28.0"
    variant: str | None  # "cpu", "cu130"; None: the facts do not tell
    how: str  # how the variant is known, in words
    inferred: bool = False  # from the index's default build, not from the build itself
    plain_label: bool = False  # the variant is the version's own label: nothing to explain
    origin: str | None = None  # "installed by pip", "installed by pip from file:///..."

    @property
    def public(self) -> str:
        return self.version.split("+", 1)[0]

    def words(self) -> str:
        """ "torchvision 0.28.0 (the cu130 build: its own version string is 0.28.0+cu130; installed by
        pip)"."""
        parts = []
        if self.variant:
            parts.append(f"the {self.variant} build" + ("" if self.plain_label else f": {self.how}"))
        if self.origin:
            parts.append(self.origin)
        return f"{self.name} {self.version}" + (f" ({'; '.join(parts)})" if parts else "")


def label_variant(version: str | None) -> str | None:
    """ "cu124" from "2.5.1+cu124"; None without a label or when the label names no variant."""
    if version and "+" in version:
        label = version.split("+", 1)[1]
        if _VARIANT.fullmatch(label):
            return label
    return None


def platform_key(ctx: RuleContext) -> str:
    return knowledge.platform_key(ctx.platform.os, ctx.platform.machine)


def paired_release(name: str, version: str) -> Release | None:
    """The torch release that companion `name` at `version` was released with (knowledge)."""
    public = version.split("+", 1)[0]
    for release in knowledge.releases():
        if (release.torchvision if name == "torchvision" else release.torchaudio) == public:
            return release
    return None


def pypi_default(release: Release | None, platform: str) -> str | None:
    builds = release.builds(platform) if release is not None else None
    return builds.pypi if builds is not None else None


def _distribution(torch: TorchFacts, name: str) -> Distribution | None:
    return torch.extensions.distribution(name) if torch.extensions is not None else None


def _origin(dist: Distribution | None) -> str | None:
    if dist is None or dist.installer is None:
        return None
    return f"installed by {dist.installer}" + (f" from {dist.source}" if dist.source else "")


def _unlabelled(name: str, version: str, release: Release | None, platform: str) -> tuple[str | None, str]:
    """An unlabelled wheel is the build its index serves by default: PyPI's, for that release."""
    variant = pypi_default(release, platform)
    if variant is None:
        return None, f"{name} {version} carries no variant label and envdoctor's data has no default for it"
    return (
        variant,
        f"{version} carries no variant label, and PyPI's {name} {version} for {platform} is {variant}",
    )


def torch_build(ctx: RuleContext, torch: TorchFacts) -> Build | None:
    version = torch.version or torch.dist_version
    if not version:
        return None
    dist = _distribution(torch, "torch")
    origin = _origin(dist)
    label = label_variant(version)
    if label:
        return Build("torch", version, label, f"its version label +{label}", plain_label=True, origin=origin)
    if torch.imported and torch.variant:
        how = f"torch.version.cuda = {torch.cuda}" if torch.cuda else f"torch.version.hip = {torch.hip}"
        if not torch.cuda and not torch.hip:
            how = "torch.version.cuda and torch.version.hip are None"
        return Build("torch", version, torch.variant, how, origin=origin)
    if "+" in version or (dist is not None and dist.installer == "conda"):
        return Build("torch", version, None, "its build is not known", origin=origin)
    variant, how = _unlabelled("torch", version, knowledge.release(version), platform_key(ctx))
    return Build("torch", version, variant, how, inferred=variant is not None, origin=origin)


def companion_build(ctx: RuleContext, torch: TorchFacts, name: str) -> Build | None:
    version = torch.companion(name)
    if version is None:
        return None
    dist = _distribution(torch, name)
    origin = _origin(dist)
    load = torch.companion_load(name)
    own = load.module_version if load is not None else None
    label = label_variant(own)
    if label and own != version:
        # PyPI's wheels drop the label from the distribution's version but keep it in __version__.
        return Build(name, version, label, f"its own version string is {own}", origin=origin)
    label = label_variant(version) or label
    if label:
        return Build(name, version, label, f"its version label +{label}", plain_label=True, origin=origin)
    if "+" in version:
        return Build(name, version, None, "its version label names no build variant", origin=origin)
    if dist is not None and dist.installer == "conda":
        return Build(name, version, None, "a conda package: its variant is the conda build's", origin=origin)
    variant, how = _unlabelled(name, version, paired_release(name, version), platform_key(ctx))
    return Build(name, version, variant, how, inferred=variant is not None, origin=origin)


# -- judging a pair --------------------------------------------------------------------------


@record
class Pair:
    """torch and one companion, and what does not fit between them, in words (None: nothing known)."""

    torch: Build
    companion: Build
    wanted: str | None  # the companion version torch's release goes with, when known
    version_problem: str | None = None
    variant_problem: str | None = None
    inferred: bool = False  # the variant mismatch rests on an unlabelled wheel's index default

    @property
    def problems(self) -> tuple[str, ...]:
        return tuple(p for p in (self.version_problem, self.variant_problem) if p)


def _torch_requirement(dist: Distribution | None) -> Requirement | None:
    for text in dist.requires if dist is not None else ():
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        if normalize_name(requirement.name) == "torch" and requirement.marker is None:
            return requirement
    return None


def _satisfies(version: str, requirement: Requirement) -> bool | None:
    try:
        return requirement.specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return None


def judge_pair(ctx: RuleContext, torch: TorchFacts, name: str) -> Pair | None:
    """torch and companion `name` side by side; None when either is not there."""
    built = torch_build(ctx, torch)
    companion = companion_build(ctx, torch, name)
    if built is None or companion is None:
        return None
    release = knowledge.release(built.version)
    wanted = (release.torchvision if name == "torchvision" else release.torchaudio) if release else None
    version_problem = None
    if wanted is not None and companion.public != wanted:
        version_problem = f"torch {built.public} goes with {name} {wanted}"
    elif wanted is None:
        # A release envdoctor's data does not pair: the companion's own metadata names its torch.
        requirement = _torch_requirement(_distribution(torch, name))
        if requirement is not None and _satisfies(built.version, requirement) is False:
            version_problem = f"{name} {companion.version} requires {requirement} (its metadata)"
    mismatch = bool(built.variant and companion.variant and built.variant != companion.variant)
    inferred = built.inferred or companion.inferred
    load = torch.companion_load(name)
    if mismatch and inferred and load is not None and load.status is LoadStatus.OK:
        mismatch = False  # it loaded and ran: that outweighs what an index serves by default
    variant_problem = None
    if mismatch:
        side = "" if companion.plain_label else f" ({companion.how})"
        torch_side = "" if built.plain_label else f" ({built.how})"
        variant_problem = (
            f"{name} is the {companion.variant} build{side} while torch is {built.variant}{torch_side}"
        )
    return Pair(
        torch=built,
        companion=companion,
        wanted=wanted,
        version_problem=version_problem,
        variant_problem=variant_problem,
        inferred=mismatch and inferred,
    )


# -- fixes: a working pair from one variant's index ------------------------------------------


def exact_pin(name: str, version: str, label: str | None) -> str:
    """A pin only the intended build satisfies: `torch==2.13.0+cpu`, or `torch===2.13.0` (PyPI's)."""
    return f"{name}=={version}+{label}" if label else f"{name}==={version}"


def installed_pin(dist_name: str, version: str) -> str:
    """A pin the installed build satisfies and nothing else does."""
    if "+" in version or normalize_name(dist_name) not in ("torch", *COMPANIONS):
        return f"{dist_name}=={version}"
    return f"{dist_name}==={version}"


def pair_fix(
    ctx: RuleContext,
    summary: str,
    torch_release: str,
    variant: str,
    companions: Sequence[str],
    hold: str | None = None,
    reinstall: bool = False,
) -> Fix | None:
    """torch `torch_release` in `variant` with `companions`, all from that variant's index (the
    planner's choice), pinned exactly; `hold` pins the installed torch instead, to keep it. None when
    the planner has no such build here or a companion's pairing is unknown."""
    target = replace(install_target(ctx, torch=torch_release), variant=variant)
    plan = install.plan(target)
    release = knowledge.release(plan.torch) if plan.torch else None
    if not plan.possible or plan.variant != variant or release is None:
        return None
    index = choose_index(release, variant, target.platform, target.mirror, [])
    versions = {"torch": plan.torch, "torchvision": plan.torchvision, "torchaudio": plan.torchaudio}
    pins = []
    for name in ("torch", *companions):
        version = versions.get(name)
        if version is None:
            return None  # no known release of this companion for that torch: no exact pair
        pins.append(exact_pin(name, version, variant if index.url else None))
    if hold is not None:
        pins[0] = hold
    options: tuple[str, ...] = ()
    if reinstall:
        # The installed files satisfy the pins yet do not load: replace them, and only them.
        pins, options = pins[1:], ("--force-reinstall", "--no-deps")
    if index.flat:
        request = PackageRequest(tuple(pins), find_links=index.url, options=options)
    else:
        extra = index.option == "--extra-index-url"
        request = PackageRequest(tuple(pins), index=index.url, options=options, replace_index=not extra)
    where = f"from {index.url}" if index.url else f"from PyPI, whose default build here is {variant}"
    notes = ""
    if variant.startswith("cu") and target.driver_version is None:
        notes = "; a CUDA build: without a usable NVIDIA driver it computes on the CPU only"
    return package_fix(
        ctx,
        f"{summary}, {where}; exact pins keep pip from taking another variant from another configured "
        f"source{notes}",
        request,
        link=GET_STARTED,
    )


def downgrade_words(new: str, old: str) -> str:
    try:
        return f", a downgrade from {old}" if Version(new) < Version(old) else ""
    except InvalidVersion:
        return ""


def installed_companions(torch: TorchFacts) -> tuple[str, ...]:
    return tuple(name for name in COMPANIONS if torch.companion(name) is not None)


def pair_fixes(ctx: RuleContext, torch: TorchFacts, pair: Pair) -> tuple[Fix, ...]:
    """The two ways to a working pair: the companion built for this torch, or the torch the companion
    was built for; the one whose variant the planner would choose for this machine comes first."""
    name = pair.companion.name
    built = pair.torch
    ways: list[tuple[str, Fix]] = []
    if built.variant:
        summary = f"Keep torch {built.version} and install the {name} built for it"
        hold = installed_pin("torch", torch.dist_version or built.version)
        if not pair.problems:
            summary = f"Versions and variants match, yet {name} does not load: reinstall its files"
        fix = pair_fix(ctx, summary, built.public, built.variant, (name,), hold, not pair.problems)
        if fix is not None:
            ways.append((built.variant, fix))
        if not pair.problems:
            return tuple(fix for _, fix in ways)
    release = paired_release(name, pair.companion.version)
    variant = pair.companion.variant
    if release is not None and variant and (release.torch != built.public or variant != built.variant):
        summary = (
            f"Install torch {release.torch}, the release {name} {pair.companion.version} was built for"
            + downgrade_words(release.torch, built.public)
        )
        fix = pair_fix(ctx, summary, release.torch, variant, installed_companions(torch))
        if fix is not None:
            ways.append((variant, fix))
    preferred = install.plan(install_target(ctx, torch=built.public)).variant
    ways.sort(key=lambda way: way[0] != preferred)  # stable: keeping torch wins a tie
    return tuple(fix for _, fix in ways)  # the report says "Or:" before every one after the first


# -- ED204: a companion that does not load ---------------------------------------------------


def _failure_words(load: CompanionLoad) -> str:
    step = {
        "import": f"import {load.name}",
        "nms": "torchvision.ops.nms on three boxes",
        "extension": "its compiled extension",
    }.get(load.step or "", f"the {load.name} check")
    error = f"{load.error.type}: {load.error.message}" if load.error else (load.note or load.status.value)
    said = f"{step} failed with {error}"
    if load.cause:
        said += f". Loading its library directly says: {load.cause}"
    return said


@rule(
    code="ED204",
    name="companion-extension-fails-to-load",
    severity=Severity.ERROR,
    summary="torchvision/torchaudio's compiled operators do not load beside this torch",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="Right after torch, the torch child loads each installed companion's compiled extension "
        "the way the package does (torchvision.extension, torchaudio._extension) and runs "
        "torchvision::nms on three boxes, under the smoke test's watchdog. When that fails it replays "
        "the user's own `import torchvision` and records the exact error, and the dynamic loader's "
        "reason for the library.",
        why="A companion's compiled extension links against one torch build. Beside another build "
        "(another release, or another variant such as a CUDA torchvision next to a +cpu torch) its "
        "operators never register: the import fails with 'operator torchvision::nms does not exist' "
        "or an undefined symbol, whatever the version numbers say.",
        fix="Install torch and the companion as one pair from one variant's index, pinned exactly "
        "(`==X+cpu` for a labelled build, `===X` for PyPI's unlabelled one) so that pip cannot keep or "
        "pick the other build; the finding shows both ways: the companion built for this torch, or "
        "the torch the companion was built for.",
        example="torch 2.13.0+cpu from a find-links folder beside torchvision 0.28.0 from PyPI (its own "
        "version string 0.28.0+cu130): `import torchvision` raises 'operator torchvision::nms does not "
        "exist' because _C.so needs libc10_cuda.so, which the CPU torch lacks.",
    ),
)
def companion_extension_fails_to_load(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    if not torch.imported or torch.extensions is None:
        return
    from envdoctor.rules.torch import nightly

    if nightly.involved(torch, torch.version or torch.dist_version or ""):
        return  # nights, not releases, decide the pair: ED202 names it with the nightly index's fix
    for load in torch.extensions.loads:
        if not load.problem:
            continue
        pair = judge_pair(ctx, torch, load.name)
        built = pair.torch.words() if pair else f"torch {torch.version}"
        companion = pair.companion.words() if pair else f"{load.name} {load.version}"
        why = f" Versions: {pair.version_problem}." if pair is not None and pair.version_problem else ""
        own = f" (__version__ {load.module_version})" if load.module_version else ""
        evidence = [
            f"torch {pair.torch.version if pair else torch.version}",
            f"{load.name} {load.version}{own}",
            f"{load.name} load check: {load.status.value}" + (f" at {load.step}" if load.step else ""),
        ]
        if load.error is not None:
            evidence.append(f"{load.error.type}: {load.error.message.splitlines()[0][:300]}")
        if load.cause:
            evidence.append(load.cause[:300])
        yield Hit(
            title=f"{load.name} {load.version or ''} fails to load beside torch {torch.version}".replace(
                "  ", " "
            ),
            detail=f"{_failure_words(load)}. Installed: {built}; {companion}.{why} A companion's "
            "compiled operators work only beside the torch build they were compiled against, so "
            f"every {load.name} call that needs them fails.",
            evidence=tuple(evidence),
            fixes=pair_fixes(ctx, torch, pair) if pair is not None else (),
        )


# -- what ED205 (dependents.py) reads: Requires-Dist lines against the installed versions --------


def marker_environment(ctx: RuleContext) -> dict[str, str]:
    """PEP 508 marker values of the examined interpreter, from the platform and Python facts."""
    python = ctx.get(PythonFacts)
    system = ctx.platform.system
    full = python.version if python is not None else ""
    implementation = python.implementation if python is not None else "CPython"
    return {
        "implementation_name": implementation.lower(),
        "implementation_version": full,
        "os_name": "nt" if system == "Windows" else "posix",
        "platform_machine": ctx.platform.machine,
        "platform_release": ctx.platform.release,
        "platform_system": system,
        "platform_version": ctx.platform.version,
        "platform_python_implementation": implementation,
        "python_full_version": full,
        "python_version": ".".join(full.split(".")[:2]),
        "sys_platform": {"Windows": "win32", "Darwin": "darwin"}.get(system, system.lower()),
        "extra": "",  # requirements of extras apply only when asked for: not judged
    }


@record
class UnmetRequirement:
    dependent: Distribution
    requirement: Requirement
    installed: Distribution  # the installed distribution it names, which does not satisfy it

    @property
    def wanted(self) -> str:
        """The requirement without its marker: `torch==2.1.0`."""
        return f"{self.requirement.name}{self.requirement.specifier}"


def unmet_requirements(ctx: RuleContext, torch: TorchFacts) -> Iterator[UnmetRequirement]:
    if torch.extensions is None or torch.extensions.distributions is None:
        return
    dists = torch.extensions.distributions
    by_name = {normalize_name(d.name): d for d in dists}
    environment = marker_environment(ctx)
    for dist in dists:
        dependent = normalize_name(dist.name)
        for text in dist.requires:
            try:
                requirement = Requirement(text)
            except InvalidRequirement:
                continue
            required = normalize_name(requirement.name)
            if dependent in COMPANIONS and required == "torch":
                continue  # ED202 judges a companion against torch, with the pairing data
            if required.startswith("nvidia-"):
                continue  # torch's CUDA wheels: ED220 and ED221 judge them
            installed = by_name.get(required)
            if installed is None:
                continue
            try:
                if requirement.marker is not None and not requirement.marker.evaluate(environment):
                    continue
            except Exception:  # a marker this packaging cannot evaluate: not judged
                continue
            if _satisfies(installed.version, requirement) is False:
                yield UnmetRequirement(dist, requirement, installed)
