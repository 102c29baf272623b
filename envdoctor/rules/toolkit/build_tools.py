"""What an extension build needs besides the toolkit: a host compiler nvcc accepts (ED412), ninja
(ED416), an x64 MSVC environment on Windows (ED417), the Python headers (ED418), room in the
temporary folder (ED419), and the installed torch inside the build's environment (ED423)."""

from __future__ import annotations

import ntpath
import posixpath
import re
from collections.abc import Iterator

from envdoctor.knowledge import nvcc as nvcc_data
from envdoctor.knowledge.signatures import ErrorEvidence, SignatureMatch
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.system import SystemFacts, gib
from envdoctor.probes.toolkit import HostCompiler, ToolkitFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import prepend_command, set_command, set_variable_fixes
from envdoctor.rules.toolkit.builds import build_toolkit, pip_install_fix
from envdoctor.rules.toolkit.toolkits import TOOLKIT_ARCHIVE, major_minor, path_name, torch_cuda

GIB = 2**30
# A CUDA torch wheel is about 2.5 GB and pip holds it, then each nvidia-* wheel, in the temporary
# folder while it installs; nvcc's intermediate files for one extension take hundreds of MB.
TEMP_NEEDED = 3 * GIB


def _evidence(ctx: RuleContext, ident: str) -> SignatureMatch | None:
    evidence = ctx.get(ErrorEvidence)
    return evidence.get(ident) if evidence is not None else None


def _debian_like(ctx: RuleContext) -> bool:
    system = ctx.get(SystemFacts)
    names = {system.distro or "", *system.distro_like} if system is not None else set()
    return bool(names & {"debian", "ubuntu"})


def _redhat_like(ctx: RuleContext) -> bool:
    system = ctx.get(SystemFacts)
    names = {system.distro or "", *system.distro_like} if system is not None else set()
    return bool(names & {"fedora", "rhel", "centos", "rocky", "almalinux"})


def _compiler_fixes(ctx: RuleContext, facts: ToolkitFacts, newest: int, cuda: str) -> list[Fix]:
    shell = facts.shell
    fixes: list[Fix] = []
    if _debian_like(ctx):
        fixes.append(
            Fix(
                summary=f"Install gcc {newest} beside the system's (Debian/Ubuntu)",
                commands=(f"sudo apt install gcc-{newest} g++-{newest}",),
            )
        )
    fixes.append(
        Fix(
            summary=f"Build with gcc {newest}: torch's cpp_extension hands $CC to nvcc as -ccbin "
            f"(in a conda environment, conda's gcc {newest} compiler packages do the same once "
            "activated)",
            commands=(
                set_command(ctx.platform.os, shell, "CC", f"gcc-{newest}"),
                set_command(ctx.platform.os, shell, "CXX", f"g++-{newest}"),
            ),
        )
    )
    compiler = facts.host_compiler
    accepting = (
        nvcc_data.first_cuda_accepting(compiler.major, cuda)
        if compiler is not None and compiler.major is not None
        else None
    )
    if accepting is not None:
        fixes.append(
            Fix(
                summary=f"Build with a newer toolkit instead: CUDA {accepting} and later accept this gcc",
                link=TOOLKIT_ARCHIVE,
            )
        )
    fixes.append(
        Fix(
            summary="At your own risk, nvcc can be told to skip its check: add -allow-unsupported-compiler "
            "to the extension's nvcc flags (NVCC_APPEND_FLAGS does it for every nvcc call); the "
            "build may then fail later or miscompile",
        )
    )
    return fixes


def _gcc(facts: ToolkitFacts) -> HostCompiler | None:
    compiler = facts.host_compiler
    if compiler is None or compiler.major is None or compiler.family == "clang":
        return None
    return compiler


