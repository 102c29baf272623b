"""What a wheel's file name and its core metadata say: release, variant, platform, Python, CUDA.

File names are read with packaging.utils.parse_wheel_filename; the CUDA version comes from the
nvidia-* (or cuda-toolkit) requirements in the wheel's METADATA, fetched on its own (PEP 658), so
no wheel is ever downloaded.
"""

from __future__ import annotations

import re
from email.parser import HeaderParser

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from envdoctor.update.simple_index import IndexFile
from envdoctor.util.records import record

# The runtime's own package names the CUDA version exactly; the others only its major version.
_RUNTIME = re.compile(r"^nvidia-cuda-(runtime|nvrtc)(-cu(\d+))?$")
_TOOLKIT = "cuda-toolkit"
_ANY_NVIDIA = re.compile(r"^nvidia-[a-z0-9-]+?-cu(\d+)$")


@record
class Wheel:
    file: IndexFile
    project: str  # canonical name: "torch"
    version: Version  # with its local label: 2.16.0+cu128
    platforms: frozenset[str]  # envdoctor's platform keys: "linux-x86_64", ...
    pythons: frozenset[str]  # "3.11"; free-threaded builds (cp313t) are left out
    abi3_from: str | None = None  # "3.10" for a cp310-abi3 wheel: every Python from there

    @property
    def public(self) -> str:
        return self.version.public

    @property
    def label(self) -> str | None:
        return self.version.local


def platform_of(tag: str) -> str | None:
    """envdoctor's platform key of a wheel platform tag; None for platforms it does not plan for."""
    if tag.startswith(("manylinux", "musllinux", "linux")):
        os_name = "linux"
    elif tag.startswith("win"):
        os_name = "windows"
    elif tag.startswith("macosx"):
        os_name = "macos"
    else:
        return None
    for machine, key in (
        ("x86_64", "x86_64"),
        ("amd64", "x86_64"),
        ("aarch64", "aarch64"),
        ("arm64", "arm64"),
    ):
        if tag.endswith(f"_{machine}"):
            if os_name == "linux" and key == "arm64":
                key = "aarch64"
            if os_name == "macos" and key == "aarch64":
                key = "arm64"
            return f"{os_name}-{key}"
    return None


def _python(interpreter: str) -> str | None:
    """ "3.11" from "cp311"."""
    match = re.fullmatch(r"cp3(\d+)", interpreter)
    return f"3.{match.group(1)}" if match else None


def parse_wheel(file: IndexFile) -> Wheel | None:
    """The wheel behind an index entry; None for sdists, odd names and platforms out of scope."""
    if not file.filename.endswith(".whl"):
        return None
    try:
        name, version, _, tags = parse_wheel_filename(file.filename)
    except (InvalidWheelFilename, ValueError):
        return None
    platforms: set[str] = set()
    pythons: set[str] = set()
    abi3 = None
    for tag in tags:
        key = platform_of(tag.platform)
        if key is None:
            continue
        python = _python(tag.interpreter)
        if python is None:
            continue
        if tag.abi == "abi3":
            abi3 = python
        elif tag.abi.endswith("t"):  # free-threaded: planned like the regular build of that Python
            continue
        else:
            pythons.add(python)
        platforms.add(key)
    if not platforms or not (pythons or abi3):
        return None
    return Wheel(file, str(canonicalize_name(name)), version, frozenset(platforms), frozenset(pythons), abi3)


@record
class CudaRequirement:
    """What a torch wheel's requirements say about CUDA."""

    nvidia: bool  # it requires NVIDIA's CUDA wheels at all (else: a CPU or ROCm build)
    cuda: str | None  # "12.8" when a requirement pins it; None when only the major is known
    major: str | None  # "12"
    evidence: str | None  # the requirement it was read from


def requirements(metadata: str) -> tuple[Requirement, ...]:
    """The Requires-Dist entries of a METADATA file that parse."""
    headers = HeaderParser().parsestr(metadata)
    found = []
    for text in headers.get_all("Requires-Dist") or ():
        try:
            found.append(Requirement(str(text)))
        except InvalidRequirement:
            continue
    return tuple(found)


def _pinned(requirement: Requirement) -> str | None:
    """ "12.8" from ==12.8.90, ==12.8.* or ~=12.8.57."""
    for spec in requirement.specifier:
        if spec.operator in ("==", "===", "~=") and re.match(r"^\d+\.\d+", spec.version):
            major, minor = spec.version.split(".")[:2]
            return f"{major}.{minor.rstrip('*')}" if minor.rstrip("*").isdigit() else None
    return None


def cuda_requirement(metadata: str) -> CudaRequirement:
    """The CUDA version a torch wheel was built with, from its nvidia-* requirements."""
    found = requirements(metadata)
    runtime = None
    major = None
    evidence = None
    for requirement in found:
        name = str(canonicalize_name(requirement.name))
        match = _RUNTIME.match(name)
        if match or name == _TOOLKIT:
            version = _pinned(requirement)
            if version is not None and runtime is None:
                runtime, evidence = version, str(requirement)
                major = version.split(".")[0]
            if match and match.group(3) and major is None:
                major, evidence = match.group(3), str(requirement)
            continue
        other = _ANY_NVIDIA.match(name)
        if other and major is None:
            major, evidence = other.group(1), str(requirement)
    nvidia = any(str(canonicalize_name(r.name)).startswith(("nvidia-", _TOOLKIT)) for r in found)
    return CudaRequirement(nvidia=nvidia, cuda=runtime, major=major, evidence=evidence)


def torch_pin(metadata: str) -> str | None:
    """The torch release a torchvision/torchaudio wheel requires ("2.16.0" from torch==2.16.0)."""
    for requirement in requirements(metadata):
        if canonicalize_name(requirement.name) != "torch":
            continue
        for spec in requirement.specifier:
            if spec.operator in ("==", "===") and not spec.version.endswith("*"):
                try:
                    return Version(spec.version).public
                except ValueError:
                    return None
    return None
