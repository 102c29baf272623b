"""Where Python and torch are installed on Windows: the Microsoft Store Python (ED605), long paths
disabled while torch's deepest file would pass 260 characters (ED606)."""

from __future__ import annotations

import ntpath
from collections.abc import Iterator

from envdoctor.knowledge import windows as knowledge
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.windows import WindowsFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.windows.dlls import torch_version

LONG_PATHS_DOCS = "https://learn.microsoft.com/en-us/windows/win32/fileio/maximum-file-path-limitation"
PYTHON_DOWNLOADS = "https://www.python.org/downloads/windows/"


@rule(
    code="ED605",
    name="microsoft-store-python",
    severity=Severity.WARNING,
    summary="the examined Python is the Microsoft Store build",
    needs=(WindowsFacts,),
    doc=RuleDoc(
        what="Whether the interpreter lives under WindowsApps / PythonSoftwareFoundation.Python.",
        why="Its deep per-user package folder runs into the 260-character path limit and its "
        "layout has caused DLL load failures (pytorch/pytorch #23823, #39734).",
        fix="Use Python from python.org (or conda) with a venv in a short folder.",
        example="C:\\Users\\user\\AppData\\Local\\Microsoft\\WindowsApps\\python3.11.exe",
    ),
)
def microsoft_store_python(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(WindowsFacts)
    if not facts.store_python:
        return
    yield Hit(
        title="this is the Microsoft Store Python",
        detail=f"{ctx.interpreter.path} is the Store build: packages go to a deep per-user folder "
        "under AppData\\Local\\Packages\\PythonSoftwareFoundation.Python...\\LocalCache, whose "
        "length hits the 260-character path limit while torch installs, and its sandboxed layout "
        "is what torch's DLL set-up was not made for (pytorch/pytorch #23823, #39734).",
        evidence=(f"interpreter: {ctx.interpreter.path}",),
        fixes=(
            Fix(
                summary="Install Python from python.org (or use conda) and create a virtual "
                "environment in a short folder for torch",
                commands=("py -m venv C:\\venvs\\torch", "C:\\venvs\\torch\\Scripts\\activate"),
                link=PYTHON_DOWNLOADS,
            ),
        ),
    )


def _install_folder(ctx: RuleContext, facts: WindowsFacts) -> str | None:
    if facts.torch_dir:
        return ntpath.dirname(facts.torch_dir)
    folders = facts.dll_load.site_packages
    if not folders:
        return None
    return max(folders, key=len) if facts.store_python else folders[0]


@rule(
    code="ED606",
    name="long-paths-disabled",
    severity=Severity.WARNING,
    summary="long paths are disabled and torch's deepest file would exceed 260 characters",
    needs=(WindowsFacts,),
    doc=RuleDoc(
        what="LongPathsEnabled in HKLM\\SYSTEM\\CurrentControlSet\\Control\\FileSystem, and the "
        "length of torch's install folder plus its deepest file (windows.json: 119 characters in the "
        "torch folder; 171 in torch 2.13's dist-info license tree; 123 in torch 1.x's caffe2).",
        why="Past MAX_PATH pip cannot write torch's deepest headers and leaves a broken install.",
        fix="Enable long paths (administrator), or install into a venv in a short folder.",
        example="Store Python: ...\\LocalCache\\local-packages\\Python311\\site-packages (140+ characters).",
    ),
)
def long_paths_disabled(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(WindowsFacts)
    if facts.long_paths_enabled is not False:
        return
    folder = _install_folder(ctx, facts)
    limits = knowledge.path_limits()
    if folder is None:
        return
    version = torch_version(ctx)
    deepest = limits.torch_longest(version)
    longest = len(folder) + 1 + deepest
    if longest < limits.max_path:
        return
    whose = (
        f"torch {version}'s deepest file adds {deepest} more"
        if version
        else f"the deepest file of a current torch (its dist-info license tree, with a nightly's "
        f"folder name) would add {deepest} more"
    )
    yield Hit(
        title=f"long paths are disabled and torch's files would need {longest} characters",
        detail=f"torch installs into {folder} ({len(folder)} characters); {whose}, past Windows' "
        f"{limits.max_path}-character limit (LongPathsEnabled = 0). pip then fails part-way ('No such "
        "file or directory', or [WinError 206] The filename or extension is too long) and leaves a "
        "broken torch.",
        evidence=("LongPathsEnabled = 0", f"install folder: {folder}"),
        fixes=(
            Fix(
                summary="Enable long paths (PowerShell as administrator), then reinstall torch",
                commands=(
                    "New-ItemProperty -Path 'HKLM:\\SYSTEM\\CurrentControlSet\\Control\\FileSystem' "
                    "-Name LongPathsEnabled -Value 1 -PropertyType DWORD -Force",
                ),
                link=LONG_PATHS_DOCS,
            ),
            Fix(
                summary="Use a virtual environment in a short folder instead (a short conda "
                "environment path does the same)",
                commands=("py -m venv C:\\venvs\\torch",),
            ),
        ),
    )
