"""What a container's runtime gave the process, and what the host behind it lacks: an image whose
CUDA needs forward compatibility the GPU lacks (error 804), a cuda-compat libcuda on the loader
path (error 803), the CUDA driver library not mounted (NVIDIA_DRIVER_CAPABILITIES), no NVIDIA
Container Toolkit for `docker run --gpus`, device access lost after `systemctl daemon-reload` (or
no-cgroups = true), and SELinux keeping a confined container from the device files."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.knowledge import driver_minimum, parse_version
from envdoctor.knowledge import gpu_access as table
from envdoctor.knowledge.signatures import ErrorEvidence, SignatureMatch
from envdoctor.model.findings import Severity
from envdoctor.probes.gpu_access import DeviceNode, GpuAccessFacts
from envdoctor.probes.nvml import NvmlFacts, NvmlStatus
from envdoctor.probes.system import SystemFacts
from envdoctor.probes.toolkit import ToolkitFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import path_removal_fixes
from envdoctor.rules.nvml.access import cuda_torch
from envdoctor.rules.nvml.device_state import cuda_failed, dac_allows

FORWARD_COMPAT = "cuda-forward-compat-unsupported-hw"
UNSUPPORTED_COMBINATION = "cuda-unsupported-driver-combination"
NVML_UNKNOWN = "nvml-unknown-error-in-container"
NO_GPU_DRIVER = "docker-gpu-driver-missing"


def _said(ctx: RuleContext, ident: str) -> SignatureMatch | None:
    evidence = ctx.get(ErrorEvidence)
    return evidence.get(ident) if evidence is not None else None


def driver_behind(nvml: NvmlFacts | None, torch: TorchFacts) -> bool | None:
    """Whether the driver's CUDA is older than the one torch was built with; None: unknown."""
    if nvml is None or not nvml.working or nvml.driver_cuda is None or not torch.cuda:
        return None
    driver, built = parse_version(nvml.driver_cuda), parse_version(torch.cuda)
    if driver is None or built is None:
        return None
    return driver.release[:2] < built.release[:2]


def user_shell(ctx: RuleContext) -> str | None:
    """$SHELL's name (the toolkit probe reads it), for commands that edit a variable."""
    toolkit = ctx.get(ToolkitFacts)
    return toolkit.shell if toolkit is not None else None


def _gpu_name(nvml: NvmlFacts | None) -> str | None:
    return next((g.name for g in nvml.gpus if g.name), None) if nvml is not None else None


def _where(access: GpuAccessFacts | None) -> str:
    return f"this {access.container} container" if access is not None and access.container else "here"


