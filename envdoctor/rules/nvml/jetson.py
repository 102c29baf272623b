"""Jetson (Tegra) boards: torch needs NVIDIA's build for the board's JetPack release.

PyTorch's own aarch64 wheels (PyPI's, download.pytorch.org's) are CPU builds or built for SBSA
servers (Grace): none runs on a Jetson's integrated GPU. NVIDIA builds torch per JetPack release,
against that release's CUDA, cuDNN and Python; the release comes from /etc/nv_tegra_release.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from envdoctor.install.commands import Command, command_text
from envdoctor.install.packages import PackageRequest, plan_packages
from envdoctor.knowledge import jetson
from envdoctor.knowledge.jetson import JetsonWheel
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.nvml import DriverHostFacts, NvmlFacts
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import install_target

# NVIDIA's page on PyTorch for Jetson; its forum thread, which lists every wheel, is jetson.json's source.
PYTORCH_FOR_JETSON = (
    "https://docs.nvidia.com/deeplearning/frameworks/install-pytorch-jetson-platform/index.html"
)
# A CUDA library of one version the import could not open: the wheel was built against it.
_MISSING_LIBRARY = re.compile(
    r"lib(cudart|cublas|cublasLt|cufft|curand|cusparse|cusolver|nvrtc|nvToolsExt|cudnn)\.so\.(\d+(?:\.\d+)?)"
    r"[^:\n]*: cannot open shared object file"
)


def jetson_host(ctx: RuleContext) -> DriverHostFacts | None:
    nvml = ctx.get(NvmlFacts)
    host = nvml.host if nvml is not None else None
    return host if host is not None and host.jetson else None


def _release_words(host: DriverHostFacts) -> str:
    release = host.tegra_release
    jetpack = jetson.jetpack_of(release)
    if release and jetpack:
        return f"JetPack {jetpack} (L4T R{release})"
    if release:
        return f"L4T R{release}"
    return "this board's JetPack release (`cat /etc/nv_tegra_release` names it)"


def _launcher(ctx: RuleContext) -> tuple[str, ...]:
    return (ctx.interpreter.path, "-m", "pip")


def jetpack_fix(ctx: RuleContext, host: DriverHostFacts) -> Fix:
    """Uninstall the torch that cannot use the GPU, then NVIDIA's build for this JetPack release."""
    wheel = jetson.wheel_for(host.tegra_release)
    where = _release_words(host)
    if wheel is None:
        return Fix(
            summary=f"Install NVIDIA's PyTorch build for {where} (envdoctor does not know its wheel yet): "
            "NVIDIA lists one per JetPack release",
            link=PYTORCH_FOR_JETSON,
        )
    # Not an install: the torch that cannot use the GPU goes first, so pip does not keep a CPU build
    # of the same version number.
    uninstall = Command((*_launcher(ctx), "uninstall", "-y", "torch", "torchvision", "torchaudio"), "pip")
    installs, unreachable = _install_commands(ctx, wheel)
    # No uninstall without the install that replaces it.
    commands = [command_text(uninstall, ctx.platform.os), *installs] if installs else []
    python = ctx.get(PythonFacts)
    note = ""
    if python is not None and python.minor != wheel.python:
        note = (
            f" The build is for Python {wheel.python}, JetPack's own python3; this environment runs Python "
            f"{python.minor}: make it from /usr/bin/python3 (python3 -m venv --system-site-packages) first."
        )
    what = f"torch {wheel.torch}" if wheel.torch else "torch"
    summary = f"Install NVIDIA's {what} for {where}, built for CUDA {wheel.cuda} and Python {wheel.python}"
    if wheel.is_index:
        summary += " from the Jetson AI Lab index"
    else:
        summary += "; torchvision must come from the same place or be built against it"
    summary += "." + note
    if unreachable is not None:
        summary += f" No command for it works here: {unreachable}."
    if not wheel.provenance.verified:
        summary += " envdoctor could not confirm this address from NVIDIA's own pages: check it there first."
    return Fix(summary=summary, commands=tuple(commands), link=PYTORCH_FOR_JETSON)


def _install_commands(ctx: RuleContext, wheel: JetsonWheel) -> tuple[list[str], str | None]:
    """NVIDIA's wheel (or its index) for this JetPack, as the planner routes it here; no commands,
    and why, where nothing reachable holds it."""
    target = install_target(ctx)
    os_name = ctx.platform.os
    if wheel.is_index:
        found = plan_packages(target, PackageRequest(("torch", "torchvision"), index=wheel.url))
    elif wheel.file and not wheel.url.endswith(wheel.file):
        # The download's name is not the wheel's: pip needs the wheel's file name.
        fetched = plan_packages(target, PackageRequest((wheel.url,)))
        if not fetched.possible:
            return [], fetched.reason
        download = Command(("wget", wheel.url, "-O", wheel.file), "pip")
        found = plan_packages(target, PackageRequest((wheel.file,)))
        return [command_text(download, os_name), *(command_text(c, os_name) for c in found.commands)], None
    else:
        found = plan_packages(target, PackageRequest((wheel.url,)))
    return [command_text(c, os_name) for c in found.commands], found.reason


