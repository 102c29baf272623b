"""DLL load failures that the VC++ redistributable does not cure: the page file too small
([WinError 1455], ED609), a torch release whose own DLL needs a file no redistributable installs
(torch 2.4.0's fbgemm.dll and libomp140.x86_64.dll, ED610), and an older copy of one of torch's
DLLs that loads in place of torch's own ([WinError 126/127], ED611)."""

from __future__ import annotations

import ntpath
import re
from collections.abc import Iterator

from envdoctor.knowledge import cuda_libraries
from envdoctor.knowledge import windows as knowledge
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.system import SystemFacts, gib
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.probes.windows import PATH, SYSTEM32, TORCH_LIB, DllFile, WindowsFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import planned_fix
from envdoctor.rules.windows.dlls import folder_removal, torch_version, where
from envdoctor.util.records import record

# import torch's own words: "[WinError 1455] ... Error loading "...\torch\lib\cudnn_cnn_infer64_8.dll" ..."
_IMPORT_FAILURE = re.compile(r"\[WinError (?P<code>\d+)\][^\n]*?Error loading \"(?P<path>[^\"]+)\"")
_LOAD_FAILURES = (126, 127)


@record
class LoadFailure:
    dll: str  # lower-case base name
    winerror: int
    said: str  # where it was seen: the DLL check or import torch


def load_failures(ctx: RuleContext) -> list[LoadFailure]:
    """Every (DLL, WinError) the DLL check or `import torch` reported, the check's first."""
    found: list[LoadFailure] = []
    windows = ctx.get(WindowsFacts)
    if windows is not None:
        for failure in windows.dll_load.failures:
            if failure.winerror is not None:
                found.append(LoadFailure(failure.dll.lower(), failure.winerror, "the DLL check"))
    torch = ctx.get(TorchFacts)
    if torch is not None and torch.import_error is not None:
        for match in _IMPORT_FAILURE.finditer(torch.import_error.message):
            dll = ntpath.basename(match.group("path")).lower()
            code = int(match.group("code"))
            if not any(f.dll == dll and f.winerror == code for f in found):
                found.append(LoadFailure(dll, code, "import torch"))
    return found


def _wants_cuda(ctx: RuleContext) -> bool | None:
    torch = ctx.get(TorchFacts)
    if torch is None or not torch.installed:
        return None
    return bool(torch.cuda) or (torch.local_label or "").startswith("cu") or None


@rule(
    code="ED609",
    name="paging-file-too-small",
    severity=Severity.ERROR,
    summary="torch's DLLs fail with [WinError 1455]: the Windows page file is too small",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="[WinError 1455] (ERROR_COMMITMENT_LIMIT) from the DLL check or from import torch.",
        why="Loading torch's CUDA DLLs commits gigabytes of virtual memory; when RAM plus page "
        "file cannot back it, Windows refuses the DLL. Every DataLoader worker is a new process "
        "that loads them again, so it often appears only with num_workers > 0. The VC++ "
        "redistributable has nothing to do with it.",
        fix="Let Windows manage the page file size (or set a larger one) with free space on its "
        "drive, restart; use fewer DataLoader workers.",
        example="OSError: [WinError 1455] The paging file is too small for this operation to "
        'complete. Error loading "...\\torch\\lib\\cudnn_cnn_infer64_8.dll" or one of its '
        "dependencies (pytorch/pytorch#59904).",
    ),
)
def paging_file_too_small(ctx: RuleContext) -> Iterator[Hit]:
    if ctx.platform.os != "windows":
        return
    paging = knowledge.paging_file()
    failed = [f for f in load_failures(ctx) if f.winerror == paging.winerror]
    if not failed:
        return
    system = ctx.get(SystemFacts)
    memory = (
        f" This machine has {gib(system.memory_total_bytes)} of RAM, {gib(system.memory_available_bytes)} "
        "free when envdoctor looked."
        if system is not None and system.memory_total_bytes
        else ""
    )
    dlls = ", ".join(dict.fromkeys(f.dll for f in failed))
    yield Hit(
        title=f"Windows could not load {dlls}: [WinError 1455] the paging file is too small",
        detail=f"{dlls} failed with [WinError 1455] in {failed[0].said}: Windows could not commit the "
        "memory the DLL needs. torch's CUDA libraries (cuDNN, cuBLAS) reserve gigabytes of virtual "
        "memory when they load, and each DataLoader worker process loads them again, so the limit "
        f"is RAM plus page file, not free RAM.{memory} No VC++ redistributable or reinstall fixes this.",
        evidence=tuple(f"{f.dll}: WinError {f.winerror} ({f.said})" for f in failed[:3]),
        fixes=(
            Fix(
                summary="Let Windows size the page file (PowerShell as administrator), keep tens of GB "
                "free on its drive (usually C:), then restart",
                commands=(paging.system_managed_command, "Restart-Computer"),
                link=paging.link,
            ),
            Fix(
                summary="Set a larger size by hand: Advanced > Performance Settings > Advanced > "
                "Virtual memory > Change",
                commands=(paging.settings_command,),
            ),
            Fix(
                summary="If it happens when training starts: each DataLoader worker loads torch's DLLs "
                "again; use fewer workers (num_workers=0 to 2) until the page file is larger",
            ),
        ),
    )