@rule(
    code="ED170",
    name="container-cuda-newer-than-host-driver",
    severity=Severity.ERROR,
    summary="the image's CUDA is newer than the host's driver, and this GPU cannot use forward compatibility",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="CUDA's error 804 ('forward compatibility was attempted on non supported HW') in torch's "
        "messages or a pasted error, or a cuda-compat libcuda on the loader path of a GeForce GPU, "
        "against the CUDA version torch was built with and the one the driver runs.",
        why="A CUDA image newer than the host's driver falls back on the cuda-compat libraries, which "
        "run only on data-center GPUs; on a GeForce card CUDA fails to start and torch sees no GPU. "
        "A driver installed inside the container cannot help: the kernel module is the host's.",
        fix="Update the NVIDIA driver on the host to one that runs the image's CUDA, or use an image "
        "(or a torch build) for the CUDA version the host's driver supports.",
        example="A CUDA 12.1 image on an RTX 3090 host with driver 525 (CUDA 12.0): "
        "'Error 804: forward compatibility was attempted on non supported HW'.",
    ),
)
def container_cuda_newer_than_host_driver(ctx: RuleContext) -> Iterator[Hit]:
    torch = cuda_torch(ctx)
    if torch is None:
        return
    nvml = ctx.get(NvmlFacts)
    access = ctx.get(GpuAccessFacts)
    behind = driver_behind(nvml, torch)
    said = _said(ctx, FORWARD_COMPAT)
    compat = access.compat_folders if access is not None else ()
    gpu = _gpu_name(nvml)
    # Without the error, the setup that gives it: a compat libcuda a GeForce cannot use, needed
    # because the driver is older than torch's CUDA.
    if said is None and not (compat and behind and table.consumer_gpu(gpu)):
        return
    if behind is False:
        return  # the driver runs torch's CUDA itself: the compat libcuda is the fault (ED171)
    evidence = [f"torch.version.cuda = {torch.cuda}"]
    driver = ""
    minimum = None
    if nvml is not None and nvml.driver_version:
        evidence.append(f"driver {nvml.driver_version} (CUDA {nvml.driver_cuda})")
        driver = f" The host's driver {nvml.driver_version} runs CUDA {nvml.driver_cuda} natively."
        need = driver_minimum(torch.cuda or "", ctx.platform.os)
        minimum = str(need.toolkit) if need is not None and need.toolkit is not None else None
    if said is not None:
        evidence.append(f"{said.source}: {said.excerpt}")
    evidence += [f"cuda-compat libcuda on the loader path: {c.path} ({c.via})" for c in compat]
    hardware = f" The {gpu} is not a data-center GPU." if gpu and table.consumer_gpu(gpu) else ""
    yield Hit(
        title=f"torch's CUDA {torch.cuda} is newer than the host's driver, and this GPU cannot use "
        "forward compatibility",
        detail=f"torch in {_where(access)} was built for CUDA {torch.cuda}.{driver} CUDA then tries "
        "the cuda-compat (forward compatibility) libraries, which work only on data-center GPUs, "
        f"and fails with error 804.{hardware} The fix is the host's driver or an older image, never "
        "a driver installed inside the container.",
        evidence=tuple(evidence),
        fixes=(table.host_driver_fix(minimum),),
    )


