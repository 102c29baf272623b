"""The install planner: (target machine, knowledge) -> the pinned commands that install a working torch.

Pure: it reads only the knowledge base. `check`'s rules take their fix commands from here, so the
report and `envdoctor install` never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

from envdoctor import knowledge
from envdoctor.knowledge import Release, parse_version
from envdoctor.shell import join

WHEEL_INDEX = "https://download.pytorch.org/whl"


@dataclass(frozen=True)
class InstallTarget:
    os: str  # linux, windows, macos
    machine: str = "x86_64"
    python: str | None = None  # "3.11"
    driver_version: str | None = None  # None: no usable NVIDIA driver
    gpu_capabilities: tuple[tuple[int, int], ...] = ()
    torch: str | None = None  # a wanted release, else the newest that fits
    want_cuda: bool | None = None  # None: CUDA when an NVIDIA GPU and driver are there
    python_launcher: tuple[str, ...] = ("pip3",)  # ("/env/bin/python", "-m", "pip") for check


@dataclass(frozen=True)
class PlannedCommand:
    manager: str
    command: str


@dataclass(frozen=True)
class InstallPlan:
    torch: str | None
    torchvision: str | None
    torchaudio: str | None
    variant: str | None
    reason: str
    commands: tuple[PlannedCommand, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def possible(self) -> bool:
        return bool(self.commands)


def _fits_python(release: Release, python: str | None) -> bool:
    return python is None or python in release.python


def _usable_cuda(release: Release, target: InstallTarget) -> tuple[str, str] | None:
    """The newest CUDA of `release` whose driver minimum `target`'s driver meets, with why."""
    driver = parse_version(target.driver_version)
    if driver is None:
        return None
    for cuda in sorted(release.cuda, key=Version, reverse=True):
        minimum = knowledge.driver_minimum(cuda, target.os)
        if minimum is None:
            continue
        floor = minimum.compat or minimum.toolkit
        if floor is not None and driver >= floor:
            how = (
                "natively"
                if minimum.toolkit is not None and driver >= minimum.toolkit
                else f"through minor-version compatibility (>= {floor})"
            )
            return cuda, f"driver {target.driver_version} runs CUDA {cuda} {how}"
    return None


def _candidates(target: InstallTarget) -> tuple[Release, ...]:
    newest_first = tuple(reversed(knowledge.releases()))
    if target.torch is None:
        return newest_first
    wanted = parse_version(target.torch)
    return tuple(r for r in newest_first if wanted is not None and r.version == wanted)


def plan(target: InstallTarget) -> InstallPlan:
    candidates = _candidates(target)
    if not candidates:
        return InstallPlan(
            None,
            None,
            None,
            None,
            f"torch {target.torch} is not in envdoctor's data yet (data as of {knowledge.releases_as_of()})",
        )
    wants_cuda = target.want_cuda
    if wants_cuda is None:
        wants_cuda = target.driver_version is not None and target.os != "macos"
    notes: list[str] = []
    for release in candidates:
        if not _fits_python(release, target.python):
            notes.append(f"torch {release.torch} has no wheels for Python {target.python}")
            continue
        if not wants_cuda:
            why = "no NVIDIA GPU with a working driver" if target.os != "macos" else "macOS"
            return _plan_for(release, "cpu", f"{why} -> the CPU build", target)
        usable = _usable_cuda(release, target)
        if usable is not None:
            cuda, why = usable
            return _plan_for(release, knowledge.cuda_variant(cuda), f"{why}", target)
        notes.append(f"torch {release.torch}: the driver is too old for CUDA {', '.join(release.cuda)}")
    return InstallPlan(
        None,
        None,
        None,
        None,
        "no torch release fits: " + "; ".join(dict.fromkeys(notes)) if notes else "no release fits",
    )


def _plan_for(release: Release, variant: str, why: str, target: InstallTarget) -> InstallPlan:
    packages = [f"torch=={release.torch}"]
    if release.torchvision:
        packages.append(f"torchvision=={release.torchvision}")
    # From 2.8 the official selector installs torch and torchvision only.
    if release.torchaudio and release.version < Version("2.8"):
        packages.append(f"torchaudio=={release.torchaudio}")
    argv = [*target.python_launcher, "install", *packages]
    if target.os != "macos":
        argv += ["--index-url", f"{WHEEL_INDEX}/{variant}"]
    command = join(argv, target.os)
    return InstallPlan(
        torch=release.torch,
        torchvision=release.torchvision,
        torchaudio=release.torchaudio,
        variant=variant,
        reason=f"{why} -> torch {release.torch} ({variant})",
        commands=(PlannedCommand("pip", command),),
    )