@rule(
    code="ED412",
    name="host-compiler-too-new-for-nvcc",
    severity=Severity.WARNING,
    summary="the gcc nvcc would use is newer than that toolkit accepts",
    needs=(ToolkitFacts,),
    doc=RuleDoc(
        what="On Linux, the version of the host compiler nvcc runs ($CC, which torch's cpp_extension "
        "passes as -ccbin, else gcc on PATH) against the newest gcc the build's CUDA toolkit "
        "accepts (its host_config.h; torch's cpp_extension checks the same bounds first).",
        why="Every CUDA compile stops with '#error -- unsupported GNU version! gcc versions later "
        "than 11 are not supported!', so no CUDA extension builds; distributions such as Fedora "
        "ship a gcc newer than the CUDA release of the same time.",
        fix="Install the newest gcc the toolkit accepts and build with it (CC and CXX), or use a "
        "newer toolkit; -allow-unsupported-compiler skips the check at your own risk.",
        example="Fedora 37 (gcc 12) with CUDA 11.8's nvcc, which accepts gcc 11 at most.",
    ),
)
def host_compiler_too_new_for_nvcc(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    compiler = _gcc(facts)
    toolkit = build_toolkit(facts)
    if compiler is None or toolkit is None or compiler.major is None:
        return
    limit = nvcc_data.host_compiler_limit(toolkit.version)
    if limit is None:
        return
    cuda = major_minor(toolkit.version) or toolkit.version
    said = _evidence(ctx, "torch-compiler-bounds")
    if compiler.major < limit.gcc_below:
        if said is not None:
            yield _torch_table_hit(ctx, facts, compiler, cuda, said)
        return
    shown = compiler.path if compiler.chosen_by != "gcc on PATH" else "gcc"
    yield Hit(
        title=f"gcc {compiler.version} is newer than nvcc {cuda} accepts (gcc {limit.newest_gcc} at most)",
        detail=f"The nvcc of {toolkit.where} runs {shown} ({compiler.chosen_by}) as its host compiler, and "
        f'its host_config.h stops every CUDA compile with "#error -- unsupported GNU version! gcc '
        f"versions later than {limit.newest_gcc} are not supported!\"; torch's cpp_extension refuses it "
        f'even earlier ("The current installed version of ... is greater than the maximum required '
        f'version by CUDA {cuda}"). torch itself is unaffected; only CUDA extension builds fail.',
        evidence=(
            f"host compiler: {compiler.path} {compiler.version} ({compiler.chosen_by})",
            f"build toolkit: CUDA {toolkit.version} ({toolkit.where})",
        ),
        fixes=tuple(_compiler_fixes(ctx, facts, limit.newest_gcc, toolkit.version)),
    )


def _torch_table_hit(
    ctx: RuleContext, facts: ToolkitFacts, compiler: HostCompiler, cuda: str, said: SignatureMatch
) -> Hit:
    """torch's own bounds table refused a gcc that nvcc accepts: the table is older than the toolkit."""
    return Hit(
        title=f"torch's cpp_extension refuses gcc {compiler.version}, which nvcc {cuda} accepts",
        detail=f'The error ("{said.excerpt}") comes from torch\'s own table of compiler bounds per CUDA '
        f"version, checked before nvcc runs. nvcc {cuda} itself accepts gcc {compiler.major}, so the "
        "installed torch's table is older than the toolkit (upstream torch has corrected such rows).",
        evidence=(f"host compiler: {compiler.path} {compiler.version}", f"build toolkit: CUDA {cuda}"),
        fixes=(
            *set_variable_fixes(
                ctx.platform.os,
                facts.shell,
                "TORCH_DONT_CHECK_COMPILER_ABI",
                "1",
                "(skips torch's own compiler check; nvcc still checks)",
            ),
        ),
    )


def _env_bin(ctx: RuleContext, found: str) -> str:
    return ntpath.dirname(found) if ctx.platform.os == "windows" else posixpath.dirname(found)


@rule(
    code="ED416",
    name="ninja-not-found",
    severity=Severity.WARNING,
    summary="torch's cpp_extension cannot find ninja on PATH",
    needs=(ToolkitFacts, ErrorEvidence),
    doc=RuleDoc(
        what="Whether `ninja` is on PATH as torch.utils.cpp_extension looks for it (`ninja --version` "
        "through PATH): when the examined environment has its own ninja that PATH does not reach, "
        "or a build's error says ninja is required and none is on PATH.",
        why="JIT builds (torch.utils.cpp_extension.load, and packages that compile their kernels "
        "at first use) refuse to start: 'RuntimeError: Ninja is required to load C++ extensions'.",
        fix="Put the environment's bin folder on PATH (activate it), or install ninja into it.",
        example="ninja installed in a conda env, Python started from an IDE whose PATH lacks the "
        "env's bin folder.",
    ),
)
def ninja_not_found(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    ninja = facts.ninja
    if ninja is None or ninja.on_path is not None:
        return
    said = _evidence(ctx, "ninja-required")
    if ninja.in_environment is not None:
        folder = _env_bin(ctx, ninja.in_environment)
        yield Hit(
            title=f"the environment's ninja ({ninja.in_environment}) is not on PATH",
            detail="torch's cpp_extension runs `ninja --version` through PATH, so JIT builds stop with "
            "'RuntimeError: Ninja is required to load C++ extensions' although ninja is installed: "
            "the environment is not activated in the process that builds (an IDE, a service, a "
            "script started by its full path).",
            evidence=(f"ninja in the environment: {ninja.in_environment}", "ninja on PATH: none"),
            fixes=(
                Fix(
                    summary=f"Put {folder} on {path_name(ctx)} (activating the environment does it)",
                    commands=(prepend_command(ctx.platform.os, facts.shell, path_name(ctx), folder),),
                ),
            ),
        )
    elif said is not None:
        yield Hit(
            title="ninja is not installed: torch's cpp_extension needs it to build",
            detail=f'The error says so ("{said.excerpt}"), and no ninja is on PATH or in the '
            "examined environment.",
            evidence=("ninja on PATH: none", "ninja in the environment: none"),
            fixes=(pip_install_fix(ctx, "Install ninja into the environment that builds", "ninja"),),
        )


_X86_CL = re.compile(r"\\host(?:x86|x64)\\x86\\cl\.exe$|\\vc\\bin\\cl\.exe$", re.IGNORECASE)


def _vcvarsall(cl: str | None) -> str | None:
    """...\\VC\\Auxiliary\\Build\\vcvarsall.bat of the Visual Studio that `cl` belongs to."""
    if not cl:
        return None
    lowered = cl.lower()
    at = lowered.find("\\vc\\")
    if at < 0:
        return None
    return cl[: at + 4] + "Auxiliary\\Build\\vcvarsall.bat"


@rule(
    code="ED417",
    name="msvc-environment-not-x64",
    severity=Severity.WARNING,
    summary="the shell's Visual Studio environment targets 32-bit x86, not x64",
    needs=(ToolkitFacts,),
    doc=RuleDoc(
        what="On Windows, the Visual Studio developer environment of the shell: VSCMD_ARG_TGT_ARCH, "
        "and whether the first cl.exe on PATH is a compiler for x86.",
        why="torch and nvcc are 64-bit: an extension compiled or linked in an x86 environment fails "
        "('module machine type x64 conflicts with target machine type x86', or ninja's build "
        "step exits with status 1).",
        fix="Build from an 'x64 Native Tools Command Prompt', or run vcvarsall.bat x64 first.",
        example="A Developer Command Prompt for VS 2019 (x86) used to pip install an extension.",
    ),
)
def msvc_environment_not_x64(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    msvc = facts.msvc
    if ctx.platform.os != "windows" or msvc is None:
        return
    arch = (msvc.target_arch or "").lower()
    x86_cl = msvc.cl_on_path is not None and _X86_CL.search(msvc.cl_on_path) is not None
    if arch not in ("x86", "arm") and not (not arch and x86_cl) and not (arch == "x64" and x86_cl):
        return
    shown = msvc.target_arch or "x86 (the cl.exe on PATH)"
    vcvars = _vcvarsall(msvc.cl_on_path)
    fixes = [Fix(summary="Build from the 'x64 Native Tools Command Prompt for VS' (Start menu)")]
    if vcvars is not None:
        fixes.append(Fix(summary="Switch this cmd window to x64 instead", commands=(f'"{vcvars}" x64',)))
    yield Hit(
        title=f"the Visual Studio environment of this shell targets {shown}, but torch and nvcc are x64",
        detail="CUDA extensions built here compile or link for 32-bit x86 and fail against the 64-bit "
        "torch ('module machine type x64 conflicts with target machine type x86', or ninja's "
        "compile step exits with status 1)."
        + (f" cl.exe on PATH: {msvc.cl_on_path}." if msvc.cl_on_path else ""),
        evidence=(f"VSCMD_ARG_TGT_ARCH = {msvc.target_arch}", f"cl.exe on PATH: {msvc.cl_on_path}"),
        fixes=tuple(fixes),
    )


def _headers_fix(ctx: RuleContext, minor: str, include: str) -> Fix:
    if not include.startswith("/usr/include/"):
        return Fix(
            summary=f"This Python was installed without its C headers ({include} has no Python.h): "
            "reinstall it with them (pyenv, conda and uv's Pythons include them), or use a Python "
            "that has them"
        )
    if _debian_like(ctx):
        return Fix(
            summary=f"Install the headers of Python {minor} (Debian/Ubuntu; python3-dev is the same "
            "package for the distribution's default Python)",
            commands=(f"sudo apt install python{minor}-dev",),
        )
    if _redhat_like(ctx):
        return Fix(
            summary=f"Install the headers of Python {minor} (Fedora/RHEL; python3-devel for the "
            "distribution's default Python)",
            commands=(f"sudo dnf install python{minor}-devel",),
        )
    return Fix(
        summary=f"Install your distribution's development package of Python {minor} (python3-dev, "
        "python3-devel)"
    )


@rule(
    code="ED418",
    name="python-headers-missing",
    severity=Severity.INFO,
    summary="the examined Python has no Python.h: extension builds and Triton cannot compile",
    needs=(ToolkitFacts, PythonFacts),
    doc=RuleDoc(
        what="On Linux, whether Python.h is in the include folder of the examined Python's base "
        "installation (a venv's pyvenv.cfg names it).",
        why="Compiling any C++/CUDA extension fails with 'fatal error: Python.h: No such file or "
        "directory', and so does torch.compile on a GPU: Triton compiles a small C launcher "
        "against Python.h at run time. Distributions ship the headers in a separate package.",
        fix="Install the Python development package for that Python version (the command for "
        "this distribution is shown).",
        example="rocm/dev-ubuntu-22.04 with python3 but not python3-dev: torch.compile fails in "
        "Triton's main.c with 'Python.h: No such file or directory'.",
    ),
)
def python_headers_missing(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    headers = facts.python_headers
    if ctx.platform.os != "linux" or headers is None or headers.has_python_h:
        return
    python = ctx.need(PythonFacts)
    minor = ".".join(python.version.split(".")[:2])
    torch = ctx.get(TorchFacts)
    gpu_torch = torch is not None and torch.installed and (torch_cuda(ctx) is not None or torch.hip)
    uses = (
        " torch.compile on the GPU needs it too: Triton compiles its launcher (main.c, cuda_utils.c) "
        "against Python.h when the first kernel runs."
        if gpu_torch
        else ""
    )
    yield Hit(
        title=f"Python {minor} has no C headers ({headers.include}/Python.h is missing)",
        detail="Compiling C++/CUDA extensions fails with 'fatal error: Python.h: No such file or "
        f"directory'.{uses}",
        evidence=(f"{headers.include}/Python.h: missing",),
        fixes=(_headers_fix(ctx, minor, headers.include),),
    )


@rule(
    code="ED419",
    name="temp-folder-too-small",
    severity=Severity.WARNING,
    summary="the temporary folder has too little free space to install a CUDA torch",
    needs=(ToolkitFacts,),
    doc=RuleDoc(
        what="The free space of the temporary folder (TMPDIR, else /tmp; TEMP on Windows) against "
        "the 3 GiB a CUDA torch install needs there.",
        why="pip downloads the 2.5 GB torch wheel and each nvidia-* wheel into the temporary folder "
        "before installing, and nvcc writes its intermediate files there: a small /tmp (a tmpfs, a "
        "container's) fails the install with '[Errno 28] No space left on device' although the "
        "disk has room.",
        fix="Point TMPDIR at a folder on a disk with space for the install (the commands are "
        "shown); pip's --no-cache-dir also keeps the wheel out of its cache.",
        example="/tmp is a 2 GB partition: the torch download stops at '2.0/2.2 GB' with '[Errno 28]'.",
    ),
)
def temp_folder_too_small(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    temp = facts.temp
    if temp is None or temp.free_bytes is None or temp.free_bytes >= TEMP_NEEDED:
        return
    system = ctx.get(SystemFacts)
    python = ctx.get(PythonFacts)
    windows = ctx.platform.os == "windows"
    fixes: list[Fix] = []
    roomy = (
        system is not None
        and system.disk_free_bytes is not None
        and system.disk_free_bytes >= 2 * TEMP_NEEDED
        and python is not None
    )
    if roomy and python is not None:
        mod = ntpath if windows else posixpath
        folder = mod.join(mod.dirname(python.prefix.rstrip("\\/")), ".tmp")
        variable = "TEMP" if windows else "TMPDIR"
        make = f'mkdir "{folder}"' if windows else f"mkdir -p {folder}"
        free = gib(system.disk_free_bytes) if system is not None else "?"
        fixes.append(
            Fix(summary=f"Make a temporary folder on the environment's disk ({free} free)", commands=(make,))
        )
        fixes.extend(
            set_variable_fixes(ctx.platform.os, facts.shell, variable, folder, "(pip and nvcc write there)")
        )
    fixes.append(
        Fix(
            summary="Install with pip's --no-cache-dir too, and in a container give its tmpfs more room "
            "(e.g. docker run --tmpfs /tmp:size=8g)"
        )
    )
    total = f" of {gib(temp.total_bytes)}" if temp.total_bytes else ""
    yield Hit(
        title=f"the temporary folder {temp.path} has {gib(temp.free_bytes)} free{total}: too little to "
        "install a CUDA torch",
        detail="pip holds each downloaded wheel there while it installs (a CUDA torch wheel alone is "
        "about 2.5 GB) and nvcc writes its intermediate files there, so installs fail with '[Errno "
        "28] No space left on device' although the disk holding the environment has room.",
        evidence=(f"temporary folder: {temp.path} ({temp.chosen_by}), {gib(temp.free_bytes)} free",),
        fixes=tuple(fixes),
    )


@rule(
    code="ED423",
    name="build-isolation-hides-torch",
    severity=Severity.WARNING,
    summary="a source build runs in an isolated environment without the installed torch",
    needs=(ToolkitFacts, TorchFacts, ErrorEvidence),
    doc=RuleDoc(
        what="Whether the project in the current folder lists torch in [build-system] requires, and "
        "whether a build error says 'No module named torch' while torch is installed in the "
        "examined environment.",
        why="pip and uv build packages from source in a throwaway environment: a setup.py that "
        "imports torch (flash-attn, apex, GPTQ kernels) finds none there, and a pyproject that "
        "requires torch gets the default index's newest torch, often another build (CUDA "
        "version, ABI) than the installed one, downloaded again.",
        fix="Install the build's own requirements into the environment, then build with "
        "--no-build-isolation so it compiles against the installed torch.",
        example="pip install flash-attn into an environment with torch 2.3.1: 'ModuleNotFoundError: "
        "No module named torch' while getting the requirements to build the wheel.",
    ),
)
def build_isolation_hides_torch(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    torch = ctx.need(TorchFacts)
    if not torch.installed:
        return
    version = torch.version or torch.dist_version or "?"
    hint = _evidence(ctx, "uv-build-dependency-hint")  # uv names the package that failed
    said = hint or _evidence(ctx, "build-isolation-no-torch")
    package = hint.group("package") if hint is not None else None
    fixes = [
        pip_install_fix(
            ctx,
            "Install what the build itself needs into this environment",
            "setuptools",
            "wheel",
            "packaging",
            "ninja",
        )
    ]
    if package:
        fixes.append(
            pip_install_fix(
                ctx, f"Build {package} against the installed torch", "--no-build-isolation", package
            )
        )
    else:
        fixes.append(
            Fix(
                summary="Re-run the install with --no-build-isolation (pip and uv pip both take it), so the "
                "build compiles against the installed torch; uv projects can list the package under "
                "[tool.uv] no-build-isolation-package"
            )
        )
    if said is not None:
        yield Hit(
            title=f"torch {version} is installed, but the build ran in an isolated environment without it",
            detail=f'The error ("{said.excerpt}") comes from the package\'s setup.py importing torch '
            "inside the throwaway environment pip or uv builds in; the installed torch is not there.",
            evidence=(f"torch {version} installed at {torch.location}", f"error: {said.excerpt}"),
            fixes=tuple(fixes),
        )
        return
    wanted = facts.build_requirements
    if wanted is None:
        return
    yield Hit(
        title=f"{wanted.path} requires {', '.join(wanted.torch)} to build: isolated builds get another torch "
        f"than the installed {version}",
        detail="pip and uv install build requirements into a throwaway environment from the default "
        "index: that is the newest torch there (downloaded again, often another CUDA build), so "
        f"extensions compile against it and may not load with the installed torch {version}.",
        evidence=(f"[build-system] requires: {', '.join(wanted.torch)}", f"torch {version} installed"),
        fixes=tuple(fixes),
    )
