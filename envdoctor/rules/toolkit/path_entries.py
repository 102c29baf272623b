"""CUDA folders on PATH and in CUDA_* variables: several toolkits at once (ED405), leftovers of
removed toolkits (ED406)."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.toolkit import CudaBinEntry, ToolkitFacts
from envdoctor.probes.windows import PATH, WindowsFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import (
    is_system_folder,
    path_removal_fixes,
    prepend_command,
    set_variable_fixes,
)
from envdoctor.rules.toolkit.extension_setup import malformed_homes
from envdoctor.rules.toolkit.library_shadowing import bins_before_torch_dlls
from envdoctor.rules.toolkit.toolkits import BUNDLED, major, major_minor, path_name, toolkit_bins, torch_cuda
from envdoctor.rules.windows.dll_loading import shadowing_cuda


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
        "shown), keeping the one that matches torch's CUDA version, unless its DLLs would shadow "
        "torch's on Windows (ED608, ED409): then none stays, and builds use CUDA_PATH.",
        example="CUDA v11.8\\bin and v12.1\\bin both on the Windows PATH.",
    ),
)
def several_cuda_toolkits_on_path(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    bins = toolkit_bins(facts)
    versions = {b.version for b in bins}
    if len(bins) < 2 or len(versions) < 2:
        return
    cuda = torch_cuda(ctx)
    home = facts.cuda_home
    home_key = home.path.rstrip("\\/").lower() if home is not None else None
    # The torch build's CUDA version decides which toolkit stays, among those no other rule takes off
    # PATH for torch's sake (ED409, ED608): two findings never remove each other's kept entry.
    rejected = _removed_for_torch(ctx, facts)
    candidates = [b for b in bins if b.index not in rejected]
    keep = (
        next((b for b in candidates if cuda and major_minor(b.version) == cuda), None)
        or next((b for b in candidates if cuda and major(b.version) == major(cuda)), None)
        or next((b for b in candidates if home_key and b.path.lower().startswith(home_key)), None)
        or next(iter(candidates), None)
    )
    others = [b for b in bins if b is not keep]
    # A system folder (/usr/local/bin holding an nvcc wrapper) stays: other programs live there.
    system = [b for b in others if is_system_folder(ctx.platform.os, b.path)]
    others = [b for b in others if b not in system]
    drop = {b.index for b in others}
    drop |= {b.index for b in facts.cuda_bins if b.duplicate_of in drop}
    listing = "; ".join(f"PATH[{b.index}] {b.path} (CUDA {b.version or '?'})" for b in bins)
    detail = f"{listing}. The first one wins: `nvcc` is CUDA {bins[0].version or '?'} from {bins[0].path}."
    if home is not None and home.version and major_minor(home.version) != major_minor(bins[0].version):
        detail += (
            f" But {home.chosen_by} points at CUDA {home.version} ({home.path}), so build tools "
            "that use CUDA_HOME and those that run nvcc from PATH disagree."
        )
    detail += f" Mixed toolkits confuse builds; torch itself is unaffected: {BUNDLED}."
    if keep is not None:
        why = f"(keeping CUDA {keep.version or '?'} at {keep.path})"
    else:
        # Every toolkit here is one that ED409 or ED608 takes off PATH for torch's sake.
        builds = (
            f"; builds find CUDA {home.version or '?'} through {home.chosen_by}"
            if home is not None and home.exists and home.chosen_by in ("CUDA_HOME", "CUDA_PATH")
            else ""
        )
        why = f"(their DLLs would shadow torch's, which needs no toolkit{builds})"
    fixes = path_removal_fixes(ctx.platform.os, facts.shell, path_name(ctx), facts.path, sorted(drop), why)
    if system and keep is not None:
        fixes += (_system_nvcc_fix(ctx, facts, keep, system),)
    yield Hit(
        title=f"{len(bins)} CUDA toolkits are on PATH; "
        f"CUDA {major_minor(bins[0].version) or '?'} comes first",
        detail=detail,
        evidence=tuple(f"PATH[{b.index}] = {b.path}" for b in bins),
        fixes=fixes,
    )


def _system_nvcc_fix(
    ctx: RuleContext, facts: ToolkitFacts, keep: CudaBinEntry, system: list[CudaBinEntry]
) -> Fix:
    """Name the nvcc file in a system folder and put the kept toolkit ahead of it, dropping nothing."""
    windows = ctx.platform.os == "windows"
    exe = "nvcc.exe" if windows else "nvcc"
    files = []
    for entry in system:
        name = entry.path.rstrip("\\/") + ("\\" if windows else "/") + exe
        wrapper = facts.nvcc.wrapper_for if facts.nvcc and facts.nvcc.path == name else None
        what = f"a script that runs {wrapper}" if wrapper else f"CUDA {entry.version or '?'}"
        files.append(f"{name} ({what})")
    # The kept toolkit goes first, relative to the live value (the removals are their own fixes).
    return Fix(
        summary=f"Leave {', '.join(b.path for b in system)} on {path_name(ctx)}: other programs "
        f"live there. The nvcc in it is {'; '.join(files)}: remove or rename that file if you put "
        f"it there, or put {keep.path} ahead of it for this session",
        commands=(prepend_command(ctx.platform.os, facts.shell, path_name(ctx), keep.path),),
    )


def _removed_for_torch(ctx: RuleContext, facts: ToolkitFacts) -> set[int]:
    """PATH positions that ED409 (another major's bin before torch's DLLs) or ED608 (DLLs named like
    torch's, of other versions) remove: ED405 keeps none of them."""
    rejected = {b.index for b in bins_before_torch_dlls(ctx, facts)[0]}
    windows = ctx.get(WindowsFacts)
    if windows is not None:
        rejected |= {
            f.path_index for f in shadowing_cuda(windows) if f.origin == PATH and f.path_index is not None
        }
    return rejected


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
    malformed = {name for name, *_ in malformed_homes(ctx, facts)}  # ED411 gives those their fix
    stale_vars = [
        s
        for s in facts.cuda_env
        if s.name not in malformed and any(not t.exists and s.name in t.found_by for t in facts.toolkits)
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
                facts.shell,
                path_name(ctx),
                facts.path,
                drop,
                "(leftovers of removed or re-installed CUDA toolkits)",
            )
        )
    for setting in stale_vars:
        fixes.extend(
            set_variable_fixes(ctx.platform.os, facts.shell, setting.name, None, "(its folder is gone)")
        )
    yield Hit(
        title="CUDA leftovers in the environment: " + "; ".join(p.split(":")[0] for p in parts),
        detail="; ".join(parts) + ". Harmless to torch, but they make it hard to tell which toolkit "
        "a build uses, and a toolkit installed there later would silently take effect.",
        evidence=tuple(f"PATH[{b.index}] = {b.path}" for b in missing + repeated)
        + tuple(f"{s.name} = {s.value}" for s in stale_vars),
        fixes=tuple(fixes),
    )
