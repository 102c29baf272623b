"""torch.compile's GPU path and CUDA in child processes: Triton's ptxas against the driver, Triton's
search for libcuda, Triton missing, and CUDA started before a fork."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from envdoctor import knowledge
from envdoctor.knowledge import triton as triton_table
from envdoctor.knowledge.archs import cuda_number
from envdoctor.knowledge.drivers import native_cuda
from envdoctor.knowledge.signatures import ErrorEvidence, SignatureMatch
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.toolkit import ToolkitFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.probes.triton import LIBCUDA, LIBCUDA_LINK, TritonFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import set_command
from envdoctor.rules.fixes import driver_fix, planned_fix

TRITON_WINDOWS = "https://github.com/woct0rdho/triton-windows"
MULTIPROCESSING = "https://pytorch.org/docs/stable/notes/multiprocessing.html"


def _shell(ctx: RuleContext) -> str | None:
    toolkit = ctx.get(ToolkitFacts)
    return toolkit.shell if toolkit is not None else None


def _said(matches: tuple[SignatureMatch, ...]) -> str:
    """The error line a signature matched, quoted for a finding's detail."""
    if not matches:
        return ""
    where = "The pasted error" if matches[0].source == "pasted" else f"The captured {matches[0].source}"
    return f' {where} says: "{matches[0].excerpt}".'


def _driver_cuda(nvml: NvmlFacts, os_name: str) -> str | None:
    return nvml.driver_cuda or native_cuda(nvml.driver_version, os_name)


# -- ED240: Triton's ptxas is of a newer CUDA major than the driver ---------------------------------


def _ptxas_cuda(triton: TritonFacts) -> tuple[str | None, str, str | None]:
    """(CUDA of the ptxas Triton runs, how that is known, its path)."""
    chosen = triton.chosen_ptxas()
    if chosen is not None and chosen.release:
        return chosen.release, f"`{chosen.path} --version`", chosen.path
    if chosen is None or chosen.role == "bundled":
        known = triton_table.bundled_ptxas(triton.version)
        if known is not None:
            path = chosen.path if chosen is not None else None
            return known.cuda, f"the ptxas triton {triton.version} ships", path
    return None, "", None


def _matching_ptxas(ctx: RuleContext, triton: TritonFacts, driver_major: int) -> list[tuple[str, str]]:
    """(path, CUDA) of ptxas programs on this machine whose CUDA major the driver runs."""
    found: list[tuple[str, str]] = []
    for ptxas in triton.ptxas:
        number = cuda_number(ptxas.release)
        if ptxas.exists and number is not None and number[0] <= driver_major and ptxas.role != "bundled":
            found.append((ptxas.path, ptxas.release or ""))
    toolkit = ctx.get(ToolkitFacts)
    for kit in toolkit.toolkits if toolkit is not None else ():
        number = cuda_number(kit.version)
        if kit.exists and kit.has_nvcc and number is not None and number[0] <= driver_major:
            join = "\\" if ctx.platform.os == "windows" else "/"
            exe = ".exe" if ctx.platform.os == "windows" else ""
            path = f"{kit.root.rstrip(join)}{join}bin{join}ptxas{exe}"
            if all(path != p for p, _ in found):
                found.append((path, kit.version or ""))
    return found


