"""CUDA toolkits and library paths: what torch needs (a driver) against what is installed (toolkits).

The toolkit matters to torch in two ways only: torch.utils.cpp_extension compiles extensions with
it, and its libraries, put on a loader path, can shadow the ones torch bundles. Everything else
is information: a toolkit is never what makes a torch wheel run.
"""

from __future__ import annotations

import dataclasses
import ntpath
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass

from envdoctor import knowledge
from envdoctor.install import plan as install
from envdoctor.knowledge import cuda_libraries
from envdoctor.limits import small_int
from envdoctor.model import Fix, Severity
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.toolkit import CudaBinEntry, LibraryCopy, Toolkit, ToolkitFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import path_removal_fixes, set_variable_fixes
from envdoctor.rules.fixes import GET_STARTED, install_target
from envdoctor.shell import join

TOOLKIT_ARCHIVE = "https://developer.nvidia.com/cuda-toolkit-archive"
CPP_EXTENSION_DOCS = "https://pytorch.org/docs/stable/cpp_extension.html"
BUNDLED = (
    "torch wheels bundle their own CUDA runtime libraries and need only an NVIDIA driver, not a CUDA toolkit"
)


def _torch_cuda(ctx: RuleContext) -> str | None:
    """torch's CUDA version ("12.4"), from torch.version.cuda or the +cuXXX label."""
    torch = ctx.get(TorchFacts)
    if torch is None or not torch.installed:
        return None
    if torch.cuda:
        return ".".join(torch.cuda.split(".")[:2])
    label = torch.local_label
    return knowledge.variant_cuda(label) if label else None


def _major(version: str | None) -> int | None:
    head = (version or "").split(".")[0]
    return small_int(head)


def _major_minor(version: str | None) -> str | None:
    parts = (version or "").split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else None


def _shell(facts: ToolkitFacts) -> str | None:
    return facts.shell


def _usable(toolkits: tuple[Toolkit, ...]) -> list[Toolkit]:
    return [t for t in toolkits if t.exists and t.has_nvcc and t.has_headers]


def _matching_toolkit(facts: ToolkitFacts, cuda: str, exact: bool) -> Toolkit | None:
    """An installed, complete toolkit with torch's major (exact: major.minor) version."""
    for toolkit in _usable(facts.toolkits):
        if exact and toolkit.major_minor == _major_minor(cuda):
            return toolkit
        if not exact and toolkit.major == _major(cuda):
            return toolkit
    return None


def _toolkit_line(toolkit: Toolkit) -> str:
    version = f"CUDA {toolkit.version}" if toolkit.version else "a CUDA toolkit of unknown version"
    return f"{version} at {toolkit.root} ({', '.join(toolkit.found_by)})"


# ED401 ---------------------------------------------------------------------------------------------


