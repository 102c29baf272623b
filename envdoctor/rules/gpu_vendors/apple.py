"""Apple Macs: an x86_64 Python under Rosetta on Apple Silicon (ED140), a macOS older than the
torch release's MPS backend or one of its features needs (ED141), an Intel Mac (or an x86_64
Python) past the last torch with wheels for it (ED142), and an operator with no MPS kernel while
torch's CPU fallback is off (ED143)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from envdoctor.install import plan as install
from envdoctor.knowledge import apple as known
from envdoctor.knowledge import releases
from envdoctor.knowledge.signatures import ErrorEvidence, SignatureMatch
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.gpu_vendors import MPS_FALLBACK, AppleFacts, GpuVendorFacts
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import set_command
from envdoctor.rules.fixes import install_target, plan_commands, planned_fix

MINIFORGE = "https://github.com/conda-forge/miniforge"
MPS_NOTES = "https://docs.pytorch.org/docs/stable/notes/mps.html"
MPS_COVERAGE = "https://github.com/pytorch/pytorch/issues/141287"
MACOS_UPDATE = "https://support.apple.com/en-us/108382"
INTEL_MAC_NOTICE = "https://github.com/pytorch/pytorch/issues/127870"
X86 = ("x86_64", "i386")


def _apple(ctx: RuleContext) -> AppleFacts | None:
    facts = ctx.get(GpuVendorFacts)
    return facts.apple if facts is not None else None


def _evidence(ctx: RuleContext, ident: str) -> SignatureMatch | None:
    found = ctx.get(ErrorEvidence)
    return found.get(ident) if found is not None else None


def _machine(ctx: RuleContext) -> str:
    """The examined interpreter's own architecture; envdoctor's platform where it did not say."""
    python = ctx.get(PythonFacts)
    return (python.machine if python is not None and python.machine else ctx.platform.machine).lower()


def under_rosetta(ctx: RuleContext) -> bool:
    """An x86_64 interpreter on an Apple Silicon Mac: macOS runs it through Rosetta."""
    if ctx.platform.os != "macos" or _machine(ctx) not in X86:
        return False
    apple = _apple(ctx)
    silicon = apple.apple_silicon if apple is not None else None
    # envdoctor itself native (arm64) while the examined Python is x86_64 tells the same.
    return silicon is True or (silicon is None and ctx.platform.machine.lower() == "arm64")


def _chip(apple: AppleFacts | None) -> str:
    return apple.chip if apple is not None and apple.chip else "Apple Silicon"


@rule(
    code="ED140",
    name="python-under-rosetta-on-apple-silicon",
    severity=Severity.ERROR,
    summary="the examined Python is an x86_64 build that Rosetta runs on an Apple Silicon Mac",
    needs=(PythonFacts,),
    doc=RuleDoc(
        what="The examined interpreter's own architecture (platform.machine() inside it) against the "
        "Mac's (sysctl hw.optional.arm64, which says 1 on Apple Silicon even to a translated process).",
        why="An x86_64 Python on Apple Silicon runs under Rosetta: torch sees no Apple GPU (no MPS), the "
        "installers look for macosx x86_64 wheels, whose last torch is 2.2.2, and an interpreter "
        "built with an old SDK is told macOS 10.16, so torch's macOS checks fail. It happens when an "
        "Intel installer of Anaconda, Miniconda or Python was used, or a terminal runs under Rosetta.",
        fix="Install a native arm64 Python (Miniforge3-MacOSX-arm64, python.org's universal2 installer, "
        "or Homebrew in /opt/homebrew), recreate the environment with it, and install torch there.",
        example="An x86_64 Anaconda on an M1 Pro: platform.processor() says i386, "
        "torch.backends.mps.is_available() is False, and pip finds nothing newer than torch 2.2.2.",
    ),
)
def python_under_rosetta_on_apple_silicon(ctx: RuleContext) -> Iterator[Hit]:
    if not under_rosetta(ctx):
        return
    python = ctx.need(PythonFacts)
    apple = _apple(ctx)
    torch = ctx.get(TorchFacts)
    chip = _chip(apple)
    mps = torch.mps_available if torch is not None and torch.imported else None
    said = [
        f"{python.executable} is an {python.machine or 'x86_64'} (Intel) build, so macOS runs it through "
        f"Rosetta on this {chip}: pip and uv look for macosx x86_64 wheels, of which the last torch is "
        "2.2.2, and every native library loads translated."
    ]
    if torch is not None and torch.installed and torch.version:
        state = (
            "torch.backends.mps.is_available() is False there"
            if mps is False
            else "MPS answers there, but through the translation layer"
            if mps
            else "it did not import"
        )
        said.append(f"The torch there is {torch.version}, an x86_64 build: {state}.")
    if python.mac_version and python.mac_version.startswith("10.") and apple and apple.macos_version:
        said.append(
            f"It is told macOS {python.mac_version} (Apple's compatibility answer to old binaries) on "
            f"{known.macos_name(apple.macos_version)}, so torch's macOS version checks fail ('MPS "
            "BFloat16 is only supported on MacOS 14 or newer')."
        )
    if python.is_conda:
        said.append("A conda installed from the Intel (x86_64) installer makes every environment x86_64.")
    native = install.plan(
        replace(
            install_target(ctx),
            machine="arm64",
            python_launcher=("python", "-m", "pip"),
            installed_torch=None,
        )
    )
    then = f", and install torch there with its python active: {native.reason}" if native.possible else ""
    fixes = (
        Fix(
            summary="Install a native arm64 Python (Miniforge3-MacOSX-arm64, python.org's universal2 "
            "installer, or Homebrew's in /opt/homebrew), recreate the environment with it, check that it "
            f"prints arm64{then}",
            commands=('python -c "import platform; print(platform.machine())"', *plan_commands(ctx, native)),
            link=MINIFORGE,
        ),
    )
    yield Hit(
        title=f"Python runs as x86_64 under Rosetta on this {chip}: no torch newer than 2.2.2"
        + ("" if mps else ", and no MPS"),
        detail=" ".join(said),
        evidence=(
            f"platform.machine() = {python.machine or '?'} ({python.executable})",
            f"hw.optional.arm64 = 1 ({chip})"
            if apple is not None and apple.apple_silicon
            else f"envdoctor runs as {ctx.platform.machine}",
        ),
        fixes=fixes,
    )


def _last_release_for_macos(version: str) -> str | None:
    """The newest torch release whose MPS backend works on macOS `version`."""
    fitting = [
        r.torch
        for r in releases()
        if not r.assumed
        and r.builds("macos-arm64") is not None
        and (floor := known.mps_minimum(r.torch)) is not None
        and known.older(version, floor.macos) is False
    ]
    return fitting[-1] if fitting else None


@rule(
    code="ED141",
    name="macos-too-old-for-mps",
    severity=Severity.WARNING,
    summary="this macOS is older than torch's MPS backend (or one of its features) needs",
    needs=(TorchFacts, GpuVendorFacts),
    consequence_of=("ED140",),
    doc=RuleDoc(
        what="The Mac's macOS version (sysctl kern.osproductversion) against the minimum of the "
        "installed torch's MPS backend (12.3 for torch 1.12-2.4, 13.0 from 2.5, 14.0 from 2.10) and, "
        "where an error shows one was used, of a feature such as bfloat16 on MPS (macOS 14).",
        why="Below the minimum torch.backends.mps.is_built() is True but is_available() is False, and "
        "the model runs on the CPU; the error torch raises names an older minimum than the real one "
        "in some releases ('supported on MacOS 12.3+' from torch 2.5, which needs 13.0).",
        fix="Update macOS, or keep it and install the last torch release whose MPS backend supports it "
        "(the command is shown); for bfloat16 on macOS 13, use float16 or float32.",
        example="torch 2.5.1 on an M1 with macOS 12.7.6: 'RuntimeError: The MPS backend is supported on "
        "MacOS 12.3+', though 2.5 needs macOS 13.",
    ),
)
def macos_too_old_for_mps(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    apple = _apple(ctx)
    if ctx.platform.os != "macos" or apple is None or not torch.imported or apple.apple_silicon is False:
        return
    version = apple.macos_version
    floor = known.mps_minimum(torch.version)
    said = _evidence(ctx, "mps-needs-newer-macos")
    if floor is not None and known.older(version, floor.macos) and torch.mps_available is not True:
        yield _backend_hit(ctx, torch, apple, floor, said)
        return
    bf16 = _evidence(ctx, "mps-bfloat16-needs-macos-14")
    feature = known.feature_minimum("bfloat16")
    if bf16 is not None and feature is not None and known.older(version, feature.macos):
        yield Hit(
            title=f"{feature.words} need {known.macos_name(feature.macos)}; this Mac runs "
            f"{known.macos_name(version)}",
            detail=f"torch {torch.version} raised 'MPS BFloat16 is only supported on MacOS 14 or newer': "
            f"MPS itself works here, but bfloat16 tensors on it need {known.macos_name(feature.macos)}.",
            evidence=(f"macOS {version}", f"{bf16.source}: {bf16.excerpt}"),
            fixes=(
                Fix(
                    summary=f"Update macOS to {feature.macos.split('.')[0]} or newer (System Settings > "
                    "General > Software Update)",
                    link=MACOS_UPDATE,
                ),
                Fix(summary="Keep this macOS and use float16 (or float32) instead of bfloat16 on MPS"),
            ),
        )


def _backend_hit(
    ctx: RuleContext,
    torch: TorchFacts,
    apple: AppleFacts,
    floor: known.MpsMinimum,
    said: SignatureMatch | None,
) -> Hit:
    version = apple.macos_version or "?"
    detail = (
        f"The MPS backend of torch {torch.version} needs {known.macos_name(floor.macos)} or newer; this "
        f"{_chip(apple)} runs {known.macos_name(version)}, so torch.backends.mps.is_available() is False "
        "and everything runs on the CPU."
    )
    named = said.group("macos") if said is not None else None
    if named and known.older(named, floor.macos):
        detail += (
            f" torch's own error says 'supported on MacOS {named}+', which is out of date for this release."
        )
    fixes = [
        Fix(
            summary=f"Update macOS to {floor.macos.split('.')[0]} or newer (System Settings > General > "
            "Software Update)",
            link=MACOS_UPDATE,
        )
    ]
    last = _last_release_for_macos(version)
    if last is not None:
        found = planned_fix(
            ctx,
            f"Keep this macOS and install torch {last}, the last release whose MPS supports it",
            torch=last,
        )
        if found is not None:
            fixes.append(found)
    else:
        fixes.append(Fix(summary="MPS needs macOS 12.3 at least: on this macOS torch runs on the CPU only"))
    return Hit(
        title=f"torch {torch.version}'s MPS backend needs {known.macos_name(floor.macos)}; this Mac runs "
        f"{known.macos_name(version)}",
        detail=detail,
        evidence=(
            f"macOS {version}",
            f"torch.__version__ = {torch.version}",
            "torch.backends.mps.is_available() = False",
        ),
        fixes=tuple(fixes),
    )


@rule(
    code="ED142",
    name="intel-mac-has-no-newer-torch",
    severity=Severity.WARNING,
    summary="PyTorch publishes no torch newer than 2.2.2 for macOS x86_64 (Intel Macs)",
    needs=(PythonFacts,),
    consequence_of=("ED140",),
    doc=RuleDoc(
        what="A macOS x86_64 interpreter (an Intel Mac) without torch, or with an install error that "
        "shows pip or uv found nothing newer than torch 2.2.2, against the last release PyTorch built "
        "for macOS x86_64 and its Python versions.",
        why="PyTorch stopped building macOS x86_64 wheels after 2.2.x (January 2024): 'No matching "
        "distribution found for torch==2.6.0' on an Intel Mac is expected, and on Python 3.13 no torch "
        "installs at all. On Apple Silicon the same error means an x86_64 Python (ED140).",
        fix="Install torch 2.2.2 (Python 3.8-3.12; the command is shown) and keep NumPy below 2, or move "
        "to an Apple Silicon Mac with a native arm64 Python.",
        example="pip install torch==2.6.0 on an Intel MacBook Pro with Python 3.11: 'Could not find a "
        "version that satisfies the requirement torch==2.6.0 (from versions: ... 2.2.2)'.",
    ),
)
def macos_x86_64_has_no_newer_torch(ctx: RuleContext) -> Iterator[Hit]:
    if ctx.platform.os != "macos" or _machine(ctx) not in X86:
        return
    python = ctx.need(PythonFacts)
    torch = ctx.get(TorchFacts)
    said = _evidence(ctx, "macos-x86_64-no-newer-torch")
    last = known.last_release_for(known.MACOS_X86_64)
    pythons = known.last_release_pythons(known.MACOS_X86_64)
    if last is None:
        return
    no_wheel = bool(pythons) and python.minor not in pythons
    missing = torch is not None and not torch.installed
    if said is None and not missing and not no_wheel:
        return  # torch 2.2.2 or older, installed and importing: nothing newer to want here
    detail = (
        f"PyTorch built macOS x86_64 (Intel Mac) wheels up to torch {last} and stopped in January 2024; "
        "newer releases have wheels for Apple Silicon (arm64) only, so pip and uv find no newer torch here."
    )
    if said is not None and said.group("wanted"):
        detail += f" torch=={said.group('wanted')} cannot be installed on this machine."
    fixes: list[Fix] = []
    if no_wheel:
        shown = f"{pythons[0]}-{pythons[-1]}" if len(pythons) > 1 else pythons[0]
        detail += f" torch {last} has wheels for Python {shown} only, and this is Python {python.minor}."
        fixes.append(
            Fix(
                summary=f"Create the environment with Python {pythons[-1]} (torch {last} has no wheels for "
                f"Python {python.minor}), then install torch {last} there",
                commands=(f"python{pythons[-1]} -m venv .venv",),
            )
        )
    else:
        found = planned_fix(ctx, f"Install torch {last}, the last release for Intel Macs", torch=last)
        if found is not None:
            fixes.append(found)
    detail += f" torch {last} was built against NumPy 1.x: keep numpy below 2 beside it."
    fixes.append(
        Fix(
            summary="For newer releases: an Apple Silicon Mac with a native arm64 Python (conda-forge's own "
            "pytorch package may still be built for osx-64)",
            link=INTEL_MAC_NOTICE,
        )
    )
    yield Hit(
        title=f"No torch newer than {last} exists for macOS x86_64 (Intel Macs)",
        detail=detail,
        evidence=(
            f"platform.machine() = {_machine(ctx)}",
            f"Python {python.minor}",
            *((f"{said.source}: {said.excerpt}",) if said is not None else ()),
        ),
        fixes=tuple(fixes),
    )


@rule(
    code="ED143",
    name="mps-op-not-implemented",
    severity=Severity.WARNING,
    summary="an operator has no MPS kernel in this torch, and torch's CPU fallback is off",
    needs=(ErrorEvidence,),
    doc=RuleDoc(
        what="An error that says an operator is not implemented for the MPS device (pasted to `envdoctor "
        "why`, or captured by the smoke test) on a Mac, with PYTORCH_ENABLE_MPS_FALLBACK as this "
        "environment sets it.",
        why="torch raises NotImplementedError for an operator without an MPS kernel unless "
        "PYTORCH_ENABLE_MPS_FALLBACK=1 was set when torch was imported: torch reads it once, so setting "
        "it in os.environ after `import torch`, or in a launcher that does not pass it on, has no "
        "effect. Newer releases implement more operators.",
        fix="Set PYTORCH_ENABLE_MPS_FALLBACK=1 where the job starts, before torch is imported (the "
        "operator then runs on the CPU), or upgrade torch to a release with a kernel for it.",
        example="Stable Diffusion on an M1: 'NotImplementedError: The operator 'aten::_index_put_impl_' is "
        "not current implemented for the MPS device'.",
    ),
)
def mps_op_not_implemented(ctx: RuleContext) -> Iterator[Hit]:
    said = _evidence(ctx, "mps-op-not-implemented")
    if said is None or ctx.platform.os != "macos":
        return
    op = said.group("op") or "?"
    apple = _apple(ctx)
    torch = ctx.get(TorchFacts)
    version = torch.version if torch is not None and torch.imported else None
    fallback = apple.mps_fallback if apple is not None else None
    on = fallback is not None and fallback.strip() not in ("", "0")
    where = f"torch {version}" if version else "this torch"
    detail = f"{where} has no MPS kernel for {op}, and the CPU fallback was off in the process that failed."
    if on:
        detail += (
            f" {MPS_FALLBACK}={fallback} is set here, so the process that failed did not have it when it "
            "imported torch: torch reads the variable once, at import, so setting it in os.environ after "
            "`import torch` (or in a launcher that does not pass it on) has no effect."
        )
    else:
        detail += f" {MPS_FALLBACK} is not set, so torch raises instead of running {op} on the CPU."
    fixes = [
        Fix(
            summary=f"Let torch run such operators on the CPU: set {MPS_FALLBACK}=1 where the job starts, "
            "before torch is imported (os.environ after `import torch` is too late)",
            commands=(set_command(ctx.platform.os, None, MPS_FALLBACK, "1"),),
            link=MPS_NOTES,
        )
    ]
    newest = releases()[-1].torch if releases() else None
    found = None
    if version and newest and version.split("+", 1)[0] != newest:
        found = planned_fix(ctx, "Upgrade torch: newer releases implement more operators on MPS")
    fixes.append(
        found
        or Fix(
            summary=f"Use a torch release with an MPS kernel for {op}: newer releases implement more "
            "operators (the tracking issue lists the missing ones)",
            link=MPS_COVERAGE,
        )
    )
    yield Hit(
        title=f"{op} has no MPS kernel in {where}, and the CPU fallback is off",
        detail=detail,
        evidence=(
            f"{said.source}, line {said.line}: {said.excerpt}",
            f"{MPS_FALLBACK}={fallback or '(unset)'}",
        ),
        fixes=tuple(fixes),
    )