@rule(
    code="ED240",
    name="triton-ptxas-newer-than-driver",
    severity=Severity.ERROR,
    summary="Triton's ptxas comes from a newer CUDA major version than the driver runs: "
    "torch.compile's kernels will not load",
    needs=(TritonFacts, NvmlFacts),
    doc=RuleDoc(
        what="The CUDA version of the ptxas Triton runs (TRITON_PTXAS_PATH's, torch's own torch/bin/ptxas, "
        "else the one Triton ships, asked with `ptxas --version` or known per Triton release) against the "
        "newest CUDA the NVIDIA driver runs.",
        why="Triton compiles every torch.compile kernel with that ptxas. Since Triton 2.1 it ships a "
        "CUDA 12 ptxas, whose cubins a driver of CUDA 11.x (R470, R515) cannot load: the first compiled "
        "kernel fails with 'Triton Error [CUDA]: device kernel image is invalid', although eager torch "
        "(a cu118 build) works.",
        fix="Point Triton at a ptxas of the driver's CUDA major (TRITON_PTXAS_PATH, e.g. a local CUDA 11.8 "
        "toolkit's bin/ptxas), or upgrade the driver to one that runs CUDA 12.",
        example="A100 on driver 470.182.03 (CUDA 11.4), torch 2.2.0+cu118, triton 2.2.0 with its CUDA "
        "12.3 ptxas: torch.compile raises 'device kernel image is invalid'.",
    ),
)
def triton_ptxas_newer_than_driver(ctx: RuleContext) -> Iterator[Hit]:
    triton = ctx.need(TritonFacts)
    nvml = ctx.need(NvmlFacts)
    if not triton.installed or not nvml.working:
        return
    torch = ctx.get(TorchFacts)
    if torch is not None and torch.imported and (torch.hip or not torch.cuda):
        return  # a ROCm or CPU torch: Triton's NVIDIA path is not used
    driver = _driver_cuda(nvml, ctx.platform.os)
    ptxas, known_by, path = _ptxas_cuda(triton)
    have, need = cuda_number(driver), cuda_number(ptxas)
    if have is None or need is None or need[0] <= have[0]:
        return  # the same major: minor-version compatibility loads its cubins
    evidence = ctx.get(ErrorEvidence) or ErrorEvidence()
    said = _said(evidence.matching("ED240"))
    fixes = []
    for found, cuda in _matching_ptxas(ctx, triton, have[0]):
        fixes.append(
            Fix(
                summary=f"Point Triton at the CUDA {cuda} ptxas, whose cubins this driver loads "
                "(set it where your job starts, or in the shell's startup file)",
                commands=(set_command(ctx.platform.os, _shell(ctx), "TRITON_PTXAS_PATH", found),),
            )
        )
    minimum = knowledge.driver_minimum(ptxas or "", ctx.platform.os)
    floor = minimum.compat or minimum.toolkit if minimum is not None else None
    fixes.append(driver_fix(ctx, str(floor) if floor else None))
    where = f" ({path})" if path else ""
    yield Hit(
        title=f"Triton's ptxas is from CUDA {ptxas}, but driver {nvml.driver_version} runs CUDA {driver} "
        "at most: torch.compile's kernels will not load",
        detail=f"Triton compiles torch.compile's GPU kernels with its ptxas{where}; {known_by} says CUDA "
        f"{ptxas}. Code built by a CUDA {need[0]} toolchain needs a driver of CUDA {need[0]} (at least "
        f"{floor or 'the one NVIDIA names'}); this driver runs CUDA {driver}, so loading each compiled "
        'kernel fails with "Triton Error [CUDA]: device kernel image is invalid" while eager torch '
        f"works.{said} A ptxas of CUDA {have[0]}.x (TRITON_PTXAS_PATH) or a newer driver fixes it.",
        evidence=(
            f"triton {triton.version}: ptxas CUDA {ptxas}",
            f"driver {nvml.driver_version} (CUDA {driver})",
        ),
        fixes=tuple(fixes),
    )


# -- ED241: Triton cannot find libcuda ---------------------------------------------------------------


def _known_libcuda(triton: TritonFacts) -> list[str]:
    """Every libcuda.so.1 the probe saw, wherever it was found."""
    return [c.path for c in triton.libcuda if posixpath.basename(c.path) == LIBCUDA]