@rule(
    code="ED610",
    name="torch-release-dll-dependency-missing",
    severity=Severity.ERROR,
    summary="a known torch regression: one of its DLLs needs a file no VC++ redistributable installs",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="A DLL that failed to load, with its WinError, against the known regressions of the "
        "installed torch release (windows.json dll_regressions: torch 2.4.0's fbgemm.dll needs "
        "libomp140.x86_64.dll; wheels that left CUDA DLLs out, judged by torch\\lib's files).",
        why="The usual advice (install the VC++ redistributable, reinstall torch) cannot help: the "
        "missing file comes only with Visual Studio's C++ tools, and reinstalling gives the same "
        "wheel. The fixed release does.",
        fix="Upgrade torch to the release that fixed it (2.4.1 for fbgemm.dll), or newer.",
        example="torch 2.4.0: OSError: [WinError 126] The specified module could not be found. Error "
        'loading "...\\torch\\lib\\fbgemm.dll" or one of its dependencies (pytorch/pytorch#131662).',
    ),
)
def torch_release_dll_dependency_missing(ctx: RuleContext) -> Iterator[Hit]:
    if ctx.platform.os != "windows":
        return
    version = torch_version(ctx)
    failures = load_failures(ctx)
    for known in knowledge.dll_regressions(version):
        failure = next((f for f in failures if known.matches(f.dll, f.winerror)), None)
        if failure is None:
            continue
        absent = _absent_families(ctx, known)
        if known.absent_families and absent is None:
            continue  # torch\\lib does have those libraries: not this packaging defect
        yield _regression_hit(ctx, known, failure, version, absent or ())
        return


def _absent_families(ctx: RuleContext, known: knowledge.DllRegression) -> tuple[str, ...] | None:
    """The CUDA library families of `known` that torch\\lib lacks; None when it has one of them (or
    the DLL check did not list torch\\lib)."""
    if not known.absent_families:
        return ()
    facts = ctx.get(WindowsFacts)
    if facts is None or facts.dll_load.torch_lib is None:
        return None
    present = {
        family[0]
        for f in facts.torch_cuda_dlls
        if (family := cuda_libraries.family_of(ntpath.basename(f.path), "windows")) is not None
    }
    if present & set(known.absent_families):
        return None
    return known.absent_families


def _regression_hit(
    ctx: RuleContext,
    known: knowledge.DllRegression,
    failure: LoadFailure,
    version: str | None,
    absent: tuple[str, ...],
) -> Hit:
    fixes = []
    wants = _wants_cuda(ctx)
    if known.fixed_in is not None:
        same_series = planned_fix(
            ctx,
            f"Upgrade to torch {known.fixed_in}, which fixed it",
            torch=str(known.fixed_in),
            want_cuda=wants,
        )
        if same_series is not None:
            fixes.append(same_series)
    newest = planned_fix(ctx, "The newest torch that fits this machine", want_cuda=wants)
    if newest is not None:
        fixes.append(newest)
    if known.older_release is not None:
        older = planned_fix(
            ctx,
            f"Go back to torch {known.older_release}, from before the regression",
            torch=str(known.older_release),
            want_cuda=wants,
        )
        if older is not None:
            fixes.append(older)
    lacking = f" torch\\lib has no {', '.join(absent)} DLLs at all." if absent else ""
    fixed = (
        f"fixed in {known.fixed_words}"
        if known.fixed_in is not None
        else f"not in that build: {known.fixed_words} have them"
    )
    return Hit(
        title=f"torch {version}'s {failure.dll} needs {known.missing}, which this torch release does not "
        "bring and no VC++ redistributable installs",
        detail=f"{failure.dll} failed with [WinError {failure.winerror}] in {failure.said}. {known.why}."
        f"{lacking} This is a known packaging regression of torch "
        f"{', '.join(str(v) for v in known.torch)}, {fixed}; installing the redistributable or "
        "reinstalling the same torch does not help, and copying DLLs in from a download site is not "
        "needed.",
        evidence=(f"torch {version}", f"{failure.dll}: WinError {failure.winerror} ({failure.said})"),
        fixes=tuple(fixes),
    )


