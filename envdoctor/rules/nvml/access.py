"""How the process reaches the driver: a container started without the GPU, a driver installed inside
a container image, WSL 1 (no GPU at all) and a Linux driver installed inside WSL 2."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.knowledge import gpu_access as table
from envdoctor.model.findings import Severity
from envdoctor.probes.gpu_access import GpuAccessFacts
from envdoctor.probes.nvml import NvmlFacts, NvmlStatus
from envdoctor.probes.system import SystemFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule


def cuda_torch(ctx: RuleContext) -> TorchFacts | None:
    """The installed torch when it is an imported CUDA build."""
    torch = ctx.get(TorchFacts)
    return torch if torch is not None and torch.imported and torch.cuda else None


@rule(
    code="ED121",
    name="container-without-gpu-access",
    severity=Severity.WARNING,
    summary="a container started without the GPU: no NVIDIA device files and no driver library",
    needs=(GpuAccessFacts, NvmlFacts),
    doc=RuleDoc(
        what="Whether this process runs in a container (/.dockerenv, /run/.containerenv, "
        "$KUBERNETES_SERVICE_HOST, cgroup or mount markers) that has no /dev/nvidia* device "
        "files and no NVML library, while a CUDA build of torch is installed (NVIDIA_VISIBLE_DEVICES "
        "tells whether the image asked for GPUs).",
        why="Inside a container 'no NVIDIA GPU' often means the GPU was not passed in: the "
        "host's driver and devices reach a container only through the NVIDIA Container Toolkit "
        "(docker --gpus, podman CDI devices, the Kubernetes nvidia.com/gpu resource). A warning, as a "
        "CI container may mean to run a CUDA build on the CPU; where the host's GPU shows on the PCI "
        "bus, ED103 says it as an error with the same fixes.",
        fix="Start the container with the GPU passed in (docker run --gpus all, podman --device "
        "nvidia.com/gpu=all, or a nvidia.com/gpu limit in the pod spec) on a host with the NVIDIA "
        "Container Toolkit.",
        example="docker run -it IMAGE on a GPU server, then torch.cuda.is_available() is False "
        "and nvidia-smi is 'command not found'.",
    ),
)
def container_without_gpu_access(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    nvml = ctx.need(NvmlFacts)
    if access.container is None or access.has_nvidia_devices or access.wsl:
        return
    if nvml.status not in (NvmlStatus.LIBRARY_NOT_FOUND, NvmlStatus.PYNVML_MISSING):
        return
    if nvml.pci_nvidia_devices:
        return  # the host's GPU shows on the PCI bus: ED103 says it, as an error, with these fixes
    torch = cuda_torch(ctx)
    if torch is None:
        return  # a CPU build in a container (CUDA base images ask for GPUs by default) is fine
    requested = access.nvidia_visible_devices
    asked = not table.visible_devices_none(requested)
    evidence = [*access.container_evidence, "no /dev/nvidia* device files", f"nvml.status = {nvml.status}"]
    if asked:
        evidence.append(f"NVIDIA_VISIBLE_DEVICES={requested!r}")
        why = (
            f"The image asks for GPUs (NVIDIA_VISIBLE_DEVICES={requested!r}), but no NVIDIA runtime "
            "passed them in: the container was started without --gpus or the host lacks the toolkit."
        )
    elif requested is None:
        evidence.append("NVIDIA_VISIBLE_DEVICES is unset")
        why = "NVIDIA_VISIBLE_DEVICES is unset: nothing asked the container runtime for a GPU."
    else:
        evidence.append(f"NVIDIA_VISIBLE_DEVICES={requested!r}")
        why = f"NVIDIA_VISIBLE_DEVICES={requested!r} asks the container runtime for no GPU."
    evidence.append(f"torch.version.cuda = {torch.cuda}")
    yield Hit(
        title=f"this {access.container} container has no access to an NVIDIA GPU",
        detail=f"torch {torch.version} is a CUDA {torch.cuda} build, but this {access.container} "
        "container has no /dev/nvidia* device files and no NVIDIA driver library, so CUDA cannot "
        f"run here and torch falls back to the CPU. {why} The driver belongs on the host, "
        "not in the image.",
        evidence=tuple(evidence),
        fixes=table.gpu_access_fixes(access.container),
    )


@rule(
    code="ED122",
    name="driver-inside-container",
    severity=Severity.ERROR,
    summary="NVML in a container reports a driver/library version mismatch: the image carries its own driver",
    needs=(NvmlFacts,),
    doc=RuleDoc(
        what="NVML's 'Driver/library version mismatch' inside a container, with the host kernel "
        "module's version from /proc/driver/nvidia/version where it can be read.",
        why="The container runtime mounts the host's driver libraries in; a driver installed in "
        "the image (apt nvidia-driver-*, nvidia-utils-*, a .run installer) shadows them with "
        "another version, and a reboot of the host does not help.",
        fix="Remove the driver's user-space libraries from the image and rebuild it; update the "
        "host's driver if a newer one is needed.",
        example="An image with driver 565 user-space libraries on a host running 535: nvidia-smi "
        "in the container says 'Failed to initialize NVML: Driver/library version mismatch'.",
    ),
)
def driver_inside_container(ctx: RuleContext) -> Iterator[Hit]:
    nvml = ctx.need(NvmlFacts)
    # The container from the GPU-access facts, else from the system line (older snapshots).
    access = ctx.get(GpuAccessFacts) or GpuAccessFacts()
    system = ctx.get(SystemFacts)
    container = access.container or (system.container if system is not None else None)
    if container is None or nvml.status != NvmlStatus.VERSION_MISMATCH:
        return
    evidence = [
        *(access.container_evidence or (f"system.container = {container}",)),
        "nvml.status = version_mismatch",
    ]
    host_module = ""
    if access.proc_driver:
        evidence.append(f"/proc/driver/nvidia/version: {access.proc_driver}")
        host_module = f" The host's kernel module says: {access.proc_driver}."
    yield Hit(
        title=f"the {container} image carries its own NVIDIA driver, which does not match the host's",
        detail=f"NVML said: {nvml.error}. In a container the kernel module is the host's; the "
        f"driver libraries the image installed are another version.{host_module} Rebooting does "
        "not change the image: remove the driver from it.",
        evidence=tuple(evidence),
        fixes=(table.driver_in_image_fix(),),
    )


@rule(
    code="ED123",
    name="wsl1-has-no-gpu",
    severity=Severity.WARNING,
    summary="WSL 1 has no GPU support; CUDA needs the distribution converted to WSL 2",
    needs=(GpuAccessFacts,),
    doc=RuleDoc(
        what="The WSL version from the kernel release (WSL 1: '4.4.0-19041-Microsoft'; WSL 2: "
        "'...-microsoft-standard-WSL2').",
        why="Only WSL 2 passes the Windows GPU driver into Linux; under WSL 1 no CUDA program can "
        "see a GPU, whatever is installed.",
        fix="Convert the distribution with `wsl --set-version <distro> 2` in Windows PowerShell.",
        example="uname -r prints 4.4.0-19041-Microsoft and torch.cuda.is_available() is False.",
    ),
)
def wsl1_has_no_gpu(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    if access.wsl != 1:
        return
    torch = ctx.get(TorchFacts)
    if torch is not None and torch.imported and not torch.cuda:
        return  # a CPU build on WSL 1 asks nothing of a GPU
    yield Hit(
        title="this is WSL 1, which cannot use the GPU",
        detail="WSL 1 translates Linux calls and has no GPU paravirtualisation: no CUDA program "
        "sees the GPU here. WSL 2 runs the Windows NVIDIA driver through /usr/lib/wsl/lib.",
        evidence=(f"kernel release {ctx.platform.release}",),
        fixes=(table.wsl1_fix(),),
    )


@rule(
    code="ED124",
    name="linux-driver-inside-wsl",
    severity=Severity.ERROR,
    summary="a Linux NVIDIA driver or libcuda is installed inside WSL 2 and shadows the Windows driver",
    needs=(GpuAccessFacts,),
    doc=RuleDoc(
        what="Under WSL 2, libcuda.so / libnvidia-ml.so files in the distribution's library "
        "folders that are not links into /usr/lib/wsl/lib.",
        why="WSL 2 uses the Windows driver, whose libraries Windows mounts at /usr/lib/wsl/lib; "
        "a Linux driver installed inside WSL has no kernel module to talk to and is found first, "
        "so CUDA and NVML fail.",
        fix="Remove the Linux driver packages from the distribution, restart WSL, and update the "
        "driver on Windows when a newer one is needed.",
        example="sudo apt install nvidia-driver-535 inside WSL 2, then nvidia-smi says it "
        "couldn't communicate with the NVIDIA driver.",
    ),
)
def linux_driver_inside_wsl(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    if access.wsl != 2 or not access.linux_driver_in_wsl:
        return
    found = ", ".join(access.linux_driver_in_wsl)
    windows = (
        " The Windows driver's libcuda.so.1 is in /usr/lib/wsl/lib."
        if access.wsl_libcuda
        else " /usr/lib/wsl/lib has no libcuda.so.1 either: update the Windows driver as well."
    )
    yield Hit(
        title="a Linux NVIDIA driver is installed inside WSL 2",
        detail=f"{found} belong to a Linux driver. Under WSL 2 the GPU is served by the Windows "
        f"driver through /usr/lib/wsl/lib; these files are found first and break CUDA.{windows}",
        evidence=tuple(f"{path} (not a link into /usr/lib/wsl/lib)" for path in access.linux_driver_in_wsl),
        fixes=(table.linux_driver_in_wsl_fix(), table.windows_driver_fix()),
    )