@rule(
    code="ED241",
    name="triton-cannot-find-libcuda",
    severity=Severity.ERROR,
    summary="Triton will not find libcuda (or cannot link -lcuda): torch.compile fails on the GPU",
    needs=(TritonFacts,),
    doc=RuleDoc(
        what="Where Triton looks for the driver's libcuda on Linux: TRITON_LIBCUDA_PATH, else the folders "
        "`/sbin/ldconfig -p` lists libcuda.so.1 in, else LD_LIBRARY_PATH's; and whether an unversioned "
        "libcuda.so sits beside it (or on LIBRARY_PATH) for the -lcuda its launcher is linked with.",
        why="torch itself opens libcuda.so.1 by name, so eager CUDA works while Triton's own search fails: "
        "'AssertionError: libcuda.so cannot found!' when ldconfig's cache does not list it (a driver "
        "installed without refreshing the cache, a container or a cluster module), and '/usr/bin/ld: "
        "cannot find -lcuda' when only libcuda.so.1 exists.",
        fix="Refresh the linker cache (sudo ldconfig), point TRITON_LIBCUDA_PATH at the folder that holds "
        "libcuda.so.1, or add the missing libcuda.so link beside it.",
        example="Ubuntu, driver 535 with only /usr/lib/x86_64-linux-gnu/libcuda.so.1: torch.compile fails "
        "with '/usr/bin/ld: cannot find -lcuda'.",
    ),
)
def triton_cannot_find_libcuda(ctx: RuleContext) -> Iterator[Hit]:
    triton = ctx.need(TritonFacts)
    if ctx.platform.os != "linux" or not triton.installed:
        return
    if not triton.ldconfig_ran and not triton.libcuda_path_env:
        return  # ldconfig did not answer: nothing is known about the cache
    torch = ctx.get(TorchFacts)
    if torch is not None and torch.imported and (torch.hip or not torch.cuda):
        return
    nvml = ctx.get(NvmlFacts)
    if nvml is not None and not nvml.working and not nvml.pci_nvidia_devices:
        return  # no NVIDIA GPU: Triton has nothing to run on (ED104's matter)
    shell = _shell(ctx)
    dirs = triton.libcuda_dirs
    seen = _known_libcuda(triton)
    evidence = ctx.get(ErrorEvidence) or ErrorEvidence()
    said = _said(evidence.matching("ED241"))
    if not dirs:
        where = (
            f"TRITON_LIBCUDA_PATH={triton.libcuda_path_env} holds no {LIBCUDA}"
            if triton.libcuda_path_env
            else f"`/sbin/ldconfig -p` lists no {LIBCUDA} and no LD_LIBRARY_PATH folder holds one"
        )
        fixes = [
            Fix(
                summary="Refresh the linker cache, so that ldconfig lists the driver's libcuda.so.1 "
                "(then check that it does)",
                commands=("sudo ldconfig", "ldconfig -p | grep libcuda"),
            )
        ]
        for path in seen[:1]:
            fixes.append(
                Fix(
                    summary="Tell Triton where libcuda.so.1 is",
                    commands=(set_command("linux", shell, "TRITON_LIBCUDA_PATH", posixpath.dirname(path)),),
                )
            )
        yield Hit(
            title="Triton will not find the driver's libcuda.so.1: torch.compile fails on the GPU",
            detail=f'{where}, so Triton\'s lookup stops with "AssertionError: libcuda.so cannot found!" '
            "before compiling a kernel (torch finds libcuda by itself, so eager CUDA still works)."
            f"{said}",
            evidence=(f"triton {triton.version}", "ldconfig -p: no libcuda.so.1"),
            fixes=tuple(fixes),
        )
        return
    if triton.linkable():
        return
    target = posixpath.join(dirs[0], LIBCUDA)
    link = posixpath.join(dirs[0], LIBCUDA_LINK)
    yield Hit(
        title=f"Triton finds {target} but no {LIBCUDA_LINK} to link with: torch.compile fails with "
        '"cannot find -lcuda"',
        detail=f"Triton builds a small launcher linked with -lcuda in {', '.join(dirs)}, and the linker "
        f"needs the unversioned {LIBCUDA_LINK} there (or on LIBRARY_PATH); only {LIBCUDA} is there, as "
        "drivers installed without their development link (and containers) leave it, so compiling fails "
        f'with "/usr/bin/ld: cannot find -lcuda".{said}',
        evidence=(f"triton {triton.version}", f"{target} without {LIBCUDA_LINK}"),
        fixes=(
            Fix(
                summary=f"Add the {LIBCUDA_LINK} link beside the driver's library and refresh the cache",
                commands=(f"sudo ln -s {target} {link}", "sudo ldconfig"),
            ),
            Fix(
                summary="Without root, give the linker a folder with that link (for this shell; add "
                "it to its startup file to keep it)",
                commands=(
                    "mkdir -p ~/.local/lib/libcuda-link",
                    f"ln -sf {target} ~/.local/lib/libcuda-link/{LIBCUDA_LINK}",
                    'export LIBRARY_PATH="$HOME/.local/lib/libcuda-link${LIBRARY_PATH:+:$LIBRARY_PATH}"',
                ),
            ),
        ),
    )


