"""Where a torch release looks for the DLLs it needs, against where this environment keeps them:
torch 2.3.0's MKL DLLs in a --user or --target scheme (ED612), and torch releases older than the
fix of their DLL search for Python 3.8 and for venvs over a base Python (ED615)."""

from __future__ import annotations

import ntpath
from collections.abc import Iterator

from packaging.version import Version

from envdoctor.knowledge import parse_version
from envdoctor.knowledge import windows as knowledge
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.probes.windows import SCOPE_TARGET, SCOPE_USER, WindowsFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import planned_fix
from envdoctor.rules.windows.dlls import torch_version
from envdoctor.rules.windows.load_errors import load_failures

VENV_FOLDER = "C:\\venvs\\torch"


def _wants_cuda(torch: TorchFacts) -> bool | None:
    return bool(torch.cuda) or (torch.local_label or "").startswith("cu") or None


def _lower(path: str | None) -> str:
    return (path or "").rstrip("\\").lower()


def _searched_by_that_release(facts: WindowsFacts) -> set[str]:
    """The folders the installed torch hands to add_dll_directory (the DLL check loads as it does:
    torch 2.3.0 does not add the user scheme's Library\\bin, which came with 2.3.1)."""
    load = facts.dll_load
    return {_lower(load.torch_lib), *(_lower(d) for d in load.dll_directories)}