@rule(
    code="ED401",
    name="toolkit-not-used-by-torch",
    severity=Severity.INFO,
    summary="a CUDA toolkit is installed but torch does not use it (wheels need only a driver)",
    needs=(ToolkitFacts,),
    doc=RuleDoc(
        what="Whether CUDA toolkits are installed while torch is a CPU build or no NVIDIA driver works.",
        why="The most common misunderstanding: installing the CUDA toolkit to 'get CUDA for "
        "torch'. torch wheels bundle the CUDA runtime and need only the driver; the toolkit "
        "only compiles CUDA code.",
        fix="Nothing, unless you compile CUDA extensions; for GPU torch install the driver "
        "and a CUDA build of torch.",
        example="nvcc 13.0 on PATH, no NVIDIA driver, torch 2.13.0+cpu.",
    ),
)
def toolkit_not_used_by_torch(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    real = [t for t in facts.toolkits if t.exists]
    if not real:
        return
    nvml = ctx.get(NvmlFacts)
    torch = ctx.get(TorchFacts)
    cuda = _torch_cuda(ctx)
    no_driver = nvml is not None and not nvml.working
    if cuda and not no_driver:
        return  # a CUDA torch with a driver: the toolkit rules below judge the details
    newest = max(
        real, key=lambda t: [n for n in map(small_int, (t.version or "0").split(".")) if n is not None]
    )
    name = f"CUDA {newest.major_minor or newest.version} toolkit" if newest.version else "CUDA toolkit"
    if no_driver:
        title = f"a {name} is installed, but no NVIDIA driver works here"
        reason = (
            "A toolkit (nvcc, headers, libraries) compiles CUDA code; running any CUDA program, "
            "torch included, needs the NVIDIA driver, which a toolkit does not contain."
        )
    elif torch is not None and torch.installed:
        title = f"a {name} is installed; torch does not use it"
    else:
        title = f"a {name} is installed; torch will not need it"
        reason = "A toolkit (nvcc, headers, libraries) is only needed to compile CUDA code."
    if torch is not None and torch.installed and not cuda:
        build = f"torch {torch.version or torch.dist_version} is a CPU-only build"
        reason += f" The installed {build}, so it uses neither toolkit nor driver."
    detail = (
        f"Found: {'; '.join(_toolkit_line(t) for t in real)}.\n{reason} Note: {BUNDLED}. "
        "Nothing to fix unless you compile CUDA extensions."
    )
    yield Hit(
        title=title,
        detail=detail,
        evidence=tuple(f"toolkit {t.root}: {t.version}" for t in real)
        + (("nvml.status = " + nvml.status,) if nvml is not None and no_driver else ()),
    )


# ED402 / ED403 -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _ExtensionToolkit:
    torch_cuda: str
    toolkit_cuda: str
    home: str
    chosen_by: str


def _extension_toolkit(ctx: RuleContext) -> _ExtensionToolkit | None:
    facts = ctx.need(ToolkitFacts)
    torch = ctx.get(TorchFacts)
    cuda = _torch_cuda(ctx)
    home = facts.cuda_home
    if torch is None or cuda is None or home is None or not home.version:
        return None
    return _ExtensionToolkit(cuda, home.version, home.path, home.chosen_by)


def _point_cuda_home(ctx: RuleContext, facts: ToolkitFacts, toolkit: Toolkit, why: str) -> tuple[Fix, ...]:
    return set_variable_fixes(ctx.platform.os, _shell(facts), "CUDA_HOME", toolkit.root, why)


def _variant_fix(ctx: RuleContext, toolkit_cuda: str) -> Fix | None:
    """The planner's command for the installed torch release built for the toolkit's CUDA."""
    torch = ctx.get(TorchFacts)
    wanted = _major_minor(toolkit_cuda)
    if torch is None or not torch.public_version or wanted is None:
        return None
    target = dataclasses.replace(
        install_target(ctx, torch=torch.public_version), variant=knowledge.cuda_variant(wanted)
    )
    plan = install.plan(target)
    if not plan.possible:
        return None
    return Fix(
        summary=f"Install the torch build for CUDA {wanted}, which matches the toolkit: {plan.reason}",
        commands=tuple(c.command for c in plan.commands),
        link=GET_STARTED,
    )


@rule(
    code="ED402",
    name="toolkit-major-mismatch-for-extensions",
    severity=Severity.WARNING,
    summary="the toolkit extensions would build with has another CUDA major version than torch",
    needs=(ToolkitFacts, TorchFacts),
    doc=RuleDoc(
        what="The CUDA version of the toolkit torch.utils.cpp_extension would use (CUDA_HOME, "
        "CUDA_PATH, the nvcc on PATH, then the default folder) against torch.version.cuda.",
        why="cpp_extension refuses a major-version mismatch, so pip installs that compile CUDA "
        "code (flash-attn, apex, custom ops) fail. torch itself keeps working.",
        fix="Point CUDA_HOME at an installed toolkit of torch's major version, install one, or "
        "install the torch build that matches the toolkit.",
        example="CUDA_HOME=/usr/local/cuda-11.8 with torch 2.5.1+cu121: 'The detected CUDA "
        "version (11.8) mismatches the version that was used to compile PyTorch (12.1)'.",
    ),
)
def toolkit_major_mismatch_for_extensions(ctx: RuleContext) -> Iterator[Hit]:
    found = _extension_toolkit(ctx)
    if found is None or _major(found.toolkit_cuda) == _major(found.torch_cuda):
        return
    facts = ctx.need(ToolkitFacts)
    message = cuda_libraries.cpp_extension_text("major_mismatch_error").format(
        toolkit=_major_minor(found.toolkit_cuda), torch=found.torch_cuda
    )
    fixes: list[Fix] = []
    matching = _matching_toolkit(facts, found.torch_cuda, exact=False)
    if matching is not None:
        fixes.extend(
            _point_cuda_home(ctx, facts, matching, f"(the installed CUDA {matching.version} toolkit)")
        )
    else:
        fixes.append(
            Fix(
                summary=f"Install a CUDA {found.torch_cuda} toolkit (any {_major(found.torch_cuda)}.x "
                "works; the same minor avoids a warning) and point CUDA_HOME at it",
                link=TOOLKIT_ARCHIVE,
            )
        )
    variant = _variant_fix(ctx, found.toolkit_cuda)
    if variant is not None:
        fixes.append(variant)
    yield Hit(
        title=f"CUDA extensions would build with CUDA {_major_minor(found.toolkit_cuda)}, but torch "
        f"was built with CUDA {found.torch_cuda}",
        detail=f"torch itself is fine: {BUNDLED}. Only compiling CUDA extensions (pip installs "
        "from source of packages such as flash-attn, apex, or your own torch.utils.cpp_extension "
        f"code) uses a toolkit: cpp_extension takes {found.home} ({found.chosen_by}) and refuses "
        f'a different major version with: "{message}"',
        evidence=(
            f"torch CUDA = {found.torch_cuda}",
            f"CUDA_HOME for cpp_extension = {found.home} ({found.chosen_by}), CUDA {found.toolkit_cuda}",
        ),
        fixes=tuple(fixes),
    )


@rule(
    code="ED403",
    name="toolkit-minor-mismatch-for-extensions",
    severity=Severity.INFO,
    summary="the toolkit extensions would build with differs from torch's CUDA in the minor version",
    needs=(ToolkitFacts, TorchFacts),
    doc=RuleDoc(
        what="The same comparison as ED402 when only the minor version differs.",
        why="cpp_extension only warns then ('Most likely this shouldn't be a problem'); the "
        "finding explains that warning before anyone chases it.",
        fix="Nothing in most cases; point CUDA_HOME at a toolkit of the exact version if one is installed.",
        example="nvcc 12.4 with torch 2.7.1+cu126.",
    ),
)
def toolkit_minor_mismatch_for_extensions(ctx: RuleContext) -> Iterator[Hit]:
    found = _extension_toolkit(ctx)
    if found is None or _major(found.toolkit_cuda) != _major(found.torch_cuda):
        return
    if _major_minor(found.toolkit_cuda) == _major_minor(found.torch_cuda):
        return
    facts = ctx.need(ToolkitFacts)
    message = cuda_libraries.cpp_extension_text("minor_mismatch_warning").format(
        toolkit=_major_minor(found.toolkit_cuda), torch=found.torch_cuda
    )
    fixes: tuple[Fix, ...] = ()
    exact = _matching_toolkit(facts, found.torch_cuda, exact=True)
    if exact is not None:
        fixes = _point_cuda_home(ctx, facts, exact, "to build with the exact CUDA version of torch")
    yield Hit(
        title=f"CUDA extensions would build with CUDA {_major_minor(found.toolkit_cuda)}, torch uses "
        f"CUDA {found.torch_cuda}: a minor difference",
        detail=f"torch itself is fine: {BUNDLED}. When compiling CUDA extensions, cpp_extension "
        f'({found.home}, {found.chosen_by}) only warns: "{message}"',
        evidence=(
            f"torch CUDA = {found.torch_cuda}",
            f"CUDA_HOME for cpp_extension = {found.home} ({found.chosen_by}), CUDA {found.toolkit_cuda}",
        ),
        fixes=fixes,
    )


# ED404 ---------------------------------------------------------------------------------------------


@rule(
    code="ED404",
    name="cuda-home-not-a-toolkit",
    severity=Severity.WARNING,
    summary="the CUDA_HOME torch's cpp_extension would use is missing, has no nvcc or no headers",
    needs=(ToolkitFacts, TorchFacts),
    doc=RuleDoc(
        what="For a CUDA build of torch: whether the folder cpp_extension takes as CUDA_HOME "
        "exists and holds bin/nvcc and include/cuda_runtime.h. Without CUDA_HOME/CUDA_PATH it "
        "is the folder above the nvcc on PATH, links not followed.",
        why="A stale CUDA_HOME or an nvcc wrapper in /usr/local/bin makes every CUDA extension "
        "build fail with 'nvcc not found' or a missing cuda_runtime.h.",
        fix="Set CUDA_HOME to the real toolkit folder (the command is shown), or unset a stale one.",
        example="nvcc on PATH is /usr/local/bin/nvcc, a script running /usr/local/cuda-12.4/bin/nvcc: "
        "cpp_extension uses CUDA_HOME=/usr/local, which has no CUDA headers.",
    ),
)
def cuda_home_not_a_toolkit(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    cuda = _torch_cuda(ctx)
    home = facts.cuda_home
    if cuda is None or home is None:
        return
    windows = ctx.platform.os == "windows"
    nvcc = (ntpath if windows else posixpath).join(home.path, "bin", "nvcc.exe" if windows else "nvcc")
    if not home.exists:
        problem = f"{home.path} does not exist"
        consequence = "cpp_extension cannot find nvcc at all"
    elif not home.has_nvcc:
        problem = f"{home.path} has no bin/nvcc"
        consequence = f"cpp_extension stops with \"nvcc not found at '{nvcc}'\""
    elif not home.has_headers:
        problem = f"{home.path} has nvcc but no include/cuda_runtime.h"
        consequence = "compiling fails with 'cuda_runtime.h: No such file or directory'"
    else:
        return
    if home.chosen_by == "nvcc on PATH":
        problem += " (torch derives it as the folder above the nvcc found on PATH, without following links)"
    best = _matching_toolkit(facts, cuda, exact=True) or _matching_toolkit(facts, cuda, exact=False)
    usable = _usable(facts.toolkits)
    target = best or (usable[0] if usable else None)
    fixes: tuple[Fix, ...]
    if target is not None:
        fixes = _point_cuda_home(ctx, facts, target, f"(the CUDA {target.version} toolkit)")
    elif home.chosen_by in ("CUDA_HOME", "CUDA_PATH"):
        fixes = set_variable_fixes(
            ctx.platform.os, _shell(facts), home.chosen_by, None, "(it points nowhere)"
        )
    else:
        fixes = (Fix(summary=f"Install a CUDA {cuda} toolkit and set CUDA_HOME to it", link=TOOLKIT_ARCHIVE),)
    yield Hit(
        title=f"CUDA_HOME as torch's cpp_extension finds it ({home.chosen_by}) is not a usable toolkit",
        detail=f"{problem}, so {consequence} when a CUDA extension is compiled. torch itself is "
        f"unaffected: {BUNDLED}.",
        evidence=(f"CUDA_HOME for cpp_extension = {home.path} ({home.chosen_by})",),
        fixes=fixes,
    )


# ED405 / ED406 -------------------------------------------------------------------------------------


def _toolkit_bins(facts: ToolkitFacts) -> list[CudaBinEntry]:
    return [b for b in facts.cuda_bins if b.has_nvcc and b.duplicate_of is None]


@rule(
    code="ED405",
    name="several-cuda-toolkits-on-path",
    severity=Severity.INFO,
    summary="bin folders of several CUDA toolkits are on PATH; the first wins",
    needs=(ToolkitFacts,),
    doc=RuleDoc(
        what="PATH entries holding nvcc, in order, with each toolkit's version, and whether "
        "CUDA_HOME/CUDA_PATH name the same toolkit as the first nvcc.",
        why="Each CUDA installer adds its bin folder; with several, the nvcc a build runs and "
        "the headers CUDA_HOME provides can disagree.",
        fix="Remove the other toolkits' bin folders from PATH (the exact edit for your shell is "
        "shown), keeping the one that matches torch.",
        example="CUDA v11.8\\bin and v12.1\\bin both on the Windows PATH.",
    ),
)
def several_cuda_toolkits_on_path(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    bins = _toolkit_bins(facts)
    versions = {b.version for b in bins}
    if len(bins) < 2 or len(versions) < 2:
        return
    cuda = _torch_cuda(ctx)
    home = facts.cuda_home
    home_key = home.path.rstrip("\\/").lower() if home is not None else None
    keep = (
        next((b for b in bins if cuda and _major_minor(b.version) == cuda), None)
        or next((b for b in bins if cuda and _major(b.version) == _major(cuda)), None)
        or next((b for b in bins if home_key and b.path.lower().startswith(home_key)), None)
        or bins[0]
    )
    others = [b for b in bins if b is not keep]
    drop = {b.index for b in others}
    drop |= {b.index for b in facts.cuda_bins if b.duplicate_of in drop}
    listing = "; ".join(f"PATH[{b.index}] {b.path} (CUDA {b.version or '?'})" for b in bins)
    detail = f"{listing}. The first one wins: `nvcc` is CUDA {bins[0].version or '?'} from {bins[0].path}."
    if home is not None and home.version and _major_minor(home.version) != _major_minor(bins[0].version):
        detail += (
            f" But {home.chosen_by} points at CUDA {home.version} ({home.path}), so build tools "
            "that use CUDA_HOME and those that run nvcc from PATH disagree."
        )
    detail += f" Mixed toolkits confuse builds; torch itself is unaffected: {BUNDLED}."
    why = f"(keeping CUDA {keep.version or '?'} at {keep.path})"
    yield Hit(
        title=f"{len(bins)} CUDA toolkits are on PATH; "
        f"CUDA {_major_minor(bins[0].version) or '?'} comes first",
        detail=detail,
        evidence=tuple(f"PATH[{b.index}] = {b.path}" for b in bins),
        fixes=path_removal_fixes(
            ctx.platform.os, _shell(facts), _path_name(ctx), facts.path, sorted(drop), why
        ),
    )


def _path_name(ctx: RuleContext) -> str:
    return "Path" if ctx.platform.os == "windows" else "PATH"


@rule(
    code="ED406",
    name="stale-cuda-path-entries",
    severity=Severity.INFO,
    summary="PATH or CUDA_* variables name deleted or repeated CUDA folders",
    needs=(ToolkitFacts,),
    doc=RuleDoc(
        what="CUDA-looking PATH entries that no longer exist or appear twice, and CUDA_HOME, "
        "CUDA_PATH or CUDA_PATH_Vx_y naming folders that do not exist.",
        why="Leftovers of uninstalled toolkits hide which toolkit is really in use and break "
        "tools that trust CUDA_PATH.",
        fix="Remove the entries and variables (the exact edit for your shell is shown).",
        example="PATH still holds /usr/local/cuda-10.2/bin after that toolkit was removed.",
    ),
)
def stale_cuda_path_entries(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    missing = [b for b in facts.cuda_bins if not b.exists and b.duplicate_of is None]
    repeated = [b for b in facts.cuda_bins if b.duplicate_of is not None]
    stale_vars = [
        s for s in facts.cuda_env if any(not t.exists and s.name in t.found_by for t in facts.toolkits)
    ]
    if not (missing or repeated or stale_vars):
        return
    parts = []
    if missing:
        parts.append("missing folders on PATH: " + ", ".join(f"PATH[{b.index}] {b.path}" for b in missing))
    if repeated:
        parts.append(
            "repeated on PATH: "
            + ", ".join(f"PATH[{b.index}] {b.path} (same as PATH[{b.duplicate_of}])" for b in repeated)
        )
    if stale_vars:
        parts.append(
            "variables naming missing folders: " + ", ".join(f"{s.name}={s.value}" for s in stale_vars)
        )
    fixes: list[Fix] = []
    drop = [b.index for b in missing + repeated]
    if drop:
        fixes.extend(
            path_removal_fixes(
                ctx.platform.os,
                _shell(facts),
                _path_name(ctx),
                facts.path,
                drop,
                "(leftovers of removed or re-installed CUDA toolkits)",
            )
        )
    for setting in stale_vars:
        fixes.extend(
            set_variable_fixes(ctx.platform.os, _shell(facts), setting.name, None, "(its folder is gone)")
        )
    yield Hit(
        title="CUDA leftovers in the environment: " + "; ".join(p.split(":")[0] for p in parts),
        detail="; ".join(parts) + ". Harmless to torch, but they make it hard to tell which toolkit "
        "a build uses, and a toolkit installed there later would silently take effect.",
        evidence=tuple(f"PATH[{b.index}] = {b.path}" for b in missing + repeated)
        + tuple(f"{s.name} = {s.value}" for s in stale_vars),
        fixes=tuple(fixes),
    )


# ED407 / ED408 -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Shadow:
    copy: LibraryCopy
    bundled: LibraryCopy


def _torch_site(ctx: RuleContext) -> str | None:
    torch = ctx.get(TorchFacts)
    if torch is None or not torch.location:
        return None
    # .../site-packages/torch/__init__.py -> .../site-packages
    return posixpath.dirname(posixpath.dirname(torch.location))


def _shadows(ctx: RuleContext) -> list[_Shadow]:
    facts = ctx.need(ToolkitFacts)
    if ctx.platform.os != "linux" or _torch_cuda(ctx) is None:
        return []
    site = _torch_site(ctx)
    bundled = [b for b in facts.bundled_libraries if site is None or b.directory.startswith(site + "/")]
    found = []
    for copy in facts.loader_path_libraries:
        for wheel in bundled:
            if wheel.family != copy.family or wheel.resolved == copy.resolved:
                continue
            if not copy.version or not wheel.version or _major(copy.version) != _major(wheel.version):
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
        effect = "This is why `import torch` fails (see the import error above)."
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
        "linux", _shell(facts), "LD_LIBRARY_PATH", facts.ld_library_path, positions, "(torch brings its own)"
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


# ED409 ---------------------------------------------------------------------------------------------


def _torch_dll_dirs(ctx: RuleContext) -> list[str]:
    torch = ctx.get(TorchFacts)
    python = ctx.get(PythonFacts)
    dirs = []
    if torch is not None and torch.location:
        dirs.append(ntpath.join(ntpath.dirname(torch.location), "lib"))
    if python is not None:
        dirs.append(ntpath.join(python.prefix, "Library", "bin"))
    return [d.rstrip("\\").lower() for d in dirs]


@rule(
    code="ED409",
    name="cuda-bin-before-torch-dlls",
    severity=Severity.WARNING,
    summary="on Windows, a CUDA bin folder of another major version precedes torch's DLLs on PATH",
    needs=(ToolkitFacts, TorchFacts),
    doc=RuleDoc(
        what="On Windows, when torch's DLL folders (torch\\lib, the conda env's Library\\bin) are "
        "on PATH: CUDA toolkit bin folders before them whose major version differs from torch's.",
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
    cuda = _torch_cuda(ctx)
    if cuda is None:
        return
    torch_dirs = _torch_dll_dirs(ctx)
    positions = [i for i, entry in enumerate(facts.path) if entry.rstrip("\\").lower() in torch_dirs]
    if not positions:
        return  # torch's folders are not on PATH: its loader puts them first itself
    first = positions[0]
    early = [
        b for b in _toolkit_bins(facts) if b.index < first and b.version and _major(b.version) != _major(cuda)
    ]
    if not early:
        return
    listing = ", ".join(f"PATH[{b.index}] {b.path} (CUDA {b.version})" for b in early)
    yield Hit(
        title=f"a CUDA {_major_minor(early[0].version)} bin folder comes before torch's DLLs on PATH "
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


RULES = (
    toolkit_not_used_by_torch,
    toolkit_major_mismatch_for_extensions,
    toolkit_minor_mismatch_for_extensions,
    cuda_home_not_a_toolkit,
    several_cuda_toolkits_on_path,
    stale_cuda_path_entries,
    ld_library_path_shadows_torch_cuda_libs,
    ld_library_path_breaks_torch_import,
    cuda_bin_before_torch_dlls,
)
