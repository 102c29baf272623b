"""`envdoctor install` options -> a checked request. Contradictions among the given values are usage
errors (one line naming what is valid, exit 2); what merely does not fit the machine is the planner's
business (exit 1)."""

from __future__ import annotations

import re

from envdoctor import knowledge
from envdoctor.knowledge import Release, gpu_vendors, mirrors, parse_driver, parse_version
from envdoctor.knowledge.archs import Capability
from envdoctor.knowledge.gpus import GpuSpec, parse_gpu
from envdoctor.util.lazy_re import Lazy
from envdoctor.util.records import record

OS_NAMES = {
    "linux": "linux",
    "windows": "windows",
    "win": "windows",
    "win32": "windows",
    "macos": "macos",
    "mac": "macos",
    "osx": "macos",
    "darwin": "macos",
}
ARCH_NAMES = ("x86_64", "amd64", "aarch64", "arm64")
_PYTHON_VERSION = Lazy(r"^3\.\d{1,2}(\.\d+)?$|^2\.\d+(\.\d+)?$")
_CUDA_VERSION = Lazy(r"^(\d{1,2})\.(\d)(\.\d+)?$")
_CU_VARIANT = Lazy(r"^cu\d{3,4}$")
_ROCM_VARIANT = Lazy(r"^rocm\d+\.\d+(\.\d+)?$")


class RequestError(Exception):
    """A bad option value or a contradiction among given values: one line for the user."""


@record
class Given:
    """The raw option values; None means "not given"."""

    torch: str | None = None
    cuda: str | None = None
    os: str | None = None
    arch: str | None = None
    python: str | None = None
    driver: str | None = None
    gpus: tuple[str, ...] = ()
    manager: str | None = None  # None: pip
    mirror: str | None = None
    offline: bool = False  # ask nothing of the network (no reachability checks)


def looks_like_python_version(text: str) -> bool:
    return bool(_PYTHON_VERSION.match(text.strip()))


def parse_os(text: str) -> str:
    found = OS_NAMES.get(text.strip().lower())
    if found is None:
        raise RequestError(f"--os {text}: expected linux, windows or macos")
    return found


def parse_arch(text: str) -> str:
    value = text.strip().lower()
    if value not in ARCH_NAMES:
        raise RequestError(f"--arch {text}: expected one of {', '.join(ARCH_NAMES)}")
    return value


def parse_variant(text: str) -> str | None:
    """None for "auto"; "cpu", "cu124" (from 12.4 or cu124) or "rocm6.2" otherwise."""
    value = text.strip().lower()
    if value in ("auto", ""):
        return None
    if value in ("cpu", "xpu"):
        return value
    match = _CUDA_VERSION.match(value)
    if match:
        return f"cu{match.group(1)}{match.group(2)}"
    if _CU_VARIANT.match(value) or _ROCM_VARIANT.match(value):
        return value
    raise RequestError(
        f"--cuda {text}: expected auto, cpu, a CUDA version such as 12.4, a variant such as cu124, rocmX.Y "
        "or xpu"
    )


def parse_release(text: str) -> Release:
    """A known release, or a best-effort stand-in for one newer than the data (the plan says it is
    unverified); RequestError otherwise."""
    if parse_version(text.split("+", 1)[0]) is None:
        raise RequestError(f"--torch {text}: expected a version such as 2.5.1 or 2.5")
    found = knowledge.resolve_release(text) or knowledge.unlisted_release(text)
    if found is None:
        known = knowledge.known_releases()
        raise RequestError(
            f"--torch {text}: not in envdoctor's data yet (data as of {knowledge.releases_as_of()}); "
            f"known releases: {known[0].torch} to {known[-1].torch} "
            "(leave --torch out for the newest that fits)"
        )
    return found


def parse_python(text: str) -> str:
    """ "3.11" from "3.11" or "3.11.4"; RequestError when no known release has wheels for it."""
    minor = ".".join(text.strip().split(".")[:2])
    known = knowledge.python_versions()
    if minor not in known:
        raise RequestError(
            f"--python {text}: no torch release in envdoctor's data has wheels for Python {minor}; "
            f"expected {known[0]} to {known[-1]} (or the path of an interpreter)"
        )
    return minor


def parse_driver_option(text: str) -> str:
    if parse_driver(text.strip()) is None or not text.strip()[:1].isdigit():
        raise RequestError(f"--driver {text}: expected an NVIDIA driver version such as 535.104.05")
    return text.strip()


