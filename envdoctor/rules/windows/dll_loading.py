"""Whether torch's DLLs load (ED604), and CUDA DLLs on PATH named like torch's own but of other
versions (ED608)."""

from __future__ import annotations

import ntpath
from collections.abc import Iterator

from envdoctor.knowledge import windows as knowledge
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.probes.windows import PATH, SYSTEM32, DllFile, DllStatus, WindowsFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import powershell_quote
from envdoctor.rules.fixes import planned_fix
from envdoctor.rules.windows.dlls import (
    copy_fixes,
    folder_removal,
    loaded_runtime,
    redist_fixes,
    too_old,
    where,
)
from envdoctor.shell import quote


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
    return Fix(summary=planned.summary, commands=commands, link=planned.link, kind=planned.kind)


@rule(
    code="ED604",
    name="torch-dll-load-fails",
    severity=Severity.ERROR,
    summary="one of torch's DLLs does not load (WinError 126/127/1114) in the target Python",
    needs=(WindowsFacts,),
    consequence_of=("ED601", "ED602", "ED603", "ED609", "ED610", "ED611", "ED612", "ED615"),
    doc=RuleDoc(
        what="Loads every DLL in torch\\lib like import torch does (torch's add_dll_directory "
        "set, LoadLibraryExW with the same flags and PATH fallback), c10.dll first, in a child "
        "of the target interpreter, and reports the first failure with its WinError.",
        why="import torch names whichever DLL it tried first; loading c10.dll first and "
        "reporting the loaded runtime copies shows the real culprit.",
        fix="In this order: the VC++ redistributable, PATH entries that bring foreign DLLs, the "
        "Intel OpenMP runtime when no libiomp5md.dll is anywhere torch looks (old torch builds "
        "did not bundle it), a clean reinstall matched to the Python and the CUDA driver.",
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
            runtime.append(f"{name} {loaded.version or '?'} from {where(loaded)}")
        else:
            runtime.append(f"{name} missing")
    detail += f" VC++ runtime: {'; '.join(runtime)}."
    if load.via_path:
        detail += f" Loaded only through PATH: {', '.join(load.via_path)}."
    fixes: list[Fix] = []
    old_copy = too_old(ctx) if ctx.get(TorchFacts) is not None else None
    if old_copy is not None and old_copy[0].origin != SYSTEM32:
        # The old copy outside System32 is the known cause: its fix comes before the usual order.
        fixes.extend(copy_fixes(ctx, old_copy[0], old_copy[2]))
        detail += f" The {old_copy[2].dll} that loads is older than {old_copy[2].minimum} (see ED603)."
    if runtime_new_enough(ctx, facts):
        detail += (
            " That runtime is complete and new enough for this torch, so the redistributable is not the fix."
        )
    else:
        fixes.extend(redist_fixes())
    suspects = [f for f in facts.runtime_files if f.origin == PATH] + list(shadowing_cuda(facts))
    fixes.extend(folder_removal(ctx, suspects, "(foreign DLLs torch may pick up)"))
    no_openmp = load.status == DllStatus.FAILED and not facts.openmp_files and load.torch_lib is not None
    if no_openmp:
        detail += (
            f" No Intel OpenMP runtime ({knowledge.openmp_dll()}) is in torch\\lib, the environment or "
            "on PATH: torch's DLLs need it, and torch builds that do not bundle it (the Windows "
            "wheels of torch 1.0 and before, some conda builds) fail like this without the "
            "intel-openmp package (or NumPy+MKL) in the environment."
        )
    reinstall = reinstall_fix(ctx)
    if no_openmp:
        fixes.append(
            Fix(
                summary="Give torch its Intel OpenMP runtime: a current torch wheel bundles "
                f"{knowledge.openmp_dll()} in torch\\lib (the clean reinstall below); for a torch that "
                "does not, install the intel-openmp package (pip or conda) into this environment, as "
                "pytorch/pytorch#4518 and #17203 did",
                link="https://github.com/pytorch/pytorch/issues/4518",
            )
        )
    if reinstall is not None:
        fixes.append(reinstall)
    yield Hit(title=title, detail=detail, evidence=evidence, fixes=tuple(fixes))


def runtime_new_enough(ctx: RuleContext, facts: WindowsFacts) -> bool:
    """Every VC++ runtime DLL torch gets is there, and msvcp140.dll meets this torch's floor (when
    one is known): then installing the redistributable again cannot be the fix."""
    names = knowledge.vc_redist().runtime_dlls
    if ctx.platform.machine.upper() == "ARM64":
        names = tuple(n for n in names if n != "vcruntime140_1.dll")  # torch asks for it on x64 only
    if any(loaded_runtime(facts, name)[0] is None for name in names):
        return False
    return ctx.get(TorchFacts) is None or too_old(ctx) is None


def shadowing_cuda(facts: WindowsFacts) -> Iterator[DllFile]:
    """CUDA DLLs on PATH named like torch's own but of another build, or seen loaded from PATH
    (ED608 removes their folders; ED405 never keeps one of them)."""
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
    needs=(WindowsFacts,),
    consequence_of=("ED611", "ED613"),
    doc=RuleDoc(
        what="cudnn*, cublas*, cudart*, nvJitLink*, cusparse* DLLs in PATH folders (System32 "
        "among them) against the same-named DLLs in torch\\lib (file versions), and CUDA DLLs the "
        "DLL check saw loaded from PATH.",
        why="A same-named DLL loaded through PATH first wins for the whole process: [WinError 127].",
        fix="Remove the old CUDA/cuDNN folders from PATH (the exact edit is shown); rename a copy "
        "someone put into System32.",
        example="CUDA v12.1\\bin on PATH with cublas64_12.dll 12.1 while torch bundles 12.4.",
    ),
)
def cuda_dlls_on_path_shadow_torch(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(WindowsFacts)
    found = list(dict.fromkeys(shadowing_cuda(facts)))
    if not found:
        return
    torch_dlls = {f.name: f for f in facts.torch_cuda_dlls}
    lines = []
    for file in found:
        own = torch_dlls.get(file.name)
        theirs = f"{ntpath.basename(file.path)} {file.version or '?'} in {where(file)}"
        lines.append(theirs + (f" vs torch's {own.version}" if own else ", loaded into the DLL check"))
    fixes = list(
        folder_removal(
            ctx, found, "(builds still find a toolkit through CUDA_PATH/CUDA_HOME; torch needs none)"
        )
    )
    strays = [f for f in found if f.origin == SYSTEM32]
    if strays:
        fixes.append(
            Fix(
                summary="Rename the copies in System32 (PowerShell as administrator): they were copied "
                "there by hand or by another program's installer, and every process gets them first",
                commands=tuple(
                    f"Rename-Item -LiteralPath {powershell_quote(f.path)} -NewName "
                    f"{powershell_quote(ntpath.basename(f.path) + '.bak')}"
                    for f in strays
                ),
                link="https://github.com/pytorch/pytorch/issues/20202",
            )
        )
    yield Hit(
        title="CUDA DLLs on PATH have the names of torch's own but other versions",
        detail="; ".join(lines) + ". torch finds its copies in torch\\lib first, but whatever loads "
        "a DLL of that name through PATH first (torch's fallback after error 126, or TensorFlow / "
        "ONNX Runtime / an older CUDA app in the same process) wins for the whole process, and "
        "torch then fails with [WinError 127] (a missing procedure).",
        evidence=tuple(lines),
        fixes=tuple(fixes),
    )