@rule(
    code="ED136",
    name="jetson-torch-without-jetpack-cuda",
    severity=Severity.ERROR,
    summary="a Jetson board with a torch that has no CUDA for it (not NVIDIA's JetPack build)",
    needs=(NvmlFacts, TorchFacts),
    doc=RuleDoc(
        what="On a Jetson (/etc/nv_tegra_release, /proc/device-tree/model): whether the installed torch "
        "is a CPU build, or a PyTorch-index CUDA build that cannot reach the integrated GPU.",
        why="PyPI's aarch64 torch is a CPU build, and download.pytorch.org's aarch64 CUDA builds are "
        "for SBSA servers: pip on a Jetson installs one of them (often pulled in by another package) "
        "and torch.cuda.is_available() is False. Only NVIDIA's wheels for the board's JetPack release "
        "use its GPU.",
        fix="Uninstall torch and install NVIDIA's wheel (or its Jetson AI Lab index) for the JetPack "
        "release the board runs; the finding names it from the L4T release.",
        example="Jetson Xavier NX on JetPack 5.1.2: `pip install -U ultralytics` pulled a CPU torch from "
        "PyPI; NVIDIA's torch-2.1.0a0+41361538.nv23.06 wheel brings CUDA back.",
    ),
)
def jetson_torch_without_jetpack_cuda(ctx: RuleContext) -> Iterator[Hit]:
    host = jetson_host(ctx)
    torch = ctx.need(TorchFacts)
    if host is None or not torch.imported:
        return
    label = torch.local_label or ""
    pytorch_cuda_build = bool(torch.cuda) and label.startswith("cu") and torch.cuda_available is False
    if torch.cuda and not pytorch_cuda_build:
        return  # a CUDA build that is not PyTorch's own: NVIDIA's JetPack wheel (or a source build)
    where = _release_words(host)
    if torch.cuda is None:
        built = (
            f"torch {torch.version} is a CPU build (PyPI's and the PyTorch index's aarch64 torch has no "
            "CUDA for Jetson)"
        )
    else:
        built = (
            f"torch {torch.version} is PyTorch's aarch64 CUDA {torch.cuda} build for SBSA servers, which "
            "cannot use a Jetson's integrated GPU"
        )
    evidence = [f"Jetson: {host.tegra_model or where}", f"torch {torch.version} (CUDA {torch.cuda or '-'})"]
    if host.tegra_release:
        evidence.append(f"L4T R{host.tegra_release}")
    yield Hit(
        title=f"torch on this Jetson is not NVIDIA's build for {where}, so it has no CUDA",
        detail=f"{built}. On a Jetson, CUDA comes only from NVIDIA's wheels built for the board's JetPack "
        f"release ({where}).",
        evidence=tuple(evidence),
        fixes=(jetpack_fix(ctx, host),),
    )


@rule(
    code="ED137",
    name="jetson-wheel-for-other-jetpack",
    severity=Severity.ERROR,
    summary="torch on a Jetson was built for another JetPack release: its CUDA libraries are missing",
    needs=(NvmlFacts, TorchFacts),
    doc=RuleDoc(
        what="On a Jetson: an import error naming a CUDA library of one version (libcudart.so.10.0, "
        "libcudnn.so.8) against the CUDA and cuDNN of the board's JetPack release.",
        why="NVIDIA's Jetson wheels link the JetPack release's own CUDA and cuDNN, not copies of them: a "
        "wheel built for another JetPack release looks for libraries this one does not have, and "
        "`import torch` fails.",
        fix="Uninstall torch and install the wheel built for the board's JetPack release.",
        example="JetPack 4.4 (CUDA 10.2) with install-pytorch.sh's PyTorch 1.1.0 wheel built for "
        "CUDA 10.0: 'ImportError: libcudart.so.10.0: cannot open shared object file'.",
    ),
)
def jetson_wheel_for_other_jetpack(ctx: RuleContext) -> Iterator[Hit]:
    host = jetson_host(ctx)
    torch = ctx.need(TorchFacts)
    if host is None or torch.import_error is None:
        return
    error = torch.import_error
    match = _MISSING_LIBRARY.search(f"{error.message}\n{error.traceback or ''}")
    if match is None:
        return
    library, wanted = match.group(1), match.group(2)
    wheel = jetson.wheel_for(host.tegra_release)
    if wheel is not None:
        have = str(wheel.cudnn) if library == "cudnn" else wheel.cuda
        if have is None or have.split(".")[: len(wanted.split("."))] == wanted.split("."):
            return  # this JetPack does have that library: it is missing for another reason
    what = "cuDNN" if library == "cudnn" else "CUDA"
    where = _release_words(host)
    has = ""
    if wheel is not None:
        has = f"; {where} ships {what} {wheel.cudnn if library == 'cudnn' else wheel.cuda}"
    yield Hit(
        title=f"torch was built for another JetPack release: it needs {what} {wanted}, missing here",
        detail=f"`import torch` fails because lib{library}.so.{wanted} is not on this Jetson: the installed "
        f"torch was built against {what} {wanted}{has}. NVIDIA's Jetson wheels use the JetPack "
        "release's own CUDA libraries, so a wheel for another release cannot load.",
        evidence=(f"import error: {match.group(0)}", f"Jetson: {where}"),
        fixes=(jetpack_fix(ctx, host),),
    )