@record
class GpuNote:
    """A --gpu value envdoctor cannot place: an NVIDIA GPU of unknown architecture, or another
    vendor's device, which a CUDA plan leaves out. Either way the plan says so."""

    label: str
    note: str
    nvidia: bool


@record
class VendorGpuOption:
    """--gpu gfx1100 (an AMD GPU by its gfx target) or --gpu xpu (an Intel GPU torch.xpu serves), or
    their marketing names (--gpu "RX 7900 XTX", --gpu "Arc A770"): planned as a ROCm or XPU build when
    no NVIDIA GPU asks for CUDA. An AMD name envdoctor has no gfx target for is planned with the
    target unknown (`amd`, no `gfx`), with a note."""

    label: str
    gfx: str | None = None  # None: the xpu keyword or an Intel name, or an AMD GPU of unknown target
    amd: bool = False  # an AMD GPU whose gfx target is unknown (gfx is None)
    note: str | None = None

    @property
    def xpu(self) -> bool:
        return self.gfx is None and not self.amd

    @property
    def shown(self) -> str:
        """The value as given, with what it was read as when that is not the value itself."""
        read_as = self.gfx or ("gfx target unknown" if self.amd else "xpu")
        return self.label if self.label.lower() == read_as else f"{self.label} ({read_as})"


_PCI_ID = Lazy(r"^(?:0x)?([0-9a-fA-F]{4}):(?:0x)?([0-9a-fA-F]{4})$")
_PCI_VENDORS = {"10de": "NVIDIA", "1002": "AMD", "1022": "AMD", "8086": "Intel"}
_OTHER_VENDOR = Lazy(r"\b(amd|ati|radeon|instinct|intel|arc|iris|uhd|apple)\b", re.IGNORECASE)
_NVIDIA_WORDS = Lazy(r"\b(nvidia|geforce|rtx|gtx|quadro|tesla|titan)\b", re.IGNORECASE)
_AMD_WORDS = Lazy(r"\b(amd|ati|radeon|instinct)\b|\brx\s?\d{3,4}\b", re.IGNORECASE)


def _vendor_name(value: str) -> VendorGpuOption | None:
    """An AMD or Intel GPU's marketing name: its gfx target (rocm.json) or the xpu build (xpu.json)."""
    gfx = gpu_vendors.gfx_for_name(value)
    if gfx is not None:
        return VendorGpuOption(value, gfx)
    if gpu_vendors.xpu_family_for_name(value) is not None:
        return VendorGpuOption(value)
    return None


def parse_gpu_option(text: str) -> GpuSpec | GpuNote | VendorGpuOption:
    """A known model or a compute capability; else a note: an unknown NVIDIA name (a bare
    "GeForce", a Kepler GeForce) or PCI id is planned with its architecture unknown, another
    vendor's device is left out."""
    value = text.strip()
    if not value:
        raise RequestError("--gpu: expected a GPU name such as 'RTX 3090', or sm_86")
    if gpu_vendors.is_gfx(value.lower()):
        return VendorGpuOption(value, value.lower())
    if value.lower() == "xpu":
        return VendorGpuOption(value)
    nvidia_words = _NVIDIA_WORDS.search(value) is not None
    other_vendor = not nvidia_words and (_OTHER_VENDOR.search(value) or _AMD_WORDS.search(value))
    # A name that says AMD or Intel is looked up there first ("Arc Pro A40" is no NVIDIA A40); a bare
    # model ("7900 XTX", "A770") only when no NVIDIA model has that name.
    named = _vendor_name(value) if other_vendor else None
    if named is not None:
        return named
    found = parse_gpu(value)
    if found is not None:
        return found
    named = _vendor_name(value) if not nvidia_words else None
    if named is not None:
        return named
    pci = _PCI_ID.match(value)
    if pci is not None:
        vendor = _PCI_VENDORS.get(pci.group(1).lower(), f"vendor {pci.group(1).lower()}")
        if vendor == "NVIDIA":
            return GpuNote(
                value,
                f"--gpu {value}: an NVIDIA PCI id; envdoctor has no device-id table, so the GPU's "
                "architecture is unknown (give its model or compute capability, e.g. sm_86)",
                True,
            )
        return GpuNote(
            value, f"--gpu {value}: a PCI id of {vendor}, not NVIDIA: left out of a CUDA plan", False
        )
    if other_vendor and _AMD_WORDS.search(value):
        return VendorGpuOption(
            value,
            amd=True,
            note=f"--gpu {value}: an AMD GPU envdoctor has no gfx target for, so the plan is the newest "
            "ROCm build, unchecked against it (give its gfx target instead, e.g. --gpu gfx1100; "
            "rocminfo lists it)",
        )
    if other_vendor:
        return GpuNote(
            value,
            f"--gpu {value}: not an NVIDIA GPU, left out of the plan (CUDA builds serve NVIDIA GPUs; "
            "for AMD GPUs on Linux: --cuda rocmX.Y)",
            False,
        )
    return GpuNote(
        value,
        f"--gpu {value}: not a model envdoctor knows, so its architecture is unknown (give its compute "
        "capability, e.g. --gpu sm_86 or 8.6)",
        True,
    )


