"""CUDA libraries of other versions ahead of the ones torch bundles: on LD_LIBRARY_PATH (ED407,
and ED408 when import torch fails because of them), and CUDA bin folders before torch's DLLs on
the Windows PATH (ED409)."""

from __future__ import annotations

import ntpath
import posixpath
from collections.abc import Iterator

from envdoctor.knowledge import cuda_libraries
from envdoctor.knowledge.signatures import ErrorEvidence
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.toolkit import CudaBinEntry, LibraryCopy, ToolkitFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import path_removal_fixes
from envdoctor.rules.toolkit.toolkits import major, major_minor, toolkit_bins, torch_cuda
from envdoctor.shell import join
from envdoctor.util.records import record


@record
class _Shadow:
    copy: LibraryCopy
    bundled: LibraryCopy


def _torch_site(ctx: RuleContext) -> str | None:
    torch = ctx.get(TorchFacts)
    if torch is None or not torch.location:
        return None
    # .../site-packages/torch/__init__.py -> .../site-packages
    return posixpath.dirname(posixpath.dirname(torch.location))


def _cudnn_release(code: int) -> str:
    """torch.backends.cudnn.version() as a release: 8302 -> 8.3.2, 90100 -> 9.1.0."""
    if code >= 90000:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"


def _compiled_cudnn(ctx: RuleContext, site: str | None) -> LibraryCopy | None:
    """The cuDNN torch was compiled against, where no nvidia-cudnn wheel says it: from
    torch.backends.cudnn.version(), or from the 'cuDNN version incompatibility' error it raised
    (torch <= 1.13 carries cuDNN in torch/lib, whose file names tell only the major version)."""
    torch = ctx.get(TorchFacts)
    version = _cudnn_release(torch.cudnn) if torch is not None and torch.cudnn else None
    evidence = ctx.get(ErrorEvidence)
    said = evidence.get("cudnn-version-incompatibility") if evidence is not None else None
    if said is not None and said.group("compiled"):
        version = ".".join(p.strip() for p in str(said.group("compiled")).split(","))
    if version is None:
        return None
    where = f"{site}/torch/lib" if site else "torch/lib"
    return LibraryCopy("cudnn", where, where, (), version, "torch (compiled against)")


def _shadows(ctx: RuleContext) -> list[_Shadow]:
    facts = ctx.need(ToolkitFacts)
    if ctx.platform.os != "linux" or torch_cuda(ctx) is None:
        return []
    site = _torch_site(ctx)
    bundled = [b for b in facts.bundled_libraries if site is None or b.directory.startswith(site + "/")]
    if not any(b.family == "cudnn" and b.version and "." in b.version for b in bundled):
        compiled = _compiled_cudnn(ctx, site)
        if compiled is not None:
            bundled.append(compiled)
    found = []
    for copy in facts.loader_path_libraries:
        for wheel in bundled:
            if wheel.family != copy.family or wheel.resolved == copy.resolved:
                continue
            if not copy.version or not wheel.version or major(copy.version) != major(wheel.version):
                continue  # another soname major is never picked in place of torch's
            if cuda_libraries.same_release(copy.version, wheel.version) is False:
                found.append(_Shadow(copy, wheel))
                break
    return found


def _import_blames(ctx: RuleContext, shadows: list[_Shadow]) -> bool:
    torch = ctx.get(TorchFacts)
    if torch is None or torch.import_error is None:
        return False
    message = torch.import_error.message.lower()
    return any(s.copy.family in message or s.copy.directory.lower() in message for s in shadows)


def _shadow_hit(ctx: RuleContext, shadows: list[_Shadow], broken: bool) -> Hit:
    facts = ctx.need(ToolkitFacts)
    lines = [
        f"LD_LIBRARY_PATH[{s.copy.position}] {s.copy.directory} has {s.copy.family} {s.copy.version} "
        f"({', '.join(s.copy.files[:3])}); torch bundles {s.bundled.version} "
        f"({s.bundled.package or s.bundled.directory})"
        for s in shadows
    ]
    positions = sorted({s.copy.position for s in shadows if s.copy.position is not None})
    families = ", ".join(dict.fromkeys(s.copy.family for s in shadows))
    if broken:
        title = f"LD_LIBRARY_PATH puts other {families} versions ahead of torch's, and import torch fails"
        effect = "This is why `import torch` fails (ED002, shown under this finding)."
    else:
        title = f"LD_LIBRARY_PATH puts other {families} versions ahead of the ones torch bundles"
        effect = (
            "The dynamic loader searches LD_LIBRARY_PATH before torch's own nvidia/*/lib folders, "
            "so these copies are loaded instead: expect 'undefined symbol' import errors, "
            "'Could not load library libcudnn_...' at the first convolution, or "
            "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH."
        )
    python = ctx.interpreter.path
    check = Fix(
        summary="Check that torch works without them",
        commands=(
            f"env -u LD_LIBRARY_PATH {join([python], 'linux')} -c 'import torch; print(torch.__version__)'",
        ),
        link="https://github.com/pytorch/pytorch/issues/111469",
    )
    edits = path_removal_fixes(
        "linux", facts.shell, "LD_LIBRARY_PATH", facts.ld_library_path, positions, "(torch brings its own)"
    )
    return Hit(
        title=title,
        detail="; ".join(lines) + f". {effect}",
        evidence=tuple(lines),
        fixes=(check, *edits),
    )