@rule(
    code="ED612",
    name="torch-mkl-dlls-outside-its-dll-search",
    severity=Severity.ERROR,
    summary="torch 2.3.0 installed for one user (or into a --target folder) cannot find its MKL DLLs",
    needs=(WindowsFacts, TorchFacts),
    doc=RuleDoc(
        what="torch's release against windows.json user_install_mkl (2.3.0), the scheme torch was "
        "installed in (the environment's site-packages, the user site of pip --user, another folder "
        "of pip --target), where the mkl_*.dll files are, and the [WinError 126] on shm.dll.",
        why="torch 2.3.0's shm.dll needs the mkl wheel's DLLs, which pip puts in that scheme's "
        "Library\\bin; torch 2.3.0 searches only the environment's Library\\bin, so an install for one "
        "user or into a target folder cannot be imported. Reinstalling the same release or the VC++ "
        "redistributable does not change that.",
        fix="Upgrade torch to 2.3.1 or newer (which adds the user scheme's Library\\bin), or install "
        "into a virtual environment; a --target folder's Library\\bin can be given to "
        "os.add_dll_directory before import torch.",
        example="pip install --user torch==2.3.0 on python.org's Python 3.12: [WinError 126] ... Error "
        'loading "...\\AppData\\Roaming\\Python\\Python312\\site-packages\\torch\\lib\\shm.dll" '
        "(pytorch/pytorch#125109).",
    ),
)
def torch_mkl_dlls_outside_its_dll_search(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(WindowsFacts)
    torch = ctx.need(TorchFacts)
    info = knowledge.user_install_mkl()
    version = torch_version(ctx)
    if not info.affects(version) or facts.install_scope not in (SCOPE_USER, SCOPE_TARGET):
        return
    failed = [f for f in load_failures(ctx) if f.dll == info.dll and f.winerror == info.winerror]
    if torch.imported and not failed:
        return
    searched = _searched_by_that_release(facts)
    outside = sorted(
        {ntpath.dirname(f.path) for f in facts.mkl_files if _lower(ntpath.dirname(f.path)) not in searched}
    )
    scheme = "for one user (pip --user)" if facts.install_scope == SCOPE_USER else "into a folder of its own"
    where = (
        f"The MKL DLLs are in {', '.join(outside)}, which torch {version} does not search."
        if outside
        else "pip puts the mkl wheel's DLLs in that scheme's Library\\bin, which torch "
        f"{version} does not search (no mkl_*.dll was found where it looks)."
    )
    seen = (
        f" {failed[0].dll} failed with [WinError {failed[0].winerror}] in {failed[0].said}." if failed else ""
    )
    wants = _wants_cuda(torch)
    fixes: list[Fix] = []
    upgrade = planned_fix(
        ctx,
        f"Upgrade to torch {info.fixed_in}, which searches there",
        torch=str(info.fixed_in),
        want_cuda=wants,
    )
    if upgrade is not None:
        fixes.append(upgrade)
    newest = planned_fix(ctx, "The newest torch that fits this machine", want_cuda=wants)
    if newest is not None:
        fixes.append(newest)
    if facts.install_scope == SCOPE_TARGET and outside:
        fixes.append(
            Fix(
                summary="For an application that installs torch into its own folder: before `import "
                f'torch`, call os.add_dll_directory(r"{outside[0]}") (carson-katri/dream-textures#796)',
            )
        )
    fixes.append(
        Fix(
            summary="Install torch into a virtual environment instead of the user scheme or a target "
            "folder (the mkl DLLs then land in the environment's Library\\bin)",
            commands=(f"py -m venv {VENV_FOLDER}", f"{VENV_FOLDER}\\Scripts\\activate"),
        )
    )
    yield Hit(
        title=f"torch {version} is installed {scheme} and cannot find its MKL DLLs",
        detail=f"torch {version}'s {info.dll} needs the DLLs of the mkl wheel. {where}{seen} This is a "
        f"regression of torch {', '.join(str(v) for v in info.torch)} on Windows, fixed in {info.fixed_in}; "
        "reinstalling the same torch or the VC++ redistributable does not help.",
        evidence=(
            f"torch {version}",
            f"installed in: {facts.install_scope} scheme ({facts.torch_dir})",
            *(f"mkl DLLs in {o}" for o in outside[:2]),
        ),
        fixes=tuple(fixes),
    )


def _python_version(ctx: RuleContext) -> Version | None:
    python = ctx.get(PythonFacts)
    if python is None:
        return None
    return parse_version(".".join(python.version.split(".")[:2]))


def _venv_over_base(facts: WindowsFacts, python: PythonFacts | None) -> str | None:
    """The base Python's Library\\bin when this is a venv over a base that has one (Anaconda) and
    the installed torch does not search it (the DLL check's missed_directories)."""
    load = facts.dll_load
    if python is None or not python.is_venv or not load.base_exec_prefix:
        return None
    if _lower(load.base_exec_prefix) == _lower(load.exec_prefix):
        return None
    wanted = _lower(ntpath.join(load.base_exec_prefix, "Library", "bin"))
    return next((d for d in load.missed_directories if _lower(d) == wanted), None)


@rule(
    code="ED615",
    name="torch-too-old-for-this-dll-search",
    severity=Severity.ERROR,
    summary="a torch older than the fix of its DLL search for Python 3.8+ or for a venv over a base Python",
    needs=(WindowsFacts, TorchFacts),
    doc=RuleDoc(
        what="torch's release against windows.json dll_search_fixes: torch before 1.5 on Python >= 3.8 "
        "(which stopped searching PATH for extension modules' DLLs), torch before 1.6 in a venv "
        "whose base Python keeps DLLs in its Library\\bin (an Anaconda base).",
        why="Those releases find their DLLs the old way: on Python 3.8 a DLL torch loads on first use "
        "(caffe2_nvrtc.dll) is not found, 'RuntimeError: error in LoadLibraryA' at the first CUDA op; "
        "in such a venv the base's Library\\bin is not searched and import torch fails.",
        fix="Upgrade torch (the exact command is shown); for that old torch, a Python 3.7 (or a venv "
        "not over that base) instead.",
        example="torch 1.4.0 on python.org's Python 3.8: torch.cat on CUDA raises 'RuntimeError: error "
        "in LoadLibraryA' (pytorch/pytorch#35358).",
    ),
)
def torch_too_old_for_this_dll_search(ctx: RuleContext) -> Iterator[Hit]:
    if ctx.platform.os != "windows":
        return
    facts = ctx.need(WindowsFacts)
    torch = ctx.need(TorchFacts)
    installed = parse_version((torch_version(ctx) or "").split("+", 1)[0])
    python_version = _python_version(ctx)
    python = ctx.get(PythonFacts)
    if installed is None or python_version is None:
        return
    for fix in knowledge.dll_search_fixes():
        if installed >= fix.fixed_in or python_version < fix.python:
            continue
        base_bin = _venv_over_base(facts, python) if fix.condition == "venv_over_base" else None
        if fix.condition == "venv_over_base" and base_bin is None:
            continue
        fixes: list[Fix] = []
        planned = planned_fix(ctx, "Upgrade torch", want_cuda=_wants_cuda(torch))
        if planned is not None:
            fixes.append(planned)
        if fix.condition == "python38":
            fixes.append(Fix(summary=f"To keep torch {installed}, use it from a Python 3.7 environment"))
            situation = f"Python {python_version}"
        else:
            fixes.append(
                Fix(
                    summary=f"To keep torch {installed}, create the environment with the base Python's "
                    "own tools (conda create) rather than a venv over it",
                )
            )
            base = facts.dll_load.base_exec_prefix
            situation = f"a venv over {base}, whose {base_bin} torch {installed} does not search"
        yield Hit(
            title=f"torch {installed} predates the fix of its DLL search for {situation}",
            detail=f"{fix.why}. Fixed in torch {fix.fixed_in}; the symptom: '{fix.symptom}'. Reinstalling "
            "the same torch does not help.",
            evidence=(
                f"torch {installed}",
                f"Python {python_version}",
                *((f"base DLLs: {base_bin}",) if base_bin else ()),
            ),
            fixes=tuple(fixes),
        )
        return