def check_mirror(text: str) -> str:
    value = text.strip()
    if "/" in value or "." in value:
        return value
    names = mirrors.pytorch_wheel_mirror_names()
    if value.lower() not in names:
        raise RequestError(f"--mirror {text}: expected one of {', '.join(names)}, or an index URL")
    return value.lower()


def _span(values: tuple[str, ...]) -> str:
    return f"{values[0]}-{values[-1]}" if len(values) > 1 else values[0]


def check_combination(
    release: Release | None,
    variant: str | None,
    platform: str,
    python: str | None,
    os_name: str,
    cuda_text: str | None = None,
    platform_given: bool = True,
) -> None:
    """Given values that can never go together: torch x platform x Python x variant."""
    shown = cuda_text if cuda_text is None or cuda_text.lower() == variant else f"{cuda_text} ({variant})"
    if os_name == "macos" and variant is not None and variant != "cpu":
        raise RequestError(f"--cuda {shown}: macOS has no CUDA or ROCm builds; expected cpu or auto")
    if variant is not None and variant.startswith("rocm") and platform != "linux-x86_64":
        raise RequestError(f"--cuda {shown}: ROCm builds exist for Linux x86_64 only")
    if variant == "xpu":
        _check_xpu(release, platform, shown)
        variant = None  # the release and Python checks below, without the variant lists
    if release is not None:
        builds = release.builds(platform)
        if builds is None:
            where = ", ".join(name for name, _ in release.platforms)
            raise RequestError(f"torch {release.torch} has no wheels for {platform}; it has them for {where}")
        if variant is not None and variant not in builds.variants:
            raise RequestError(
                f"--cuda {shown}: torch {release.torch} has no {variant} build for {platform}; its "
                f"builds there: {', '.join(builds.variants)}"
            )
        pythons = release.python_for(platform)
        if python is not None and python not in pythons:
            raise RequestError(
                f"--python {python}: torch {release.torch} has wheels for Python {_span(pythons)} "
                f"on {platform}"
            )
        return
    if variant is not None:
        offered = [r for r in knowledge.releases() if (b := r.builds(platform)) and variant in b.variants]
        if not offered:
            known = sorted(
                {
                    v
                    for r in knowledge.releases()
                    if (b := r.builds(platform))
                    for v in b.variants
                    if v != "cpu"
                }
            )
            raise RequestError(
                f"--cuda {shown}: no torch release in envdoctor's data has a {variant} build for "
                f"{platform}; known: cpu, {', '.join(known)}"
            )
        if python is not None and not any(python in r.python_for(platform) for r in offered):
            raise RequestError(
                f"--python {python} --cuda {shown}: no release with a {variant} build has wheels for "
                f"Python {python}; releases {offered[0].torch}-{offered[-1].torch} have it"
            )
    if platform_given and not any(r.builds(platform) for r in knowledge.releases()):
        raise RequestError(
            f"no torch release in envdoctor's data has wheels for {platform}; known: "
            f"{', '.join(knowledge.known_platforms())}"
        )


def _check_xpu(release: Release | None, platform: str, shown: str | None) -> None:
    if platform not in gpu_vendors.xpu_platforms():
        where = " and ".join(gpu_vendors.xpu_platforms())
        raise RequestError(f"--cuda {shown}: xpu builds exist for {where} only")
    if release is not None and not gpu_vendors.has_xpu_build(release.torch, platform):
        raise RequestError(
            f"--cuda {shown}: torch {release.torch} has no xpu build; they start with torch "
            f"{gpu_vendors.xpu_first_release()}"
        )


def gpu_capabilities(specs: tuple[GpuSpec, ...]) -> tuple[Capability, ...]:
    return tuple(s.capability for s in specs)
