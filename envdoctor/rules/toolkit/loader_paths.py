"""What else the dynamic loader's search path brings in: a libtorch C++ download's libraries ahead of
the Python package's own (ED420), the toolkit's link-time stub of libcuda (ED421), and the cuDNN a
package that loads it by soname cannot find (ED422)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from envdoctor.knowledge import cuda_libraries
from envdoctor.knowledge.signatures import ErrorEvidence
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.toolkit import LibraryCopy, ToolkitFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import path_removal_fixes, prepend_command, set_command
from envdoctor.shell import join

FASTER_WHISPER_GPU = "https://github.com/SYSTRAN/faster-whisper#gpu"


def _torch_lib(ctx: RuleContext) -> str | None:
    torch = ctx.get(TorchFacts)
    if torch is None or not torch.location:
        return None
    return posixpath.join(posixpath.dirname(torch.location), "lib")


def _check_without(ctx: RuleContext, why: str) -> Fix:
    python = join([ctx.interpreter.path], "linux")
    return Fix(
        summary=f"Check that torch works without LD_LIBRARY_PATH {why}",
        commands=(f"env -u LD_LIBRARY_PATH {python} -c 'import torch; print(torch.__version__)'",),
    )


def _import_broken(ctx: RuleContext, folders: list[str]) -> bool:
    torch = ctx.get(TorchFacts)
    if torch is None:
        return False
    said = [torch.import_error.message if torch.import_error else ""]
    said += [torch.crash.stderr_tail] if torch.crash is not None else []
    text = "\n".join(said).lower()
    return torch.crash is not None or any(f.lower() in text for f in folders) or "libtorch" in text


@rule(
    code="ED420",
    name="libtorch-on-ld-library-path",
    severity=Severity.WARNING,
    summary="LD_LIBRARY_PATH holds a libtorch C++ distribution's libraries",
    needs=(ToolkitFacts,),
    doc=RuleDoc(
        what="LD_LIBRARY_PATH folders holding libtorch*.so or libc10*.so other than the examined "
        "torch's own torch/lib.",
        why="The loader takes LD_LIBRARY_PATH first, so the Python package loads the C++ download's "
        "libtorch_cpu.so or libtorch_python.so: import torch segfaults or fails with 'undefined "
        "symbol', and extensions such as torch_scatter stop loading.",
        fix="Remove the libtorch folder from LD_LIBRARY_PATH and set it only where the C++ program runs.",
        example="`export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:~/libtorch/lib` in ~/.bashrc for C++ work: "
        "'libtorch_python.so: undefined symbol: PyThread_tss_alloc'.",
    ),
)
def libtorch_on_ld_library_path(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    if ctx.platform.os != "linux":
        return
    own = _torch_lib(ctx)
    bundled = {c.resolved for c in facts.bundled_libraries if c.family == "libtorch"}
    copies = [
        c
        for c in facts.loader_path_libraries
        if c.family == "libtorch" and c.resolved not in bundled and (own is None or c.resolved != own)
    ]
    if not copies:
        return
    folders = list(dict.fromkeys(c.directory for c in copies))
    positions = sorted({c.position for c in copies if c.position is not None})
    broken = _import_broken(ctx, folders)
    effect = (
        "This is why importing torch fails here."
        if broken
        else "Importing torch, or an extension built against it, can segfault or fail with 'undefined "
        "symbol' whenever the two builds differ."
    )
    files = ", ".join(dict.fromkeys(f for c in copies for f in c.files[:4]))
    yield Hit(
        title=f"LD_LIBRARY_PATH holds a libtorch C++ distribution ({', '.join(folders)})",
        detail=f"{files} there are found before the Python package's own torch/lib, because the "
        f"loader searches LD_LIBRARY_PATH first. {effect}",
        evidence=tuple(
            f"LD_LIBRARY_PATH[{c.position}] = {c.directory}: {', '.join(c.files[:3])}" for c in copies
        ),
        fixes=(
            _check_without(ctx, "(torch brings its own libraries)"),
            *path_removal_fixes(
                "linux",
                facts.shell,
                "LD_LIBRARY_PATH",
                facts.ld_library_path,
                positions,
                "(set it only for the C++ program: `LD_LIBRARY_PATH=.../libtorch/lib ./app`)",
            ),
        ),
    )


def _stub(copy: LibraryCopy) -> bool:
    return copy.family == "libcuda" and posixpath.basename(copy.directory.rstrip("/")) == "stubs"


@rule(
    code="ED421",
    name="stub-libcuda-on-loader-path",
    severity=Severity.WARNING,
    summary="LD_LIBRARY_PATH holds the CUDA toolkit's stub libcuda.so",
    needs=(ToolkitFacts,),
    doc=RuleDoc(
        what="LD_LIBRARY_PATH folders named stubs that hold a libcuda.so (the toolkit's "
        "lib64/stubs, which exists only to link against).",
        why="A program that loads libcuda.so (or libcuda.so.1, once someone links it there) gets "
        "the stub instead of the driver: every CUDA call fails with CUDA_ERROR_STUB_LIBRARY "
        "('CUDA driver is a stub library').",
        fix="Remove the stubs folder from LD_LIBRARY_PATH (keep it for linking only, e.g. "
        "LIBRARY_PATH), or delete the stubs from the image.",
        example="LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs:... in a Docker image: tensorpipe loads "
        "stubs/libcuda.so and fails with 'res != CUDA_SUCCESS'.",
    ),
)
def stub_libcuda_on_loader_path(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    if ctx.platform.os != "linux":
        return
    stubs = [c for c in facts.loader_path_libraries if _stub(c)]
    if not stubs:
        return
    soname = any("libcuda.so.1" in c.files for c in stubs)
    effect = (
        "It holds libcuda.so.1, the driver's own soname: torch itself loads the stub and CUDA "
        "initialisation fails ('CUDA driver is a stub library', error 34)."
        if soname
        else "Programs that load libcuda.so by that name (tensorpipe, NVIDIA Warp, some JIT "
        "compilers) get the stub and fail with CUDA_ERROR_STUB_LIBRARY; the driver's real "
        "libcuda.so.1 is never reached for them."
    )
    positions = sorted({c.position for c in stubs if c.position is not None})
    yield Hit(
        title="LD_LIBRARY_PATH holds the CUDA toolkit's stub libcuda "
        f"({', '.join(c.directory for c in stubs)})",
        detail=f"The stubs folder of a toolkit exists to link programs, never to run them. {effect}",
        evidence=tuple(f"LD_LIBRARY_PATH[{c.position}] = {c.directory}: {', '.join(c.files)}" for c in stubs),
        fixes=path_removal_fixes(
            "linux",
            facts.shell,
            "LD_LIBRARY_PATH",
            facts.ld_library_path,
            positions,
            "(the driver's libcuda.so.1 is found without it)",
        ),
    )


def _has_major(copies: tuple[LibraryCopy, ...] | list[LibraryCopy], major: str) -> bool:
    """Whether a cuDNN library of soname major `major` (libcudnn*.so.8, libcudnn.so.8.9.2) is there."""
    pattern = re.compile(rf"\.so\.{re.escape(major)}(?:\.|$)")
    return any(c.family == "cudnn" and any(pattern.search(f) for f in c.files) for c in copies)


@rule(
    code="ED422",
    name="cudnn-not-on-loader-path-for-companion",
    severity=Severity.WARNING,
    summary="a package that loads cuDNN by soname finds none of the major it needs on the loader path",
    needs=(ToolkitFacts, ErrorEvidence),
    doc=RuleDoc(
        what="Packages that dlopen cuDNN through the dynamic loader (CTranslate2, under faster-whisper "
        "and WhisperX), the cuDNN major version their release needs, and whether a cuDNN of that "
        "major is on LD_LIBRARY_PATH or in the system's library folders; else where a copy is (torch's "
        "nvidia/cudnn/lib or torch/lib).",
        why="torch finds its own cuDNN through its RPATH, but these packages ask the loader, which "
        "never looks in site-packages: 'Could not load library libcudnn_ops_infer.so.8 ... cannot "
        "open shared object file', and the process aborts.",
        fix="Put the copy's folder on LD_LIBRARY_PATH (the command is shown), or install the system "
        "cuDNN of that major version.",
        example="faster-whisper with ctranslate2 3.24 and torch 2.1.1+cu118: cuDNN 8 is only in "
        "site-packages/nvidia/cudnn/lib.",
    ),
)
def cudnn_not_on_loader_path_for_companion(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    if ctx.platform.os != "linux":
        return
    evidence = ctx.need(ErrorEvidence)
    said = evidence.get("cudnn-soname-missing")
    needs: list[tuple[str, str]] = []  # (who, major)
    for package in facts.soname_users:
        loader = cuda_libraries.soname_loader(package.name, package.version)
        if loader is not None:
            needs.append((f"{package.name} {package.version} ({loader.used_by})", loader.major))
    if said is not None and said.group("major") and not needs:
        needs.append(("the program that failed", str(said.group("major"))))
    for who, major in needs:
        if _has_major(facts.loader_path_libraries, major) or _has_major(facts.system_libraries, major):
            continue
        copy = next(
            (c for c in facts.bundled_libraries if c.family == "cudnn" and _has_major([c], major)),
            None,
        )
        missing = f"libcudnn*.so.{major}"
        if said is not None and said.group("lib"):
            missing = str(said.group("lib"))
        if copy is not None:
            fixes: tuple[Fix, ...] = (
                Fix(
                    summary=f"Put the cuDNN {major} that came with torch ({copy.package or copy.directory}) "
                    "on the loader path for this session (add the same line to the environment's activate "
                    "script or the service's environment for good)",
                    commands=(
                        # An unset LD_LIBRARY_PATH gets the folder alone: "dir:" would add the current folder.
                        prepend_command("linux", facts.shell, "LD_LIBRARY_PATH", copy.directory)
                        if facts.ld_library_path
                        else set_command("linux", facts.shell, "LD_LIBRARY_PATH", copy.directory),
                    ),
                ),
            )
            where = (
                f"A cuDNN {major} is installed, but only in {copy.directory}, which only torch itself finds."
            )
        else:
            fixes = (
                Fix(
                    summary=f"Install cuDNN {major} where the loader finds it (the system's cuDNN {major} "
                    f"package, e.g. libcudnn{major} on Ubuntu), or use the {who.split(' ')[0]} release made "
                    "for the cuDNN you have",
                    link=FASTER_WHISPER_GPU,
                ),
            )
            where = (
                f"No cuDNN {major} is on LD_LIBRARY_PATH, in the system's library folders or in "
                "site-packages."
            )
        yield Hit(
            title=f"{who} needs cuDNN {major} from the loader's search path, which has none",
            detail=f"It loads {missing} with dlopen by name, so only LD_LIBRARY_PATH and the system's "
            f"library folders count. {where} Expect 'Could not load library {missing} ... cannot open "
            "shared object file' and an abort at the first transcription.",
            evidence=(
                f"{who}: cuDNN {major}",
                "LD_LIBRARY_PATH: " + (":".join(facts.ld_library_path) or "unset"),
            ),
            fixes=fixes,
        )
