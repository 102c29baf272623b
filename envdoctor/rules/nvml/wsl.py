"""WSL 2 beyond the distribution: the Windows driver's libcuda.so not on the loader path (cuDNN 8,
bitsandbytes, cuda-python), a WSL kernel older than CUDA needs or a Windows build known to break GPU
compute, and containers whose toolkit predates the driver's libnvdxgdmal.so.1 (error 500). The fix is
never a Linux driver inside WSL (ED124)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from envdoctor.knowledge import gpu_access as table
from envdoctor.knowledge import parse_version
from envdoctor.knowledge.signatures import ErrorEvidence
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.gpu_access import GpuAccessFacts
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import posix_set, prepend_command
from envdoctor.rules.nvml.access import cuda_torch
from envdoctor.rules.nvml.container import user_shell
from envdoctor.rules.nvml.device_state import cuda_failed, torch_messages

LIBCUDA_UNVERSIONED = "libcuda-unversioned-not-found"
NAMED_SYMBOL = "wsl-container-named-symbol-not-found"
_KERNEL = re.compile(r"^(\d+(?:\.\d+){1,3})")


def kernel_version(release: str) -> str | None:
    """ "5.10.16.3" from "5.10.16.3-microsoft-standard-WSL2"."""
    found = _KERNEL.match(release)
    return found.group(1) if found else None


@rule(
    code="ED179",
    name="wsl-libcuda-not-on-loader-path",
    severity=Severity.ERROR,
    summary="WSL 2's libcuda.so (in /usr/lib/wsl/lib) is not on the loader path of the library asking for it",
    needs=(GpuAccessFacts,),
    doc=RuleDoc(
        what="Under WSL 2: an error that the unversioned libcuda.so cannot be opened (cuDNN 8, "
        "bitsandbytes, cuda-python, cudarc), LD_LIBRARY_PATH, and /etc/ld.so.conf.d/ld.wsl.conf, "
        "which puts /usr/lib/wsl/lib in the loader cache.",
        why="WSL 2's driver libraries live in /usr/lib/wsl/lib as plain files, so the loader cache "
        "knows only libcuda.so.1: a library that opens 'libcuda.so' fails although torch itself "
        "works. A Linux driver installed to fix it breaks WSL's GPU instead.",
        fix="Put /usr/lib/wsl/lib on LD_LIBRARY_PATH (this session and ~/.bashrc); where ld.wsl.conf "
        "is missing, restore it and run sudo ldconfig.",
        example="cuDNN 8 under WSL 2 loading libcudnn_cnn_infer.so.8: 'libcuda.so: cannot open "
        "shared object file: No such file or directory'.",
    ),
)
def wsl_libcuda_not_on_loader_path(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    if access.wsl != 2:
        return
    wsl_lib = table.wsl_lib_dir()
    on_path = any(e.rstrip("/") == wsl_lib for e in access.loader_path)
    evidence = ctx.get(ErrorEvidence)
    said = evidence.get(LIBCUDA_UNVERSIONED) if evidence is not None else None
    torch = cuda_torch(ctx)
    uncached = access.wsl_ld_conf is False and (torch is None or cuda_failed(torch))
    if on_path or (said is None and not uncached):
        return
    shell = user_shell(ctx)
    line = f'{posix_set("LD_LIBRARY_PATH", wsl_lib)}:"$LD_LIBRARY_PATH"'
    for_good = () if shell == "fish" else (f"echo '{line}' >> ~/.bashrc",)
    found = [
        f"{said.source}: {said.excerpt}" if said is not None else "",
        f"{wsl_lib} is not on LD_LIBRARY_PATH",
    ]
    fixes = [
        Fix(
            summary=table.wsl_libcuda_path_summary(),
            commands=(prepend_command("linux", shell, "LD_LIBRARY_PATH", wsl_lib), *for_good),
            link=table.wsl_ld_conf_fix().link,
        )
    ]
    detail = (
        f"Under WSL 2 the Windows driver's libcuda lives in {wsl_lib}, which is not on "
        "LD_LIBRARY_PATH; the loader cache lists only libcuda.so.1 (the files there are copies, not "
        "links), so a library that opens the unversioned libcuda.so fails."
    )
    if access.wsl_ld_conf is False:
        found.append(f"{table.wsl_ld_conf()} is missing")
        detail += (
            f" {table.wsl_ld_conf()} is missing too, so not even libcuda.so.1 is in the cache "
            "and torch finds no driver."
        )
        fixes.insert(0, table.wsl_ld_conf_fix())
    detail += " Installing a Linux driver in WSL does not fix this: it breaks the GPU."
    yield Hit(
        title=f"libcuda.so is not on the loader path: {wsl_lib} is missing from LD_LIBRARY_PATH",
        detail=detail,
        evidence=tuple(e for e in found if e),
        fixes=tuple(fixes),
    )


@rule(
    code="ED180",
    name="wsl-gpu-support-outdated",
    severity=Severity.ERROR,
    summary="WSL 2's kernel is older than CUDA needs, or the Windows build is one known to break GPU compute",
    needs=(GpuAccessFacts, TorchFacts),
    doc=RuleDoc(
        what="Under WSL 2, while torch's CUDA fails: the kernel release against the minimum CUDA on "
        "WSL needs (5.10.43.3), and the Windows build (cmd.exe's `ver` through interop) against "
        "Insider builds known to break GPU compute in WSL 2.",
        why="WSL 2's GPU support lives in Windows and the WSL kernel, not in the distribution: an old "
        "or custom kernel (a kernel= line in .wslconfig), or a broken Insider build, leaves CUDA "
        "without a device while nothing inside Linux is wrong.",
        fix="Run `wsl --update` and `wsl --shutdown` from Windows (and drop a custom kernel from "
        ".wslconfig); on a broken Insider build, install the next build or roll back.",
        example="vLLM in WSL 2 on kernel 5.10.16.3-microsoft-standard-WSL2: 'Found no NVIDIA driver "
        "on your system'; after `wsl --update` (5.15.153.1) it works.",
    ),
)
def wsl_gpu_support_outdated(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    torch = cuda_torch(ctx)
    if access.wsl != 2 or torch is None or not (cuda_failed(torch) or torch_messages(torch)):
        return
    release = kernel_version(ctx.platform.release)
    kernel, minimum = parse_version(release), parse_version(table.wsl_min_kernel())
    if kernel is not None and minimum is not None and kernel < minimum:
        yield Hit(
            title=f"the WSL 2 kernel {release} is older than CUDA on WSL needs ({minimum})",
            detail=f"This distribution runs kernel {ctx.platform.release}; CUDA on WSL 2 needs "
            f"{minimum} or newer. `wsl --update` installs a current one, unless a kernel= line in "
            ".wslconfig keeps a custom, older kernel. Nothing inside Linux fixes this.",
            evidence=(f"kernel release {ctx.platform.release}",),
            fixes=(table.wsl_kernel_fix(),),
        )
    build = access.windows_build
    if build is not None and build in table.wsl_broken_builds():
        yield Hit(
            title=f"Windows build {build} is known to break GPU compute in WSL 2",
            detail=f"This is Windows {access.windows_version}, an Insider build in which GPU compute "
            "under WSL 2 did not work (the WSL team's own issue); torch's CUDA fails however the "
            "distribution is set up.",
            evidence=(f"Windows {access.windows_version}",),
            fixes=(table.wsl_broken_build_fix(),),
        )


@rule(
    code="ED181",
    name="wsl-container-toolkit-too-old-for-driver",
    severity=Severity.ERROR,
    summary="a WSL 2 container lacks libnvdxgdmal.so.1, which Windows drivers from 555 need (CUDA error 500)",
    needs=(GpuAccessFacts, NvmlFacts),
    doc=RuleDoc(
        what="In a container under WSL 2: the Windows driver's version (555 or newer) against the "
        "libraries mapped into /usr/lib/wsl/lib, and CUDA's error 500 ('named symbol not found').",
        why="Windows drivers from 555 add libnvdxgdmal.so.1, which the NVIDIA Container Toolkit (or "
        "Docker Desktop) must map into each container; an older one maps the rest, so nvidia-smi "
        "works but CUDA fails to start with error 500.",
        fix="Update Docker Desktop (4.31 or newer) or the NVIDIA Container Toolkit (1.15 or newer), "
        "or go back to a Windows driver older than 555 (552.44).",
        example="pytorch/pytorch:2.1.2-cuda12.1 in Docker Desktop with driver 555.85: 'Error 500: "
        "named symbol not found'.",
    ),
)
def wsl_container_toolkit_too_old_for_driver(ctx: RuleContext) -> Iterator[Hit]:
    access = ctx.need(GpuAccessFacts)
    nvml = ctx.need(NvmlFacts)
    if access.wsl != 2 or access.container is None or access.wsl_libraries is None:
        return
    library = table.dxgdmal_library()
    major = (nvml.driver_version or "").split(".", 1)[0]
    if library in access.wsl_libraries or not major.isdigit() or int(major) < table.dxgdmal_from_driver():
        return
    evidence = ctx.get(ErrorEvidence)
    said = evidence.get(NAMED_SYMBOL) if evidence is not None else None
    torch = cuda_torch(ctx)
    if said is None and (torch is None or not cuda_failed(torch)):
        return
    found = [f"driver {nvml.driver_version}", f"{table.wsl_lib_dir()}/{library} is missing"]
    found += access.container_evidence
    if said is not None:
        found.append(f"{said.source}: {said.excerpt}")
    yield Hit(
        title=f"this container lacks {library}, which Windows driver {nvml.driver_version} needs",
        detail=f"Windows drivers from {table.dxgdmal_from_driver()} add {library}; the container "
        f"toolkit that started this {access.container} container does not map it into "
        f"{table.wsl_lib_dir()}, so CUDA fails with error 500 ('named symbol not found') while "
        "nvidia-smi works.",
        evidence=tuple(found),
        fixes=(table.dxgdmal_fix(),),
    )
