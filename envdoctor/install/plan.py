"""The install planner: (target machine, knowledge) -> the pinned commands that install a working torch.

It intersects what the driver runs (minor-version compatibility counts) with what the GPUs need
(each build's compiled architectures), for a release with wheels for the target Python, OS and
machine. Pure: it reads only the knowledge base. `check`'s rules take their fix commands from here,
so the report and `envdoctor install` never disagree.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import replace

from packaging.version import Version

from envdoctor import knowledge
from envdoctor.install import vendors
from envdoctor.install.commands import (
    TAKES_IT_FROM_PYTORCH,
    Command,
    choose_index,
    command_text,
    conda_command,
)
from envdoctor.install.routes import (
    NVIDIA_ON_MIRROR,
    Routed,
    conda_channel_route,
    conda_past_channel,
    route,
)
from envdoctor.install.sources import Constraint, blocking, fits
from envdoctor.install.target import InstallTarget
from envdoctor.knowledge import DriverVersion, Release, conda, variant_cuda
from envdoctor.knowledge.archs import ArchList, CoverageKind, arch_list, coverage
from envdoctor.knowledge.drivers import DriverKind, DriverSupport, driver_support, native_cuda
from envdoctor.knowledge.gpus import is_tegra
from envdoctor.util.records import record

MANAGERS = ("pip", "uv", "conda")
GET_STARTED = "https://pytorch.org/get-started/locally/"
CONDA_CUTOFF_ISSUE = "pytorch/pytorch#138506"
UPDATE_HINT = "`envdoctor update` refreshes it"

__all__ = ["MANAGERS", "Command", "InstallPlan", "InstallTarget", "Route", "plan"]


class Route(str, enum.Enum):
    """Where the planned build comes from."""

    INDEX = "index"  # the index the official command names, or the default one
    LOCAL = "local"  # a find-links folder or file:// index on this machine that holds the build
    FALLBACK = "fallback"  # another index, because the usual one did not answer
    OFFLINE = "offline"  # nothing reachable has it: download the wheel elsewhere


@record
class InstallPlan:
    torch: str | None
    torchvision: str | None
    torchaudio: str | None
    variant: str | None
    reason: str
    commands: tuple[Command, ...] = ()
    warnings: tuple[str, ...] = ()
    suggestions: tuple[str, ...] = ()  # when nothing fits: what to change
    source: str | None = None  # one sentence: where the build comes from, and why (sources known)
    route: Route = Route.INDEX
    unverified: bool = False  # a release newer than envdoctor's data: its builds are assumed

    @property
    def possible(self) -> bool:
        return bool(self.commands)


@record
class _Choice:
    variant: str
    why: str
    warnings: tuple[str, ...] = ()


def _cuda_key(variant: str) -> tuple[int, ...]:
    cuda = variant_cuda(variant)
    return tuple(int(p) for p in cuda.split(".")) if cuda else (0,)


def _gpu_coverage(release: Release, variant: str, target: InstallTarget) -> list[str]:
    """The GPUs `variant` of `release` cannot serve, each with why; empty when all are served."""
    arch = arch_list(release, variant, target.platform)
    if arch is None:
        return []  # no list in the data: the driver decides alone (said in a warning)
    missing = []
    for i, capability in enumerate(target.gpu_capabilities):
        found = coverage(arch, capability)
        if found.kind == CoverageKind.NONE:
            missing.append(target.gpu_label(i))
    return missing


def _ptx_only(release: Release, variant: str, target: InstallTarget) -> list[str]:
    arch = arch_list(release, variant, target.platform)
    if arch is None:
        return []
    return [
        target.gpu_label(i)
        for i, capability in enumerate(target.gpu_capabilities)
        if coverage(arch, capability).kind == CoverageKind.PTX
    ]


def _driver_words(target: InstallTarget) -> str:
    native = target.driver_cuda or native_cuda(target.driver_version, target.os)
    supports = f" supports CUDA <= {native}" if native else ""
    return f"driver {target.driver_version}{supports}"


def _gpu_words(release: Release, variant: str, target: InstallTarget, skipped: Sequence[str]) -> str:
    if not target.gpu_capabilities:
        return ""
    labels = [target.gpu_label(i) for i in range(len(target.gpu_capabilities))]
    arch = arch_list(release, variant, target.platform)
    if arch is None:
        return f"; the arch list of {variant} is not in envdoctor's data"
    ptx = _ptx_only(release, variant, target)
    names = ", ".join(labels)
    verb = "is" if len(labels) == 1 else "are"
    where = f"in {variant}'s arch list" if not ptx else f"served by {variant}'s PTX (JIT-compiled)"
    lacking = f" ({' and '.join(skipped)} lack it)" if skipped else ""
    return f"; {names} {verb} {where}{lacking}"


def _choose_cuda(release: Release, target: InstallTarget) -> _Choice | str:
    """The newest CUDA variant the driver runs whose arch list serves every GPU, or why none does."""
    builds = release.builds(target.platform)
    assert builds is not None
    variants = sorted((v for v in builds.variants if v.startswith("cu")), key=_cuda_key, reverse=True)
    if not variants:
        return f"torch {release.torch} has no CUDA build for {target.platform}"
    if target.driver_version is None:
        return _choose_without_driver(release, target, variants)
    judged: list[tuple[str, DriverSupport, list[str]]] = []
    for variant in variants:
        support = driver_support(variant, target.driver_version, target.os, target.driver_cuda)
        missing = _gpu_coverage(release, variant, target)
        # PTX needs a driver at least as new as the toolkit: minor-version compatibility is not enough.
        if support.kind == DriverKind.COMPAT:
            missing += [g for g in _ptx_only(release, variant, target) if g not in missing]
        judged.append((variant, support, missing))
    for wanted in (DriverKind.NATIVE, DriverKind.COMPAT):
        if wanted == DriverKind.COMPAT and target.native_only:
            break
        skipped: list[str] = []
        for variant, support, missing in judged:
            if missing and support.runs:
                skipped.append(variant)
            if support.kind != wanted or missing:
                continue
            warnings: list[str] = []
            why = _driver_words(target)
            if wanted == DriverKind.COMPAT:
                why += f" and runs {variant} through minor-version compatibility (>= {support.floor})"
                warnings.append(
                    f"driver {target.driver_version} predates CUDA {support.cuda} (native from "
                    f"{support.native}): precompiled kernels run, but PTX JIT, torch.compile/Triton "
                    "and newer-driver APIs can fail. Upgrade the driver to >= "
                    f"{support.native} to run {variant} natively."
                )
            if support.caveat:
                warnings.append(support.caveat)
            if support.assumed_note:
                warnings.append(support.assumed_note)
            why += f" -> {variant}" + _gpu_words(release, variant, target, skipped)
            return _Choice(variant, why, tuple(warnings))
    return _no_cuda_fit(release, target, judged)


def _choose_without_driver(release: Release, target: InstallTarget, variants: list[str]) -> _Choice | str:
    """CUDA asked for an NVIDIA GPU whose driver is unknown: the build PyPI carries for the platform
    (PyTorch's default there) when it serves the GPUs, else the newest that does, and the driver it
    needs, said plainly."""
    builds = release.builds(target.platform)
    default = builds.pypi if builds is not None and builds.pypi in variants else None
    for variant in ([default] if default else []) + [v for v in variants if v != default]:
        if _gpu_coverage(release, variant, target):
            continue
        need = driver_support(variant, None, target.os)
        natively = f" (>= {need.native} natively)" if need.native and need.native != need.floor else ""
        warning = (
            f"NVIDIA driver unknown (none given, none found): {variant} needs a driver >= {need.floor}"
            f"{natively}; pass --driver to plan for the one you have"
        )
        why = f"NVIDIA driver unknown -> {variant}" + _gpu_words(release, variant, target, ())
        return _Choice(variant, why, (warning,) + ((need.assumed_note,) if need.assumed_note else ()))
    gpus = ", ".join(target.gpu_label(i) for i in range(len(target.gpu_capabilities)))
    return f"torch {release.torch}: no CUDA build includes {gpus}"


def _no_cuda_fit(
    release: Release, target: InstallTarget, judged: list[tuple[str, DriverSupport, list[str]]]
) -> str:
    usable = (DriverKind.NATIVE,) if target.native_only else (DriverKind.NATIVE, DriverKind.COMPAT)
    running = [(v, s, m) for v, s, m in judged if s.kind in usable]
    if not running:
        how = " natively" if target.native_only else ""
        needs = ", ".join(f"{v} >= {s.native if target.native_only else s.floor}" for v, s, _ in judged)
        return (
            f"torch {release.torch}: {_driver_words(target)}, too old to run its CUDA builds{how} ({needs})"
        )
    gpus = sorted({g for _, _, missing in running for g in missing})
    return f"torch {release.torch}: no build this driver runs includes {', '.join(gpus)}"


def _explicit_variant(release: Release, target: InstallTarget) -> _Choice | str:
    variant = target.variant
    assert variant is not None
    builds = release.builds(target.platform)
    assert builds is not None
    if variant == "xpu":
        xpu = vendors.choose_xpu(release, target.platform)
        return xpu if isinstance(xpu, str) else _Choice("xpu", "xpu as asked" if target.asked else "xpu")
    if variant not in builds.variants:
        return f"torch {release.torch} has no {variant} build for {target.platform}"
    warnings: list[str] = []
    why = f"{variant} as asked" if target.asked else variant
    if variant.startswith("cu"):
        support = driver_support(variant, target.driver_version, target.os, target.driver_cuda)
        if target.driver_version is None and support.floor is not None:
            native = f" (>= {support.native} natively)" if support.native != support.floor else ""
            warnings.append(f"NVIDIA driver unknown: {variant} needs >= {support.floor}{native}")
        if support.kind == DriverKind.TOO_OLD:
            warnings.append(
                f"driver {target.driver_version} is too old for {variant}: it needs >= {support.floor}"
            )
        elif support.kind == DriverKind.COMPAT:
            warnings.append(
                f"driver {target.driver_version} runs {variant} only through minor-version "
                f"compatibility; >= {support.native} runs it natively"
            )
        if support.caveat:
            warnings.append(support.caveat)
        if support.assumed_note:
            warnings.append(support.assumed_note)
        missing = _gpu_coverage(release, variant, target)
        if missing:
            warnings.append(
                f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not in {variant}'s arch "
                f"list for torch {release.torch}: CUDA kernels will fail with 'no kernel image is "
                "available for execution on the device'"
            )
        elif target.gpu_capabilities:
            why += _gpu_words(release, variant, target, ())
    elif variant.startswith("rocm") and target.gfx_targets:
        warnings += vendors.rocm_warnings(release, variant, target.gfx_targets)
    elif variant.startswith("rocm"):
        warnings.append(
            f"{variant} builds need an AMD GPU supported by ROCm {variant[4:]}; envdoctor does not "
            "check AMD GPUs"
        )
    return _Choice(variant, why, tuple(warnings))


def _wants_cuda(target: InstallTarget) -> bool:
    if target.want_cuda is not None:
        return target.want_cuda and target.os != "macos"
    return target.driver_version is not None and target.os != "macos"


def _cpu_why(target: InstallTarget) -> str:
    if target.variant == "cpu" or target.want_cuda is False:
        return "the CPU build, as asked" if target.asked else "the CPU build"
    if target.os == "macos":
        return "macOS: the default build (CPU, and MPS on Apple silicon)"
    return "no NVIDIA GPU with a working driver -> the CPU build"


def _choose(release: Release, target: InstallTarget) -> _Choice | str:
    if target.variant is not None and target.variant != "cpu":
        return _explicit_variant(release, target)
    vendor = target.gfx_targets or target.want_xpu or target.amd_target_unknown
    if target.variant is None and not _wants_cuda(target) and vendor:
        return _choose_vendor(release, target)
    if target.variant == "cpu" or not _wants_cuda(target):
        builds = release.builds(target.platform)
        if builds is None or "cpu" not in builds.variants:
            return f"torch {release.torch} has no CPU build for {target.platform}"
        return _Choice("cpu", _cpu_why(target))
    return _choose_cuda(release, target)


def _choose_vendor(release: Release, target: InstallTarget) -> _Choice | str:
    """AMD first (ROCm builds), then Intel (the xpu build); see install/vendors.py."""
    if target.gfx_targets or target.amd_target_unknown:
        found = vendors.choose_rocm(release, target.platform, target.gfx_targets)
    else:
        found = vendors.choose_xpu(release, target.platform)
    if isinstance(found, str):
        return found
    return _Choice(found.variant, found.why, found.warnings)


def candidates(target: InstallTarget) -> tuple[Release, ...]:
    """The releases the planner may pick from, newest first: a release newer than the data (asked
    for, or installed when none is asked for) comes first as a best-effort stand-in."""
    newest_first = tuple(reversed(knowledge.known_releases()))
    if target.torch is None:
        assumed = knowledge.assumed_release(target.installed_torch or "")
        return ((assumed,) if assumed is not None else ()) + newest_first
    wanted = knowledge.resolve_release(target.torch) or _held_in_series(target)
    wanted = wanted or knowledge.unlisted_release(target.torch)
    return (wanted,) if wanted is not None else ()


def _held_in_series(target: InstallTarget) -> Release | None:
    """For a series no known release belongs to (--torch 2.14 with data up to 2.13): the newest
    torch of that series a configured source holds for this platform and Python, as a stand-in;
    so the plan pins a release that exists rather than a pattern."""
    wanted = knowledge.parse_version(target.torch or "")
    if wanted is None or len(wanted.release) != 2 or target.sources is None:
        return None
    held = [
        w.version
        for w in target.sources.wheels
        if w.project == "torch"
        and w.version.release[:2] == wanted.release
        and any(fits(t, target.platform, target.python) for t in w.tags)
    ]
    if not held:
        return None
    return knowledge.unlisted_release(max(held).public)


def _release_problem(release: Release, target: InstallTarget) -> str | None:
    builds = release.builds(target.platform)
    if builds is None:
        return f"torch {release.torch} has no wheels for {target.platform}"
    if target.python is not None and target.python not in release.python_for(target.platform):
        return f"torch {release.torch} has no wheels for Python {target.python}"
    return None


def plan(target: InstallTarget, alternatives: bool = True) -> InstallPlan:
    """The plan for `target`. `alternatives`: also work out what to change when nothing fits (or
    conda's last release); the planner's own look-ahead plans skip that, which keeps them from
    planning each other without end (a conda plan asks for the last conda release, whose failure
    asks for the newest release, whose plan asks for the last conda release, ...)."""
    if target.sources is not None and target.sources.broken is not None:
        return InstallPlan(None, None, None, None, target.sources.broken, warnings=target.notes)
    found = candidates(target)
    if not found:
        newest = plan(replace(target, torch=None), alternatives=False)
        fallback = (
            f"the newest release in envdoctor's data that fits: torch {newest.torch} ({newest.variant}), "
            f"--torch {newest.torch}; for torch {target.torch} itself see {GET_STARTED}"
        )
        known = knowledge.known_releases()
        return InstallPlan(
            None,
            None,
            None,
            None,
            f"torch {target.torch} is not in envdoctor's data yet (data as of "
            f"{knowledge.releases_as_of()}); known releases: {known[0].torch} to {known[-1].torch}",
            suggestions=(fallback,) if newest.possible else (),
        )
    notes: list[str] = []
    rejected: list[tuple[Release, Constraint]] = []
    for release in found:
        problem = _release_problem(release, target)
        if problem is not None:
            notes.append(problem)
            continue
        choice = _choose(release, target)
        if isinstance(choice, str):
            notes.append(choice)
            continue
        constraint = _constrained(release, target)
        if constraint is not None:
            rejected.append((release, constraint))
            notes.append(
                f"torch {release.torch}: {constraint.label} {constraint.text} ({constraint.file}, line "
                f"{constraint.line}) rejects it"
            )
            continue
        planned = _plan_for(release, choice, target, alternatives)
        return _with_history(planned, target, release, notes, rejected)
    return _impossible(target, notes, rejected, alternatives)


def _constrained(release: Release, target: InstallTarget) -> Constraint | None:
    """The configured constraint that rejects this release or a companion the command pins."""
    versions = {"torch": release.torch, "torchvision": release.torchvision, "torchaudio": release.torchaudio}
    for name in knowledge.command_packages(release):
        found = blocking(target.sources, name, versions.get(name))
        if found is not None:
            return found
    return None


def _with_history(
    result: InstallPlan,
    target: InstallTarget,
    release: Release,
    notes: list[str],
    rejected: list[tuple[Release, Constraint]],
) -> InstallPlan:
    """Say what was passed over on the way: a constraint that ruled out newer releases, a release
    newer than the data, and a downgrade from what is installed, with why."""
    warnings = list(result.warnings)
    reason = result.reason
    warnings[:0] = [n for n in target.notes if n not in warnings]
    if rejected:
        newest, constraint = rejected[0]
        warnings.insert(
            0,
            f"{constraint.label} {constraint.text} ({constraint.file}, line {constraint.line}) rules out "
            f"torch {newest.torch}; this is torch {release.torch}, the newest release in envdoctor's "
            f"data that it allows{_newer_held(target, release, result.variant)}. To lift it: "
            f"{constraint.lift}",
        )
    if release.assumed:
        warnings.insert(0, _newer_than_data(release, target.platform))
    broken = _installed_breaks_constraint(target)
    if broken is not None:
        warnings.append(broken)
    installed = knowledge.parse_version((target.installed_torch or "").split("+", 1)[0])
    if target.torch is None and installed is not None and release.version < installed:
        why = notes[0] if notes else "the planner found no fitting build of it"
        reason += f" (a downgrade from the installed {target.installed_torch}: {why})"
    elif target.torch is None and installed is not None and release.version.release > installed.release:
        reason += f" ({_upgrade(target, release, installed)})"
    return replace(result, reason=reason, warnings=tuple(dict.fromkeys(warnings)), unverified=release.assumed)


def _installed_breaks_constraint(target: InstallTarget) -> str | None:
    """The installed torch already violates a configured constraint (a re-badged 2.15.0 under
    torch<=2.14.1): pip's next install of anything that requires torch fails to resolve or moves it."""
    installed = target.installed_torch
    if not installed or knowledge.parse_version(installed.split("+", 1)[0]) is None:
        return None
    found = blocking(target.sources, "torch", installed)
    if found is None:
        return None
    return (
        f"the installed torch {installed} violates {found.label} {found.text} ({found.file}, line "
        f"{found.line}): the next pip install of anything that requires torch fails to resolve, or "
        f"replaces it. To lift it: {found.lift}"
    )


def _upgrade(target: InstallTarget, release: Release, installed: Version) -> str:
    """Why the plan moves the installed release up, and how to keep it where a plan for it fits."""
    said = (
        f"an upgrade from the installed {target.installed_torch} to {release.torch}, because the plan "
        "takes the newest release that fits"
    )
    if knowledge.release(installed.public) is None:  # a release the data lacks: nothing to offer
        return said
    keep = plan(replace(target, torch=installed.public), alternatives=False)
    if keep.possible:
        said += f"; `envdoctor install --torch {installed.public}` keeps the installed release"
    return said


def _newer_held(target: InstallTarget, release: Release, variant: str | None) -> str:
    """Why a newer torch that a configured source holds, the constraint allows and fits this
    platform was not chosen (envdoctor's data does not list it, or it is another build)."""
    if target.sources is None:
        return ""
    held = [
        w
        for w in target.sources.wheels
        if w.project == "torch"
        and Version(w.version.public) > release.version
        and blocking(target.sources, "torch", str(w.version)) is None
        and any(fits(t, target.platform, target.python) for t in w.tags)
    ]
    if not held:
        return ""
    wheel = max(held, key=lambda w: w.version)
    public = wheel.version.public
    why = []
    if knowledge.release(public) is None:
        why.append("a release envdoctor's data does not list")
    if variant is not None and wheel.label != variant:
        build = f"the {wheel.label} build" if wheel.label else "the build without a local label"
        why.append(f"{build}, not the {variant} one")
    if not why:
        return ""
    return f" ({wheel.source.url} holds torch {public}: {'; '.join(why)})"


def _newer_than_data(release: Release, platform: str) -> str:
    newest = knowledge.stand_in_base(release.torch)
    builds = release.builds(platform)
    shown = f" ({', '.join(builds.variants)} on {platform})" if builds else ""
    where = (
        "newer than envdoctor's data"
        if knowledge.newer_than_data(release.torch)
        else "not in envdoctor's data, which lists newer releases"
    )
    return (
        f"torch {release.torch} is {where} ({knowledge.data_horizon()}); "
        f"{UPDATE_HINT}. Unverified: its builds are assumed to be those of {newest.torch}{shown}, "
        "and pip pairs torchvision with it"
    )


def _summarise(notes: list[str]) -> str:
    """The newest release's reason, and how many older ones were tried: one or two lines, not thirty."""
    unique = list(dict.fromkeys(notes))
    if len(unique) <= 2:
        return "; ".join(unique)
    return f"{unique[0]}; {len(notes) - 1} older releases do not fit either"


def _impossible(
    target: InstallTarget,
    notes: list[str],
    rejected: Sequence[tuple[Release, Constraint]] = (),
    alternatives: bool = True,
) -> InstallPlan:
    reason = "no torch build fits: " + _summarise(notes) if notes else "no torch build fits"
    suggestions = _suggestions(target) if alternatives else []
    for _, constraint in rejected[:1]:
        suggestions.append(f"lift {constraint.label} {constraint.text}: {constraint.lift}")
    return InstallPlan(
        None, None, None, None, reason, warnings=target.notes, suggestions=tuple(dict.fromkeys(suggestions))
    )


def _suggestions(target: InstallTarget) -> list[str]:
    """What to change when nothing fits: another torch, a newer driver, or the CPU build."""
    found: list[str] = []
    if target.torch is not None:
        other = plan(replace(target, torch=None), alternatives=False)
        if other.possible:
            found.append(
                f"use torch {other.torch} ({other.variant}), the newest that fits: --torch {other.torch}"
            )
    wants_gpu = target.variant is None and _wants_cuda(target) and target.driver_version is not None
    if wants_gpu:
        upgrade = _driver_upgrade(target)
        if upgrade is not None:
            found.append(upgrade)
        tegra = [target.gpu_label(i) for i, c in enumerate(target.gpu_capabilities) if is_tegra(c)]
        if tegra and upgrade is None:
            found.append(
                f"{', '.join(tegra)}: a Jetson/Tegra GPU runs only kernels built for its own compute "
                "capability, and PyTorch's wheels include none; use a build made for JetPack"
            )
    if target.variant != "cpu":
        cpu = plan(replace(target, variant="cpu", want_cuda=False), alternatives=False)
        if cpu.possible:
            found.append(f"the CPU build: --cuda cpu (torch {cpu.torch})")
    return found


def _driver_upgrade(target: InstallTarget) -> str | None:
    """The newest build that serves every GPU whatever the driver, and the driver it needs."""
    for release in candidates(target):
        if _release_problem(release, target) is not None:
            continue
        builds = release.builds(target.platform)
        assert builds is not None
        needs: list[tuple[DriverVersion, str]] = []
        for variant in (v for v in builds.variants if v.startswith("cu")):
            if _gpu_coverage(release, variant, target):
                continue
            need = driver_support(variant, "0", target.os)
            floor = need.native if target.native_only or _ptx_only(release, variant, target) else need.floor
            if floor is not None:
                needs.append((floor, variant))
        if needs:
            floor, variant = min(needs)
            return f"upgrade the NVIDIA driver to >= {floor} for torch {release.torch} ({variant})"
    return None


def _plan_for(
    release: Release, choice: _Choice, target: InstallTarget, alternatives: bool = True
) -> InstallPlan:
    warnings = list(choice.warnings)
    arch = arch_list(release, choice.variant, target.platform)
    if arch is not None and arch.inferred and target.gpu_capabilities:
        warnings.append(
            f"no published arch list for torch {release.torch} in envdoctor's data: {choice.variant}'s "
            f"is assumed, carried forward from {_arch_origin(release, arch)}"
        )
    if choice.variant.startswith("cu") and target.gpu_capabilities and arch is None:
        warnings.append(f"envdoctor has no arch list for torch {release.torch} {choice.variant}")
    if choice.variant.startswith("cu") and not target.gpu_capabilities:
        checked = "the choice follows the driver only" if target.variant is None else "not checked"
        warnings.append(f"GPU architecture unknown: {checked} (pass --gpu NAME or sm_XY)")
    packages = knowledge.command_packages(release)
    if "torchaudio" in packages and release.torchaudio is None:
        warnings.append(f"no torchaudio release is known for torch {release.torch}")
    elif "torchaudio" not in packages and release.torchaudio is not None:
        warnings.append(
            f"torchaudio=={release.torchaudio} matches this torch; the official command leaves it "
            "out from 2.8, add it if you need it"
        )
    routed = _commands(release, choice.variant, target, warnings)
    return InstallPlan(
        torch=release.torch,
        torchvision=release.torchvision,
        torchaudio=release.torchaudio,
        variant=choice.variant,
        reason=f"{choice.why} -> torch {release.torch} ({choice.variant})",
        commands=routed.commands,
        warnings=tuple(dict.fromkeys(warnings)),
        suggestions=routed.leading
        + (tuple(_conda_alternative(release, target)) if alternatives else ())
        + routed.suggestions,
        source=routed.sentence,
        route=Route(routed.route),
    )


def _arch_origin(release: Release, arch: ArchList) -> str:
    """Where a borrowed arch list comes from, in a few words."""
    prefix = "assumed: carried forward from "
    basis = arch.provenance.basis or ""
    if basis.startswith(prefix):  # the overlay's: "torch 2.13 cu130 by `envdoctor update` (...)"
        return basis[len(prefix) :].split(" (", 1)[0]
    if release.assumed:
        base = knowledge.stand_in_base(release.torch)
        newest = (
            "the newest known release" if base == knowledge.newest_release() else "the nearest older release"
        )
        return f"{newest}, {base.torch}"
    return "the previous release"


def _uninstall_first(release: Release, variant: str, target: InstallTarget) -> Command | None:
    """pip treats an installed 2.5.1+cpu as satisfying torch==2.5.1: remove it before a variant swap."""
    installed = target.installed_torch
    if not installed:
        return None
    public, _, label = installed.partition("+")
    if public != release.torch or label == variant:
        return None
    return Command((*target.python_launcher, "uninstall", "-y", "torch", "torchvision", "torchaudio"), "pip")


def _commands(release: Release, variant: str, target: InstallTarget, warnings: list[str]) -> Routed:
    index = choose_index(release, variant, target.platform, target.mirror, warnings)
    if target.manager == "conda":
        found = conda_command(release, variant, target.platform)
        if found is not None:
            if variant.startswith("cu") and target.mirror is not None:
                warnings.append(NVIDIA_ON_MIRROR)
            return conda_channel_route(found, target, conda.last_release(), warnings)
        warnings.append(_conda_missing(release, variant, target.platform))
    manager = "uv" if target.manager == "uv" else "pip"
    routed = route(release, variant, index, target, manager, warnings)
    if index.url is not None and not any(index.url in c.argv for c in routed.commands):
        # the build comes from elsewhere (a local folder, a downloaded file): no note says otherwise
        warnings[:] = [w for w in warnings if TAKES_IT_FROM_PYTORCH not in w]
    if target.manager == "conda":
        routed = conda_past_channel(routed, variant, target, conda.last_release())
    first = _uninstall_first(release, variant, target) if manager == "pip" else None
    if first is not None and routed.route != Route.OFFLINE.value:
        return replace(routed, commands=(first, *routed.commands))
    return routed


def _conda_missing(release: Release, variant: str, platform: str) -> str:
    last = conda.last_release()
    if release.version > Version(last):
        why = f"the pytorch conda channel stops at {last} ({CONDA_CUTOFF_ISSUE})"
    else:
        why = f"the pytorch conda channel has no {variant} build of torch {release.torch} for {platform}"
    return (
        f"{why}: inside your conda environment, install with pip (the pip command of this plan); "
        "conda-forge's "
        "'pytorch'/'pytorch-gpu' are community builds with their own versions"
    )


def _conda_alternative(release: Release, target: InstallTarget) -> list[str]:
    """For conda users past the cut-off: the newest release still on the channel, if it fits."""
    if target.manager != "conda" or conda.conda_spec(release, "cpu", target.platform) is not None:
        return []
    last = conda.last_release()
    if target.torch is not None or release.version <= Version(last):
        return []
    older = plan(replace(target, torch=last), alternatives=False)
    conda_only = [c for c in older.commands if c.manager == "conda"]
    if not conda_only:
        return []
    return [
        f"conda packages only: torch {older.torch} ({older.variant}), the last on the channel: "
        + command_text(conda_only[0], target.os)
    ]