# -- ED242: torch.compile without Triton ---------------------------------------------------------------


def _requires_triton(ctx: RuleContext) -> bool | None:
    """Whether the installed torch's metadata requires Triton; None when not read."""
    torch = ctx.get(TorchFacts)
    extensions = torch.extensions if torch is not None else None
    if extensions is None or extensions.distributions is None:
        return None
    own = extensions.distribution("torch")
    if own is None:
        return None
    return any("triton" in r.split(";")[0].lower() for r in own.requires)


def _triton_installed(ctx: RuleContext) -> bool | None:
    triton = ctx.get(TritonFacts)
    if triton is not None:
        return triton.installed
    torch = ctx.get(TorchFacts)
    extensions = torch.extensions if torch is not None else None
    if extensions is None or extensions.distributions is None:
        return None
    return any("triton" in d.name.lower() for d in extensions.distributions)


@rule(
    code="ED242",
    name="torch-compile-without-triton",
    severity=Severity.WARNING,
    summary="a CUDA torch without Triton: torch.compile cannot build GPU kernels",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="On Linux, a CUDA build of torch whose own metadata requires Triton while no Triton "
        "distribution is installed; on Windows, an error saying torch.compile found no working Triton.",
        why="torch imports and runs eagerly without Triton, but torch.compile (the inductor backend) "
        "needs it for every GPU kernel and fails with 'Cannot find a working triton installation'. On "
        "Linux it goes missing when torch was installed with --no-deps or from a mirror without it; "
        "PyTorch publishes no Triton for Windows at all.",
        fix="On Linux reinstall torch with its dependencies (the command is shown); on Windows run in WSL 2, "
        "compile with backend='eager' or 'aot_eager', or use the community triton-windows build.",
        example="Windows 11, Python 3.12, torch 2.6.0+cu124: torch.compile raises 'Cannot find a working "
        "triton installation'.",
    ),
)
def torch_compile_without_triton(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    if not torch.imported or not torch.cuda or torch.hip:
        return
    evidence = ctx.get(ErrorEvidence) or ErrorEvidence()
    said = evidence.matching("ED242")
    installed = _triton_installed(ctx)
    if ctx.platform.os == "windows":
        if not said or installed:
            return  # Triton is not part of torch on Windows: only the error makes it a finding
        yield Hit(
            title="torch.compile needs Triton for GPU kernels, and PyTorch publishes no Triton for Windows",
            detail="torch runs eagerly on the GPU, but the inductor backend of torch.compile generates "
            f"Triton kernels, and no Triton is installed here.{_said(said)}",
            evidence=(f"torch {torch.version} on Windows", "no triton distribution"),
            fixes=(
                Fix(
                    summary="Run the job in WSL 2, where torch's Linux wheels bring Triton along; or let "
                    "torch.compile fall back to eager code (import torch._dynamo; "
                    "torch._dynamo.config.suppress_errors = True) or compile with backend='aot_eager'; "
                    "or use the community Windows port of Triton, triton-windows (its page lists "
                    "the version that matches each torch)",
                    link=TRITON_WINDOWS,
                ),
            ),
        )
        return
    required = _requires_triton(ctx)
    if installed is not False or (required is not True and not said):
        return
    fixes = []
    planned = planned_fix(
        ctx,
        "Reinstall torch with its dependencies (Triton among them)",
        torch=torch.public_version,
        want_cuda=True,
    )
    if planned is not None:
        fixes.append(planned)
    yield Hit(
        title=f"torch {torch.version} requires Triton, which is not installed: torch.compile cannot build "
        "GPU kernels",
        detail="torch's metadata lists Triton among its requirements, but no triton distribution is "
        "installed (torch was installed with --no-deps, from a mirror without it, or Triton was "
        'uninstalled); eager torch works, torch.compile fails with "Cannot find a working triton '
        f'installation".{_said(said)}',
        evidence=(f"torch {torch.version} requires triton", "no triton distribution"),
        fixes=tuple(fixes),
    )


# -- ED243: CUDA started before fork ----------------------------------------------------------------


def _uses_vllm(ctx: RuleContext, matches: tuple[SignatureMatch, ...]) -> bool:
    torch = ctx.get(TorchFacts)
    extensions = torch.extensions if torch is not None else None
    if extensions is not None and extensions.distribution("vllm") is not None:
        return True
    texts = (ctx.get(ErrorEvidence) or ErrorEvidence()).texts
    return any("vllm" in t.text.lower() for t in texts) or any("vllm" in m.excerpt.lower() for m in matches)


@rule(
    code="ED243",
    name="cuda-initialised-before-fork",
    severity=Severity.ERROR,
    summary="CUDA was started in a process before it forked workers, which cannot use CUDA then",
    needs=(ErrorEvidence,),
    doc=RuleDoc(
        what="An error saying a forked subprocess cannot re-initialise CUDA; the fix names vLLM's own "
        "setting where vLLM is installed or in the error.",
        why="CUDA cannot be used in a child made by fork() once the parent has initialised it, and fork "
        "is Python's default start method on Linux up to 3.13: DataLoader workers, multiprocessing pools "
        "and vLLM's tensor-parallel workers fail at their first CUDA call.",
        fix="Start the workers with the spawn method (multiprocessing.set_start_method('spawn'); vLLM: "
        "VLLM_WORKER_MULTIPROC_METHOD=spawn), or touch CUDA only after the workers exist.",
        example="vLLM 0.5.3.post1 with tensor_parallel_size=2: 'Cannot re-initialize CUDA in forked "
        "subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start method'.",
    ),
)
def cuda_initialised_before_fork(ctx: RuleContext) -> Iterator[Hit]:
    matches = ctx.need(ErrorEvidence).matching("ED243")
    if not matches:
        return
    fixes = []
    if _uses_vllm(ctx, matches):
        fixes.append(
            Fix(
                summary="vLLM: start its workers with spawn (set it where the server or script starts)",
                commands=(
                    set_command(ctx.platform.os, _shell(ctx), "VLLM_WORKER_MULTIPROC_METHOD", "spawn"),
                ),
            )
        )
    fixes.append(
        Fix(
            summary="In your own code: choose spawn before any worker starts (in the `if __name__ == "
            "'__main__':` block), or pass multiprocessing_context='spawn' to the DataLoader; or create CUDA "
            "tensors only inside the workers",
            commands=("import multiprocessing; multiprocessing.set_start_method('spawn', force=True)",),
            link=MULTIPROCESSING,
        )
    )
    yield Hit(
        title="CUDA was initialised before this process forked its workers, which then cannot use CUDA",
        detail="A child created by fork() inherits the parent's CUDA state but cannot use it or start CUDA "
        "again; fork is the default start method on Linux (Python <= 3.13). Something touched CUDA in the "
        "parent (a tensor on the GPU, torch.cuda.device_count() in some versions, a model loaded first) "
        f"before the workers were forked.{_said(matches)}",
        evidence=tuple(f"{m.source}, line {m.line}" for m in matches[:1]),
        fixes=tuple(fixes),
    )
