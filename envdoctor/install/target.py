"""The machine a plan is for: what `install`'s options or `check`'s facts say about it."""

from __future__ import annotations

from envdoctor import knowledge
from envdoctor.install.commands import MirrorChoice
from envdoctor.install.sources import Sources
from envdoctor.knowledge.archs import Capability, sm
from envdoctor.util.records import record


@record
class InstallTarget:
    os: str  # linux, windows, macos
    machine: str = "x86_64"
    python: str | None = None  # "3.11"
    driver_version: str | None = None  # None: no usable NVIDIA driver
    gpu_capabilities: tuple[Capability, ...] = ()
    torch: str | None = None  # a wanted release ("2.5.1" or "2.5"), else the newest that fits
    want_cuda: bool | None = None  # None: CUDA when an NVIDIA GPU and driver are there
    python_launcher: tuple[str, ...] = ("pip3",)  # ("/env/bin/python", "-m", "pip") for check
    variant: str | None = None  # an explicit build ("cpu", "cu121", "rocm6.2"); None: choose
    manager: str = "pip"
    driver_cuda: str | None = None  # the driver's own CUDA version (NVML), when known
    gpu_names: tuple[str, ...] = ()  # labels for gpu_capabilities, same order
    mirror: MirrorChoice | None = None
    installed_torch: str | None = None  # the torch already in the environment (check's fixes)
    native_only: bool = False  # skip builds the driver runs only through minor-version compatibility
    sources: Sources | None = None  # where the manager will look; None: as the official command says
    notes: tuple[str, ...] = ()  # what the request left unplaced (an unknown --gpu), said first
    # AMD and Intel GPUs (the gpu_vendors probe, or --gpu gfx1100 / --gpu xpu): with no NVIDIA GPU
    # asking for CUDA, the plan is a rocmX.Y build that serves these gfx targets, or the xpu build.
    gfx_targets: tuple[str, ...] = ()
    want_xpu: bool = False
    amd_target_unknown: bool = False  # an AMD GPU given by a name envdoctor has no gfx target for
    # Whether variant/want_cuda are the user's words (--cuda): only then does the plan say "as
    # asked"; check's fixes set them from the facts, and nobody asked.
    asked: bool = True

    @property
    def platform(self) -> str:
        return knowledge.platform_key(self.os, self.machine)

    def gpu_label(self, index: int) -> str:
        capability = sm(self.gpu_capabilities[index])
        if index < len(self.gpu_names) and self.gpu_names[index] != capability:
            return f"{self.gpu_names[index]} ({capability})"
        return capability
