"""Which copy of a DLL torch gets on Windows, and the fixes the Windows rules share: the VC++
redistributable, PATH edits, an update for an old runtime copy outside System32.

Fixes come in the order experienced users try them: the VC++ redistributable first, then PATH,
then a clean reinstall matched to the Python and the CUDA driver.
"""

from __future__ import annotations

import ntpath

from envdoctor.install.packages import CondaRequest
from envdoctor.knowledge import windows as knowledge
from envdoctor.model.findings import Fix
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.probes.windows import (
    APP_DIR,
    DLL_DIRECTORY,
    ENV,
    PATH,
    SYSTEM32,
    TORCH_LIB,
    DllFile,
    WindowsFacts,
)
from envdoctor.rules.base import RuleContext
from envdoctor.rules.env_edits import path_removal_fixes
from envdoctor.rules.fixes import conda_fix

_ORIGIN_WORDS = {
    TORCH_LIB: "torch\\lib",
    APP_DIR: "python.exe's folder",
    SYSTEM32: "System32",
    DLL_DIRECTORY: "one of torch's DLL directories",
    ENV: "the environment",
    PATH: "a PATH folder",
    "other": "another folder",
}
# The order the loader reaches the folders in for torch (windows.json, dll_loading.search_order).
_SEARCH_RANK = {TORCH_LIB: 0, APP_DIR: 1, SYSTEM32: 2, DLL_DIRECTORY: 3, ENV: 4, PATH: 5}


def torch_version(ctx: RuleContext) -> str | None:
    """The installed torch as pip names it (the runtime floors are per release)."""
    torch = ctx.get(TorchFacts)
    if torch is None or not torch.installed:
        return None
    return torch.dist_version or torch.version


def where(file: DllFile) -> str:
    """Where a DLL copy sits, in words: "System32", "PATH[3] C:\\tools"."""
    words = _ORIGIN_WORDS.get(file.origin, file.origin)
    if file.origin == PATH and file.path_index is not None:
        words = f"PATH[{file.path_index}] {ntpath.dirname(file.path)}"
    return words


def described(file: DllFile) -> str:
    return f"{file.path} ({file.version or 'no version'}, {where(file)})"


def loaded_runtime(facts: WindowsFacts, name: str) -> tuple[DllFile | None, bool]:
    """The copy of `name` torch gets, and whether the DLL check saw it loaded (else: predicted)."""
    seen = facts.dll_load.module(name)
    if seen is not None:
        return seen, True
    candidates = [f for f in facts.runtime(name) if f.origin in (TORCH_LIB, APP_DIR, SYSTEM32, DLL_DIRECTORY)]
    candidates.sort(key=lambda f: _SEARCH_RANK.get(f.origin, 9))
    return (candidates[0] if candidates else None), False


def redist_fixes() -> tuple[Fix, ...]:
    """Installing the VC++ redistributable: the download with PowerShell, or winget."""
    info = knowledge.vc_redist()
    installer = "$env:TEMP\\vc_redist.x64.exe"
    arguments = ",".join(f"'{a}'" for a in info.silent_install.split()[1:])
    return (
        Fix(
            summary="Install the latest Microsoft Visual C++ 2015-2022 (v14) x64 redistributable "
            "(PowerShell as administrator; exit code 0, or 1638 when a newer one is already there, "
            "3010 asks for a reboot), then open a new terminal",
            commands=(
                f'Invoke-WebRequest -Uri {info.download} -OutFile "{installer}"',
                f'Start-Process -FilePath "{installer}" -ArgumentList {arguments} -Wait',
            ),
            link=info.download,
        ),
        Fix(summary="With winget instead", commands=(f"winget install --id {info.winget_id} -e",)),
    )


def folder_removal(ctx: RuleContext, files: list[DllFile], why: str) -> tuple[Fix, ...]:
    """PATH edits removing the folders of `files` that sit on PATH."""
    indices = sorted({f.path_index for f in files if f.origin == PATH and f.path_index is not None})
    facts = ctx.need(WindowsFacts)
    if not indices or max(indices) >= len(facts.path):
        return ()
    return path_removal_fixes("windows", None, "Path", facts.path, indices, why)


def too_old(ctx: RuleContext) -> tuple[DllFile, bool, knowledge.RuntimeMinimum] | None:
    facts = ctx.need(WindowsFacts)
    minimum = knowledge.runtime_minimum(torch_version(ctx))
    if minimum is None:
        return None
    loaded, observed = loaded_runtime(facts, minimum.dll)
    version = knowledge.file_version(loaded.version) if loaded is not None else None
    if loaded is None or version is None or version >= minimum.minimum:
        return None
    return loaded, observed, minimum


def runtime_owner(loaded: DllFile, ctx: RuleContext) -> str:
    python = ctx.get(PythonFacts)
    if python is not None and python.is_conda and loaded.origin in (APP_DIR, ENV):
        return "the conda environment's vc14_runtime package"
    if "site-packages" in loaded.path.lower():
        package = loaded.path.lower().split("site-packages\\", 1)[1].split("\\", 1)[0]
        return f"the Python package '{package}'"
    return f"whatever installed {ntpath.dirname(loaded.path)}"


def copy_fixes(ctx: RuleContext, loaded: DllFile, minimum: knowledge.RuntimeMinimum) -> tuple[Fix, ...]:
    """Ways to stop an old runtime copy outside System32 from loading first."""
    python = ctx.get(PythonFacts)
    fixes: list[Fix] = []
    if python is not None and python.is_conda and loaded.origin in (APP_DIR, ENV):
        fixes.append(
            conda_fix(
                ctx,
                f"Update the conda environment's VC++ runtime package to >= {minimum.minimum}",
                CondaRequest((f"vc14_runtime>={minimum.minimum}",), python.prefix, channel="conda-forge"),
                link="https://github.com/conda-forge/miniforge/issues/739",
            )
        )
    else:
        fixes.append(
            Fix(
                summary=f"Update or remove {runtime_owner(loaded, ctx)} so that its {minimum.dll} is not "
                "loaded before System32's; if it is a Python package, import torch before it",
            )
        )
    fixes.extend(folder_removal(ctx, [loaded], f"(its {minimum.dll} {loaded.version} loads first)"))
    return tuple(fixes)