@rule(
    code="ED407",
    name="ld-library-path-shadows-torch-cuda-libs",
    severity=Severity.WARNING,
    summary="LD_LIBRARY_PATH holds CUDA libraries of other versions than the ones torch bundles",
    needs=(ToolkitFacts, TorchFacts),
    doc=RuleDoc(
        what="libcudnn*, libcublas*, libnccl*, libnvJitLink*, libcudart*, libcusparse* in "
        "LD_LIBRARY_PATH folders against the versions of torch's nvidia-* wheels (same soname "
        "major, other release).",
        why="The loader takes LD_LIBRARY_PATH before torch's own copies, which gives 'undefined "
        "symbol' import errors or cuDNN failures at the first convolution.",
        fix="Remove those folders from LD_LIBRARY_PATH (or unset it); torch brings its own libraries.",
        example="LD_LIBRARY_PATH=/usr/local/cuda-12.1/lib64 with torch 2.5.1+cu124 "
        "(nvidia-nvjitlink-cu12 12.4.127).",
    ),
)
def ld_library_path_shadows_torch_cuda_libs(ctx: RuleContext) -> Iterator[Hit]:
    shadows = _shadows(ctx)
    if shadows and not _import_blames(ctx, shadows):
        yield _shadow_hit(ctx, shadows, broken=False)


@rule(
    code="ED408",
    name="ld-library-path-breaks-torch-import",
    severity=Severity.ERROR,
    summary="import torch fails because LD_LIBRARY_PATH supplies other CUDA library versions",
    needs=(ToolkitFacts, TorchFacts),
    doc=RuleDoc(
        what="The shadowing of ED407 when torch's import error names the shadowed library.",
        why="Pinpoints the LD_LIBRARY_PATH entry behind an 'undefined symbol' import error.",
        fix="Remove those folders from LD_LIBRARY_PATH (or unset it) in the shell and the "
        "start-up file that sets it.",
        example="libcusparse.so.12: undefined symbol: __nvJitLinkComplete_12_4, version "
        "libnvJitLink.so.12, with /usr/local/cuda-12.1/lib64 on LD_LIBRARY_PATH.",
    ),
)
def ld_library_path_breaks_torch_import(ctx: RuleContext) -> Iterator[Hit]:
    shadows = _shadows(ctx)
    if shadows and _import_blames(ctx, shadows):
        yield _shadow_hit(ctx, shadows, broken=True)


def _torch_dll_dirs(ctx: RuleContext) -> list[str]:
    torch = ctx.get(TorchFacts)
    python = ctx.get(PythonFacts)
    dirs = []
    if torch is not None and torch.location:
        dirs.append(ntpath.join(ntpath.dirname(torch.location), "lib"))
    if python is not None:
        dirs.append(ntpath.join(python.prefix, "Library", "bin"))
    return [d.rstrip("\\").lower() for d in dirs]


def bins_before_torch_dlls(ctx: RuleContext, facts: ToolkitFacts) -> tuple[list[CudaBinEntry], int | None]:
    """On Windows, the CUDA bin folders of another major version than torch's before torch's own DLL
    folder on PATH, and that folder's position (ED409 removes them; ED405 never keeps one)."""
    cuda = torch_cuda(ctx)
    if ctx.platform.os != "windows" or cuda is None:
        return [], None
    torch_dirs = _torch_dll_dirs(ctx)
    positions = [i for i, entry in enumerate(facts.path) if entry.rstrip("\\").lower() in torch_dirs]
    if not positions:
        return [], None  # torch's folders are not on PATH: its loader puts them first itself
    first = positions[0]
    early = [
        b for b in toolkit_bins(facts) if b.index < first and b.version and major(b.version) != major(cuda)
    ]
    return early, first