def _torch_copy(facts: WindowsFacts, name: str) -> DllFile | None:
    """torch's own copy of a DLL, in torch\\lib."""
    for file in (*facts.torch_cuda_dlls, *facts.openmp_files, *facts.runtime_files):
        if file.name == name and file.origin == TORCH_LIB:
            return file
    return None


def older_copies(facts: WindowsFacts) -> list[tuple[DllFile, DllFile]]:
    """(the copy that loaded, torch's own) for DLLs that loaded from outside torch\\lib although
    torch\\lib has a newer one. The VC++ runtime is left to ED603, which knows its floors."""
    runtime = set(knowledge.vc_redist().runtime_dlls)
    found = []
    for module in facts.dll_load.modules:
        if module.origin == TORCH_LIB or module.name in runtime:
            continue
        own = _torch_copy(facts, module.name)
        if own is None:
            continue
        theirs, ours = knowledge.file_version(module.version), knowledge.file_version(own.version)
        if theirs is not None and ours is not None and theirs < ours:
            found.append((module, own))
    return found


@rule(
    code="ED611",
    name="older-dll-copy-loads-first",
    severity=Severity.ERROR,
    summary="an older copy of one of torch's DLLs, from PATH or System32, loads in place of torch's own",
    needs=(WindowsFacts,),
    doc=RuleDoc(
        what="When torch's DLLs fail with [WinError 126] or [WinError 127], the modules the DLL check "
        "saw loaded from outside torch\\lib (a PATH folder, System32) against torch's own copies of "
        "the same name, by file version.",
        why="Windows gives every later request the DLL already loaded under that name: an older "
        "libiomp5md.dll or cuDNN from another program lacks functions torch's DLLs import "
        "('The specified procedure could not be found'). The redistributable is not the problem.",
        fix="Remove that folder from PATH (the exact edit is shown), or delete the stray copy from System32.",
        example="An old Intel OpenMP libiomp5md.dll on PATH loaded before torch\\lib's: [WinError 127] "
        "(pytorch/pytorch#36868).",
    ),
)
def older_dll_copy_loads_first(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(WindowsFacts)
    failed = [f for f in load_failures(ctx) if f.winerror in _LOAD_FAILURES]
    found = older_copies(facts)
    if not failed or not found:
        return
    named = "; ".join(
        f"{theirs.path} {theirs.version} from {where(theirs)}, torch's own {own.version}"
        for theirs, own in found
    )
    fixes = list(
        folder_removal(
            ctx, [t for t, _ in found if t.origin == PATH], "(an older copy of one of torch's DLLs)"
        )
    )
    strays = [t for t, _ in found if t.origin == SYSTEM32]
    if strays:
        fixes.append(
            Fix(
                summary="Delete (or rename) the stray copies in System32; they belong to another "
                "program's installer or an old torch: " + ", ".join(t.path for t in strays)
            )
        )
    first = failed[0]
    yield Hit(
        title=f"an older {found[0][0].name} ({found[0][0].version}) from {where(found[0][0])} loads in place "
        "of torch's own",
        detail=f"{first.dll} failed with [WinError {first.winerror}] in {first.said}. Loaded instead of "
        f"torch\\lib's copies: {named}. Windows hands every later request for a DLL of that name the copy "
        "already loaded, so torch's DLLs get the older one, which lacks functions they need. Installing "
        "the VC++ redistributable or reinstalling torch does not change which copy loads.",
        evidence=tuple(f"{t.name}: {t.version} ({where(t)}) vs torch\\lib {o.version}" for t, o in found[:3]),
        fixes=tuple(fixes),
    )