@rule(
    code="ED171",
    name="cuda-compat-libcuda-shadows-driver",
    severity=Severity.ERROR,
    summary="a cuda-compat libcuda on the loader path loads instead of the driver's own (error 803 or 804)",
    needs=(GpuAccessFacts,),
    doc=RuleDoc(
        what="Folders named compat that hold a libcuda.so.1 on LD_LIBRARY_PATH or in /etc/ld.so.conf.d, "
        "against the driver's CUDA version, torch's, the GPU, and CUDA's errors 803 ('unsupported "
        "display driver / cuda driver combination') and 804.",
        why="The cuda-compat libcuda is meant for a data-center GPU whose driver is older than the "
        "CUDA in use; found first anywhere else, it shadows the driver's own libcuda and CUDA "
        "fails to start, although nvidia-smi (which uses NVML) works.",
        fix="Take the compat folder off LD_LIBRARY_PATH, or remove its file from /etc/ld.so.conf.d "
        "and run sudo ldconfig, so the driver's libcuda loads.",
        example="cuda-compat-12.9 on LD_LIBRARY_PATH of a machine with GeForce GPUs: 'system has "
        "unsupported display driver / cuda driver combination'.",
    ),
)
def cuda_compat_libcuda_shadows_driver(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    if not access.compat_folders:
        return
    nvml = ctx.get(NvmlFacts)
    torch = cuda_torch(ctx)
    behind = driver_behind(nvml, torch) if torch is not None else None
    mismatch = _said(ctx, UNSUPPORTED_COMBINATION)
    forward = _said(ctx, FORWARD_COMPAT)
    if mismatch is None and behind is not False:
        return  # a driver older than torch's CUDA is what compat is for (ED170 where it cannot work)
    if mismatch is None and forward is None and torch is not None and not cuda_failed(torch):
        return  # the driver runs torch's CUDA and CUDA works: the compat folder does no harm here
    shown = [f"{c.path} ({c.via}{', ' + c.library if c.library else ''})" for c in access.compat_folders]
    evidence = [f"cuda-compat libcuda on the loader path: {s}" for s in shown]
    said = mismatch or forward
    if said is not None:
        evidence.append(f"{said.source}: {said.excerpt}")
    driver = ""
    if nvml is not None and nvml.driver_version:
        evidence.append(f"driver {nvml.driver_version} (CUDA {nvml.driver_cuda})")
        driver = f" The driver {nvml.driver_version} runs CUDA {nvml.driver_cuda} by itself."
    fixes = [table.compat_fix()]
    in_path = [c.path for c in access.compat_folders if c.via == "LD_LIBRARY_PATH"]
    if in_path:
        entries = list(access.loader_path)
        remove = [i for i, e in enumerate(entries) if e in in_path]
        why = "(a cuda-compat folder)"
        edits = path_removal_fixes("linux", user_shell(ctx), "LD_LIBRARY_PATH", entries, remove, why)
        fixes = [*edits, *fixes]
    conf = sorted({c.via for c in access.compat_folders if c.via.startswith("/")})
    where = f" ({', '.join(conf)})" if conf else ""
    yield Hit(
        title="a cuda-compat libcuda is loaded instead of the driver's own",
        detail=f"{', '.join(shown)} holds the forward-compatibility libcuda, found before the "
        f"driver's{where}.{driver} The compat library is only for data-center GPUs whose driver is "
        "older than the CUDA in use; here it shadows the real driver library and CUDA fails to start.",
        evidence=tuple(evidence),
        fixes=tuple(fixes),
    )


@rule(
    code="ED172",
    name="container-without-cuda-driver-library",
    severity=Severity.ERROR,
    summary="the container has the GPU's device files but no libcuda: the 'compute' capability was not given",
    needs=(GpuAccessFacts, TorchFacts),
    doc=RuleDoc(
        what="Inside a container with NVIDIA device files, whether any folder of the loader holds "
        "libcuda.so.1, with NVIDIA_DRIVER_CAPABILITIES as the container sees it, while torch's "
        "CUDA fails.",
        why="The NVIDIA runtime mounts only the driver libraries of the capabilities asked for: "
        "without 'compute' there is no libcuda and torch says 'Found no NVIDIA driver', although "
        "nvidia-smi (the 'utility' capability) may work.",
        fix="Start the container with NVIDIA_DRIVER_CAPABILITIES=compute,utility (or list compute "
        "and utility beside gpu in the compose file's device capabilities).",
        example="A compose file whose device reservation lists only capabilities: [gpu]: "
        "'RuntimeError: Found no NVIDIA driver on your system'.",
    ),
)
def container_without_cuda_driver_library(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    torch = cuda_torch(ctx)
    if access.container is None or not access.has_nvidia_devices or access.libcuda != ():
        return  # libcuda None: not looked (an older snapshot)
    if torch is None or not cuda_failed(torch):
        return
    asked = access.driver_capabilities
    evidence = [*access.container_evidence, "NVIDIA device files: " + ", ".join(access.device_files)]
    evidence.append("no libcuda.so.1 in the loader's folders")
    if asked is None:
        why = "NVIDIA_DRIVER_CAPABILITIES is unset, so the runtime's default applied."
        evidence.append("NVIDIA_DRIVER_CAPABILITIES is unset")
    else:
        evidence.append(f"NVIDIA_DRIVER_CAPABILITIES={asked!r}")
        why = (
            f"NVIDIA_DRIVER_CAPABILITIES={asked!r} does not ask for 'compute'."
            if not table.capabilities_include_compute(asked)
            else f"NVIDIA_DRIVER_CAPABILITIES={asked!r} asks for it, yet the runtime mounted none."
        )
    yield Hit(
        title=f"this {access.container} container has the GPU but not the CUDA driver library",
        detail="The GPU's device files are here, but no libcuda.so.1 is in any folder the loader "
        f"searches, so torch finds no NVIDIA driver. {why} The NVIDIA runtime mounts the driver's "
        "libraries by capability: 'compute' brings libcuda, 'utility' nvidia-smi and NVML.",
        evidence=tuple(evidence),
        fixes=(table.driver_capabilities_fix(),),
    )


@rule(
    code="ED173",
    name="container-toolkit-missing",
    severity=Severity.INFO,
    summary="Docker is installed next to an NVIDIA GPU, but the NVIDIA Container Toolkit is not",
    needs=(GpuAccessFacts,),
    doc=RuleDoc(
        what="Outside any container and WSL: the docker client, the NVIDIA Container Toolkit's "
        "programs (nvidia-ctk, nvidia-container-runtime, nvidia-container-cli), a working NVIDIA GPU, "
        "and Docker's 'could not select device driver' error where one was captured or pasted.",
        why="`docker run --gpus` needs the toolkit registered with the daemon; without it Docker "
        "refuses with 'could not select device driver \"\" with capabilities: [[gpu]]' and no "
        "container can use the GPU.",
        fix="Install the NVIDIA Container Toolkit, register it with `sudo nvidia-ctk runtime "
        "configure --runtime=docker` and restart Docker.",
        example="docker run --gpus all nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi on a fresh "
        "host: 'could not select device driver \"\" with capabilities: [[gpu]]'.",
    ),
)
def container_toolkit_missing(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    if access.container is not None or access.wsl or access.docker is None or access.toolkit:
        return
    nvml = ctx.get(NvmlFacts)
    said = _said(ctx, NO_GPU_DRIVER)
    if said is None and not (nvml is not None and nvml.working and nvml.gpus):
        return  # no GPU to give a container, and no error about it
    system = ctx.get(SystemFacts)
    like = (*system.distro_like, *((system.distro,) if system.distro else ())) if system is not None else ()
    evidence = [f"docker: {access.docker}", "no nvidia-ctk, nvidia-container-runtime or nvidia-container-cli"]
    if said is not None:
        evidence.append(f"{said.source}: {said.excerpt}")
    yield Hit(
        title="Docker cannot give containers the GPU: the NVIDIA Container Toolkit is not installed",
        detail="Docker is installed, but none of the NVIDIA Container Toolkit's programs is, so "
        "`docker run --gpus all` fails with 'could not select device driver' and containers see "
        "no GPU. The toolkit mounts the host's driver into containers; no driver belongs in the image.",
        evidence=tuple(evidence),
        fixes=(table.toolkit_install_fix(like),),
    )


@rule(
    code="ED174",
    name="container-gpu-access-revoked",
    severity=Severity.ERROR,
    summary="NVML says 'Unknown Error' in a container that has the device files: its access was revoked",
    needs=(GpuAccessFacts, NvmlFacts),
    doc=RuleDoc(
        what="Inside a container: NVIDIA device files present while NVML fails with 'Unknown Error'. "
        "On a Docker host: no-cgroups = true in /etc/nvidia-container-runtime/config.toml with that "
        "error captured or pasted.",
        why="The device files are there but the container's device cgroup no longer allows them: a "
        "`systemctl daemon-reload` on the host (package updates run one) rewrites the rules the "
        "NVIDIA hook added, and no-cgroups = true makes the runtime add none for Docker.",
        fix="Restart the container; to stop it recurring, create the /dev/char links with "
        "`sudo nvidia-ctk system create-dev-char-symlinks --create-all` or pass the devices through "
        "CDI; for Docker keep no-cgroups = false.",
        example="A long-running training container that, after an unattended upgrade on the host, "
        "says 'Failed to initialize NVML: Unknown Error'.",
    ),
)
def container_gpu_access_revoked(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    nvml = ctx.need(NvmlFacts)
    unknown = nvml.status == NvmlStatus.ERROR and "unknown error" in (nvml.error or "").lower()
    if access.container is not None and access.has_nvidia_devices and unknown:
        yield Hit(
            title=f"this {access.container} container lost its access to the GPU",
            detail="The NVIDIA device files are here, but NVML fails with 'Unknown Error': the "
            "container's device cgroup no longer lets it open them. The usual cause is a "
            "`systemctl daemon-reload` on the host (package updates run one), which rewrites the "
            "rules the NVIDIA hook added when the container started.",
            evidence=(
                *access.container_evidence,
                "NVIDIA device files: " + ", ".join(access.device_files),
                f"NVML: {nvml.error}",
            ),
            fixes=table.cgroup_lost_fixes(),
        )
        return
    said = _said(ctx, NVML_UNKNOWN)
    if access.container is None and access.toolkit_no_cgroups and (said is not None or unknown):
        evidence = [f"{table.toolkit_config()}: no-cgroups = true"]
        if said is not None:
            evidence.append(f"{said.source}: {said.excerpt}")
        yield Hit(
            title="the NVIDIA runtime is set not to manage device cgroups (no-cgroups = true)",
            detail="With no-cgroups = true the NVIDIA runtime grants Docker containers no access to "
            "the GPU's device files, and NVML inside says 'Unknown Error'. That setting is meant for "
            "rootless podman only.",
            evidence=tuple(evidence),
            fixes=(table.no_cgroups_fix(),),
        )


def _blocked_by_label(nodes: tuple[DeviceNode, ...], uid: int | None, groups: tuple[int, ...]) -> list[str]:
    """Device files the kernel refuses although owner, group and mode would let this process in."""
    return [n.path for n in nodes if n.usable is False and dac_allows(n, uid, groups) is not False]


@rule(
    code="ED176",
    name="selinux-blocks-container-gpu",
    severity=Severity.ERROR,
    summary="SELinux keeps this confined container from the NVIDIA device files",
    needs=(GpuAccessFacts,),
    doc=RuleDoc(
        what="Inside a container whose SELinux label is a confined container's (container_t, "
        "svirt_lxc_net_t) or where SELinux enforces: NVIDIA device files that access(2) refuses "
        "although their owner, group and mode allow this process, or NVML's 'Insufficient "
        "Permissions'.",
        why="SELinux denies a confined container the devices the NVIDIA runtime mounted in; NVML "
        "says 'Insufficient Permissions' and CUDA finds no device, while the same container "
        "works with --privileged.",
        fix="Start the container with --security-opt label=disable, or allow confined containers "
        "to use devices with `sudo setsebool -P container_use_devices on` on the host.",
        example="Rootless podman with CDI on Fedora: 'Failed to initialize NVML: Insufficient "
        "Permissions' until --security-opt label=disable is added.",
    ),
)
def selinux_blocks_container_gpu(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    if access.container is None:
        return
    confined = table.selinux_container_label(access.selinux_label)
    if not confined and access.selinux != "enforcing":
        return
    if access.selinux == "permissive":
        return
    blocked = _blocked_by_label(access.device_nodes, access.process_uid, access.process_groups)
    nvml = ctx.get(NvmlFacts)
    refused = nvml is not None and nvml.status == NvmlStatus.NO_PERMISSION
    if not blocked and not (refused and not access.device_nodes):
        return
    evidence = [*access.container_evidence]
    if access.selinux_label:
        evidence.append(f"SELinux label: {access.selinux_label}")
    if access.selinux:
        evidence.append(f"SELinux: {access.selinux}")
    evidence += [f"{path}: refused, though its mode allows this user" for path in blocked]
    if refused and nvml is not None:
        evidence.append(f"NVML: {nvml.error}")
    yield Hit(
        title=f"SELinux keeps this {access.container} container from the GPU's device files",
        detail="The NVIDIA device files are in the container and their owner, group and mode let "
        "this process in, yet the kernel refuses to open them: SELinux confines the container "
        "and its policy does not let it use those devices. NVML then says 'Insufficient "
        "Permissions' and CUDA sees no GPU.",
        evidence=tuple(evidence),
        fixes=table.selinux_fixes(),
    )