def _cudnn_mismatch_bins(ctx: RuleContext, facts: ToolkitFacts) -> tuple[list[CudaBinEntry], int | None]:
    """With torch's 'cuDNN version incompatibility' error at hand: every toolkit bin folder before
    torch's DLL folder, whatever its CUDA version (a cuDNN copied into a toolkit of torch's own
    CUDA version is loaded just the same)."""
    evidence = ctx.get(ErrorEvidence)
    if evidence is None or evidence.get("cudnn-version-incompatibility") is None:
        return [], None
    torch_dirs = _torch_dll_dirs(ctx)
    positions = [i for i, entry in enumerate(facts.path) if entry.rstrip("\\").lower() in torch_dirs]
    if not positions:
        return [], None
    return [b for b in toolkit_bins(facts) if b.index < positions[0]], positions[0]


@rule(
    code="ED409",
    name="cuda-bin-before-torch-dlls",
    severity=Severity.WARNING,
    summary="on Windows, a CUDA bin folder of another major version precedes torch's DLLs on PATH",
    needs=(ToolkitFacts, TorchFacts, ErrorEvidence),
    doc=RuleDoc(
        what="On Windows, when torch's DLL folders (torch\\lib, the conda env's Library\\bin) are "
        "on PATH: CUDA toolkit bin folders before them whose major version differs from torch's, or any "
        "toolkit bin folder before them when torch reports a 'cuDNN version incompatibility'.",
        why="DLLs found through PATH come from the earlier folder: a same-named cuDNN/cuBLAS "
        "DLL of another version fails with WinError 127.",
        fix="Remove those bin folders from PATH (or move them after torch's).",
        example="CUDA v11.8\\bin first on PATH, the conda env's Library\\bin later, torch 2.5.1+cu124.",
    ),
)
def cuda_bin_before_torch_dlls(ctx: RuleContext) -> Iterator[Hit]:
    if ctx.platform.os != "windows":
        return
    facts = ctx.need(ToolkitFacts)
    cuda = torch_cuda(ctx)
    early, first = bins_before_torch_dlls(ctx, facts)
    cudnn = False
    if not early:
        early, first = _cudnn_mismatch_bins(ctx, facts)
        cudnn = bool(early)
    if not early or cuda is None or first is None:
        return
    listing = ", ".join(f"PATH[{b.index}] {b.path} (CUDA {b.version})" for b in early)
    if cudnn:
        said = ctx.need(ErrorEvidence).get("cudnn-version-incompatibility")
        yield Hit(
            title="a CUDA toolkit's bin folder comes before torch's DLLs on PATH, and torch loaded another "
            "cuDNN from it",
            detail=f"{listing}: before torch's own DLL folder {facts.path[first]} (PATH[{first}]). The error "
            f'("{said.excerpt if said else ""}") shows a cuDNN of another version was loaded: cuDNN is not '
            "part of the CUDA toolkit, so one was copied into that bin folder, and DLLs looked up through "
            "PATH come from there first.",
            evidence=(
                *(f"PATH[{b.index}] = {b.path}" for b in early),
                f"PATH[{first}] = {facts.path[first]}",
            ),
            fixes=(
                *path_removal_fixes(
                    "windows",
                    None,
                    "Path",
                    facts.path,
                    [b.index for b in early],
                    "(torch brings its own cuDNN)",
                ),
                Fix(
                    summary="Alternatively remove the cuDNN DLLs (cudnn*.dll) copied into that toolkit's bin "
                    "folder, or replace them by the cuDNN version torch names in the error"
                ),
            ),
        )
        return
    yield Hit(
        title=f"a CUDA {major_minor(early[0].version)} bin folder comes before torch's DLLs on PATH "
        f"(torch uses CUDA {cuda})",
        detail=f"{listing}: before torch's own DLL folder {facts.path[first]} (PATH[{first}]). DLLs "
        "that are looked up through PATH (torch's fallback after error 126, and packages such as "
        "TensorFlow or ONNX Runtime loaded in the same process) come from that toolkit first; a "
        "same-named DLL of another version makes imports fail with WinError 127.",
        evidence=(*(f"PATH[{b.index}] = {b.path}" for b in early), f"PATH[{first}] = {facts.path[first]}"),
        fixes=path_removal_fixes(
            "windows",
            None,
            "Path",
            facts.path,
            [b.index for b in early],
            f"(torch does not need a CUDA {early[0].version} toolkit)",
        ),
    )
