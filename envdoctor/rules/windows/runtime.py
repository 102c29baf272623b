"""Windows: the VC++ runtime torch needs, which copy of it loads, and whether torch's DLLs load.

Fixes come in the order experienced users try them: the VC++ redistributable first, then PATH,
then a clean reinstall matched to the Python and the CUDA driver.
"""

from __future__ import annotations

import ntpath
from collections.abc import Iterator

from envdoctor.knowledge import windows as knowledge
from envdoctor.model import Fix, Severity
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
    DllStatus,
    WindowsFacts,
)
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import path_removal_fixes
from envdoctor.rules.fixes import planned_fix
from envdoctor.shell import quote

_NEEDS = (WindowsFacts,)

DLL_DOCS = "https://learn.microsoft.com/en-us/windows/win32/dlls/dynamic-link-library-search-order"
LONG_PATHS_DOCS = "https://learn.microsoft.com/en-us/windows/win32/fileio/maximum-file-path-limitation"
PYTHON_DOWNLOADS = "https://www.python.org/downloads/windows/"
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


def _torch_version(ctx: RuleContext) -> str | None:
    torch = ctx.get(TorchFacts)
    if torch is None or not torch.installed:
        return None
    return torch.dist_version or torch.version


def _where(file: DllFile) -> str:
    words = _ORIGIN_WORDS.get(file.origin, file.origin)
    if file.origin == PATH and file.path_index is not None:
        words = f"PATH[{file.path_index}] {ntpath.dirname(file.path)}"
    return words


def _described(file: DllFile) -> str:
    return f"{file.path} ({file.version or 'no version'}, {_where(file)})"


def loaded_runtime(facts: WindowsFacts, name: str) -> tuple[DllFile | None, bool]:
    """The copy of `name` torch gets, and whether the DLL check saw it loaded (else: predicted)."""
    seen = facts.dll_load.module(name)
    if seen is not None:
        return seen, True
    candidates = [f for f in facts.runtime(name) if f.origin in (TORCH_LIB, APP_DIR, SYSTEM32, DLL_DIRECTORY)]
    candidates.sort(key=lambda f: _SEARCH_RANK.get(f.origin, 9))
    return (candidates[0] if candidates else None), False


def redist_fixes() -> tuple[Fix, ...]:
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


def reinstall_fix(ctx: RuleContext) -> Fix | None:
    """A clean reinstall matched to this Python and driver (the planner's command)."""
    torch = ctx.get(TorchFacts)
    wanted_cuda = None
    if torch is not None and torch.installed:
        wanted_cuda = bool(torch.cuda) or (torch.local_label or "").startswith("cu")
    planned = planned_fix(
        ctx, "Reinstall torch cleanly, matched to this Python and driver", want_cuda=wanted_cuda
    )
    if planned is None:
        return None
    python = quote(ctx.interpreter.path, "windows")
    uninstall = f"{python} -m pip uninstall -y torch torchvision torchaudio"
    # A clean reinstall: everything out first, then fresh downloads rather than cached wheels.
    install = [f"{c} --no-cache-dir" if " install " in c else c for c in planned.commands]
    commands = tuple(install) if any(" uninstall " in c for c in install) else (uninstall, *install)
    return Fix(summary=planned.summary, commands=commands, link=planned.link)


def _folder_removal(ctx: RuleContext, files: list[DllFile], why: str) -> tuple[Fix, ...]:
    """PATH edits removing the folders of `files` that sit on PATH."""
    indices = sorted({f.path_index for f in files if f.origin == PATH and f.path_index is not None})
    facts = ctx.need(WindowsFacts)
    if not indices or max(indices) >= len(facts.path):
        return ()
    return path_removal_fixes("windows", None, "Path", facts.path, indices, why)


# ED601 ---------------------------------------------------------------------------------------------


@rule(
    code="ED601",
    name="vc-runtime-missing",
    severity=Severity.ERROR,
    summary="the Microsoft Visual C++ v14 runtime DLLs torch needs are missing",
    needs=_NEEDS,
    doc=RuleDoc(
        what="msvcp140.dll, vcruntime140.dll and vcruntime140_1.dll in System32 and the folders "
        "searched before it, the DLL check's loaded modules, and the v14 redistributable's "
        "registry key (both views).",
        why="Every torch DLL links against them: without them import torch fails with "
        "[WinError 126] on c10.dll.",
        fix="Install the latest VC++ 2015-2022 x64 redistributable (aka.ms/vc14/vc_redist.x64.exe, "
        "/install /passive /norestart).",
        example="A fresh Windows 11 with the Microsoft Store Python: msvcp140.dll is absent.",
    ),
)
def vc_runtime_missing(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(WindowsFacts)
    missing = [name for name in knowledge.vc_redist().runtime_dlls if loaded_runtime(facts, name)[0] is None]
    if ctx.platform.machine.upper() == "ARM64":
        missing = [m for m in missing if m != "vcruntime140_1.dll"]  # torch asks for it on x64 only
    if not missing:
        return
    registered = facts.redist_version
    said = (
        f"The registry records version {registered}, so the installation is damaged."
        if registered
        else "The registry has no v14 redistributable either (both views)."
    )
    yield Hit(
        title=f"the Microsoft Visual C++ runtime is missing: {', '.join(missing)}",
        detail=f"Neither {facts.system32} nor the folders searched before it hold "
        f"{', '.join(missing)}. {said} Every torch DLL needs them: import torch fails with "
        "[WinError 126] on c10.dll (or torch prints 'Microsoft Visual C++ Redistributable is "
        "not installed').",
        evidence=(*(f"{m}: not found" for m in missing), f"registry: {registered or 'no entry'}"),
        fixes=redist_fixes(),
    )


# ED602 / ED603 -------------------------------------------------------------------------------------


def _too_old(ctx: RuleContext) -> tuple[DllFile, bool, knowledge.RuntimeMinimum] | None:
    facts = ctx.need(WindowsFacts)
    minimum = knowledge.runtime_minimum(_torch_version(ctx))
    if minimum is None:
        return None
    loaded, observed = loaded_runtime(facts, minimum.dll)
    version = knowledge.file_version(loaded.version) if loaded is not None else None
    if loaded is None or version is None or version >= minimum.minimum:
        return None
    return loaded, observed, minimum


def _evidence(loaded: DllFile, observed: bool, facts: WindowsFacts) -> tuple[str, ...]:
    how = "loaded in the DLL check" if observed else "the first copy in the search order"
    system = facts.runtime(loaded.name, SYSTEM32)
    return (
        f"{loaded.name} {how}: {_described(loaded)}",
        *(f"System32 copy: {_described(f)}" for f in system if f.path != loaded.path),
        f"registry v14 redistributable: {facts.redist_version or 'no entry'}",
    )


@rule(
    code="ED602",
    name="vc-runtime-too-old-for-torch",
    severity=Severity.ERROR,
    summary="System32's msvcp140.dll is older than torch needs (>= 14.40 from torch 2.9)",
    needs=(WindowsFacts, TorchFacts),
    doc=RuleDoc(
        what="The file version of the msvcp140.dll torch loads, when it is System32's, against "
        "the minimum for the installed torch (windows.json: >= 14.40 from 2.9.0, a floor "
        "PyTorch does not document; see the caveat in the finding).",
        why="torch >= 2.9 is built with MSVC 14.42, whose std::mutex needs msvcp140.dll >= "
        "14.40; an older one fails in c10.dll's start-up with [WinError 1114].",
        fix="Install the latest VC++ redistributable; or stay on torch 2.8.",
        example="torch 2.9.1 with the redistributable 14.36 from 2023: [WinError 1114] ... "
        'Error loading "...\\torch\\lib\\c10.dll" (pytorch/pytorch #169429).',
    ),
)
def vc_runtime_too_old_for_torch(ctx: RuleContext) -> Iterator[Hit]:
    found = _too_old(ctx)
    if found is None:
        return
    loaded, observed, minimum = found
    if loaded.origin != SYSTEM32:
        return  # ED603: another copy wins, the redistributable cannot help
    facts = ctx.need(WindowsFacts)
    fixes = list(redist_fixes())
    pin = planned_fix(
        ctx, f"If you cannot update it: torch before {minimum.torch} does not need it", torch="2.8.0"
    )
    if pin is not None:
        fixes.append(pin)
    yield Hit(
        title=f"{minimum.dll} {loaded.version} is too old for torch {_torch_version(ctx)} "
        f"(needs >= {minimum.minimum})",
        detail=f"torch >= {minimum.torch} loads {minimum.dll} from {facts.system32}, version "
        f"{loaded.version}; below {minimum.minimum} import torch fails with '{minimum.error}' on "
        f"c10.dll. Caveat: {minimum.caveat}",
        evidence=_evidence(loaded, observed, facts),
        fixes=tuple(fixes),
    )


def _owner(loaded: DllFile, ctx: RuleContext) -> str:
    python = ctx.get(PythonFacts)
    if python is not None and python.is_conda and loaded.origin in (APP_DIR, ENV):
        return "the conda environment's vc14_runtime package"
    if "site-packages" in loaded.path.lower():
        package = loaded.path.lower().split("site-packages\\", 1)[1].split("\\", 1)[0]
        return f"the Python package '{package}'"
    return f"whatever installed {ntpath.dirname(loaded.path)}"


def _copy_fixes(ctx: RuleContext, loaded: DllFile, minimum: knowledge.RuntimeMinimum) -> tuple[Fix, ...]:
    """Ways to stop an old runtime copy outside System32 from loading first."""
    python = ctx.get(PythonFacts)
    fixes: list[Fix] = []
    if python is not None and python.is_conda and loaded.origin in (APP_DIR, ENV):
        prefix = quote(python.prefix, "windows")
        fixes.append(
            Fix(
                summary=f"Update the conda environment's VC++ runtime package to >= {minimum.minimum}",
                commands=(f'conda install -p {prefix} -c conda-forge "vc14_runtime>={minimum.minimum}"',),
                link="https://github.com/conda-forge/miniforge/issues/739",
            )
        )
    else:
        fixes.append(
            Fix(
                summary=f"Update or remove {_owner(loaded, ctx)} so that its {minimum.dll} is not loaded "
                "before System32's; if it is a Python package, import torch before it",
            )
        )
    fixes.extend(_folder_removal(ctx, [loaded], f"(its {minimum.dll} {loaded.version} loads first)"))
    return tuple(fixes)


@rule(
    code="ED603",
    name="old-msvcp140-loads-first",
    severity=Severity.ERROR,
    summary="an older msvcp140.dll from another folder loads before System32's and breaks torch",
    needs=(WindowsFacts, TorchFacts),
    doc=RuleDoc(
        what="Whether the msvcp140.dll torch gets (seen loaded by the DLL check, else the first "
        "in the search order) is a copy outside System32 older than torch's minimum.",
        why="Windows gives every DLL that asks for msvcp140.dll the copy loaded first; a "
        "conda environment's or another package's old copy breaks torch even when the "
        "system redistributable is new.",
        fix="Update the package that ships the old copy (conda: vc14_runtime), remove its folder "
        "from PATH, or import torch first.",
        example="A conda env with vc14_runtime 14.38 in its root folder, System32 at 14.44, "
        "torch 2.9.1: [WinError 1114] on c10.dll.",
    ),
)
def old_msvcp140_loads_first(ctx: RuleContext) -> Iterator[Hit]:
    found = _too_old(ctx)
    if found is None:
        return
    loaded, observed, minimum = found
    if loaded.origin == SYSTEM32:
        return  # ED602
    facts = ctx.need(WindowsFacts)
    system = facts.runtime(minimum.dll, SYSTEM32)
    system_ok = any((knowledge.file_version(f.version) or minimum.minimum) >= minimum.minimum for f in system)
    owner = _owner(loaded, ctx)
    fixes = list(_copy_fixes(ctx, loaded, minimum))
    if not system_ok:
        fixes.extend(redist_fixes())
    why = {
        APP_DIR: "python.exe's own folder is searched before System32",
        TORCH_LIB: "torch\\lib is searched before System32",
        PATH: "it was reached through PATH (torch's fallback after error 126, or another package "
        "that loaded it first), and Windows reuses a loaded DLL for every later request by name",
    }.get(loaded.origin, "it was loaded before System32's copy")
    state = (
        f"The system's copy is fine ({', '.join(f.version or '?' for f in system)}), but"
        if system_ok
        else "And"
    )
    yield Hit(
        title=f"an older {minimum.dll} ({loaded.version}) loads before System32's and breaks torch "
        f"{_torch_version(ctx)}",
        detail=f"{state} {loaded.path} ({owner}) is the copy torch gets, because {why}. torch >= "
        f"{minimum.torch} needs {minimum.dll} >= {minimum.minimum}: '{minimum.error}' on c10.dll. "
        f"Installing the redistributable does not help while this copy loads first. Caveat: "
        f"{minimum.caveat}",
        evidence=_evidence(loaded, observed, facts),
        fixes=tuple(fixes),
    )


# ED604 ---------------------------------------------------------------------------------------------


@rule(
    code="ED604",
    name="torch-dll-load-fails",
    severity=Severity.ERROR,
    summary="one of torch's DLLs does not load (WinError 126/127/1114) in the target Python",
    needs=_NEEDS,
    doc=RuleDoc(
        what="Loads every DLL in torch\\lib like import torch does (torch's add_dll_directory "
        "set, LoadLibraryExW with the same flags and PATH fallback), c10.dll first, in a child "
        "of the target interpreter, and reports the first failure with its WinError.",
        why="import torch names whichever DLL it tried first; loading c10.dll first and "
        "reporting the loaded runtime copies shows the real culprit.",
        fix="In this order: the VC++ redistributable, PATH entries that bring foreign DLLs, a "
        "clean reinstall matched to the Python and the CUDA driver.",
        example='OSError: [WinError 1114] ... Error loading "...\\torch\\lib\\c10.dll" or one '
        "of its dependencies.",
    ),
)
def torch_dll_load_fails(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(WindowsFacts)
    load = facts.dll_load
    first = load.first_failure
    if load.status == DllStatus.FAILED and first is not None:
        title = f"torch's {first.dll} does not load: [WinError {first.winerror}] {first.message}"
        meaning = knowledge.winerror_meaning(first.winerror or 0) or "an unexpected loader error"
        detail = (
            f"Loading torch\\lib the way import torch does (c10.dll first) failed for "
            f"{len(load.failures)} of {load.attempted} DLLs; the first: {first.dll}, WinError "
            f"{first.winerror}: {meaning}."
        )
        evidence = tuple(f"{f.dll}: WinError {f.winerror}" for f in load.failures[:5])
    elif load.status in (DllStatus.CRASHED, DllStatus.TIMEOUT) and load.last_dll:
        how = "hung" if load.status == DllStatus.TIMEOUT else "crashed Python"
        title = f"loading torch's {load.last_dll} {how}"
        detail = f"{load.error}. The DLL being loaded was {load.last_dll}."
        evidence = (f"dll check: {load.status} at {load.last_dll}",)
    else:
        return
    runtime = []
    for name in knowledge.vc_redist().runtime_dlls:
        loaded = loaded_runtime(facts, name)[0]
        if loaded is not None:
            runtime.append(f"{name} {loaded.version or '?'} from {_where(loaded)}")
        else:
            runtime.append(f"{name} missing")
    detail += f" VC++ runtime: {'; '.join(runtime)}."
    if load.via_path:
        detail += f" Loaded only through PATH: {', '.join(load.via_path)}."
    fixes: list[Fix] = []
    old_copy = _too_old(ctx) if ctx.get(TorchFacts) is not None else None
    if old_copy is not None and old_copy[0].origin != SYSTEM32:
        # The old copy outside System32 is the known cause: its fix comes before the usual order.
        fixes.extend(_copy_fixes(ctx, old_copy[0], old_copy[2]))
        detail += f" The {old_copy[2].dll} that loads is older than {old_copy[2].minimum} (see ED603)."
    fixes.extend(redist_fixes())
    suspects = [f for f in facts.runtime_files if f.origin == PATH] + list(_shadowing_cuda(facts))
    fixes.extend(_folder_removal(ctx, suspects, "(foreign DLLs torch may pick up)"))
    reinstall = reinstall_fix(ctx)
    if reinstall is not None:
        fixes.append(reinstall)
    yield Hit(title=title, detail=detail, evidence=evidence, fixes=tuple(fixes))


# ED605 / ED606 -------------------------------------------------------------------------------------


@rule(
    code="ED605",
    name="microsoft-store-python",
    severity=Severity.WARNING,
    summary="the examined Python is the Microsoft Store build",
    needs=_NEEDS,
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
    needs=_NEEDS,
    doc=RuleDoc(
        what="LongPathsEnabled in HKLM\\SYSTEM\\CurrentControlSet\\Control\\FileSystem, and the "
        "length of torch's install folder plus its deepest file (119 characters in torch 2.13).",
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
    longest = len(folder) + 1 + limits.torch_longest_relative_path
    if longest < limits.max_path:
        return
    yield Hit(
        title=f"long paths are disabled and torch's files would need {longest} characters",
        detail=f"torch installs into {folder} ({len(folder)} characters); its deepest file adds "
        f"{limits.torch_longest_relative_path} more, past Windows' {limits.max_path}-character "
        "limit (LongPathsEnabled = 0). pip then fails part-way ('No such file or directory' for "
        "a header under torch\\include) and leaves a broken torch.",
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
                summary="Use a virtual environment in a short folder instead",
                commands=("py -m venv C:\\venvs\\torch",),
            ),
        ),
    )


# ED607 ---------------------------------------------------------------------------------------------


@rule(
    code="ED607",
    name="duplicate-openmp-runtime",
    severity=Severity.WARNING,
    summary="several libiomp5md.dll copies can load into the same Python",
    needs=_NEEDS,
    doc=RuleDoc(
        what="libiomp5md.dll in torch\\lib, python.exe's folder, torch's DLL directories and the "
        "environment.",
        why="Two Intel OpenMP runtimes in one process abort with 'OMP: Error #15'.",
        fix="conda install nomkl, or remove the copy that is not torch's; KMP_DUPLICATE_LIB_OK "
        "only to confirm.",
        example="A conda env's Library\\bin\\libiomp5md.dll next to torch\\lib\\libiomp5md.dll.",
    ),
)
def duplicate_openmp_runtime(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(WindowsFacts)
    copies = [f for f in facts.openmp_files if f.origin in (TORCH_LIB, APP_DIR, DLL_DIRECTORY, ENV)]
    if len(copies) < 2:
        return
    python = ctx.get(PythonFacts)
    fixes = []
    if python is not None and python.is_conda:
        fixes.append(
            Fix(
                summary="Let conda drop its Intel OpenMP/MKL stack so only torch's copy remains",
                commands=(f"conda install -p {quote(python.prefix, 'windows')} nomkl",),
            )
        )
    others = [f for f in copies if f.origin != TORCH_LIB]
    fixes.append(
        Fix(
            summary="Or remove (rename) the copy that is not torch's: "
            + ", ".join(f.path for f in others or copies[1:]),
        )
    )
    fixes.append(
        Fix(
            summary="Only to confirm the diagnosis, never for real work (Intel calls it an unsafe, "
            "unsupported, undocumented workaround): set KMP_DUPLICATE_LIB_OK=TRUE",
            commands=("$env:KMP_DUPLICATE_LIB_OK = 'TRUE'",),
        )
    )
    yield Hit(
        title=f"{len(copies)} copies of libiomp5md.dll can load into one Python",
        detail="; ".join(_described(f) for f in copies) + ". When two Intel OpenMP runtimes are "
        "initialised in one process, Python aborts with 'OMP: Error #15: Initializing "
        "libiomp5md.dll, but found libiomp5md.dll already initialized.'",
        evidence=tuple(f.path for f in copies),
        fixes=tuple(fixes),
    )


# ED608 ---------------------------------------------------------------------------------------------


def _shadowing_cuda(facts: WindowsFacts) -> Iterator[DllFile]:
    """CUDA DLLs on PATH named like torch's own but of another build, or seen loaded from PATH."""
    torch_dlls = {f.name: f for f in facts.torch_cuda_dlls}
    for file in facts.cuda_dlls_on_path:
        own = torch_dlls.get(file.name)
        if own is not None and file.version and own.version and file.version != own.version:
            yield file
    for module in facts.dll_load.modules:
        if (
            module.origin == PATH
            and module.name not in torch_dlls
            and not module.name.startswith(("msvcp", "vcruntime", "libiomp"))
        ):
            yield module


@rule(
    code="ED608",
    name="cuda-dlls-on-path-shadow-torch",
    severity=Severity.WARNING,
    summary="cuDNN/cuBLAS DLLs on PATH share names with torch's own but are other versions",
    needs=_NEEDS,
    doc=RuleDoc(
        what="cudnn*, cublas*, cudart*, nvJitLink*, cusparse* DLLs in PATH folders against the "
        "same-named DLLs in torch\\lib (file versions), and CUDA DLLs the DLL check saw loaded "
        "from PATH.",
        why="A same-named DLL loaded through PATH first wins for the whole process: [WinError 127].",
        fix="Remove the old CUDA/cuDNN folders from PATH (the exact edit is shown).",
        example="CUDA v12.1\\bin on PATH with cublas64_12.dll 12.1 while torch bundles 12.4.",
    ),
)
def cuda_dlls_on_path_shadow_torch(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(WindowsFacts)
    found = list(dict.fromkeys(_shadowing_cuda(facts)))
    if not found:
        return
    torch_dlls = {f.name: f for f in facts.torch_cuda_dlls}
    lines = []
    for file in found:
        own = torch_dlls.get(file.name)
        theirs = f"{ntpath.basename(file.path)} {file.version or '?'} in {_where(file)}"
        lines.append(theirs + (f" vs torch's {own.version}" if own else ", loaded into the DLL check"))
    yield Hit(
        title="CUDA DLLs on PATH have the names of torch's own but other versions",
        detail="; ".join(lines) + ". torch finds its copies in torch\\lib first, but whatever loads "
        "a DLL of that name through PATH first (torch's fallback after error 126, or TensorFlow / "
        "ONNX Runtime / an older CUDA app in the same process) wins for the whole process, and "
        "torch then fails with [WinError 127] (a missing procedure).",
        evidence=tuple(lines),
        fixes=_folder_removal(
            ctx, found, "(builds still find a toolkit through CUDA_PATH/CUDA_HOME; torch needs none)"
        ),
    )


RULES = (
    vc_runtime_missing,
    vc_runtime_too_old_for_torch,
    old_msvcp140_loads_first,
    torch_dll_load_fails,
    microsoft_store_python,
    long_paths_disabled,
    duplicate_openmp_runtime,
    cuda_dlls_on_path_shadow_torch,
)
