"""The Microsoft Visual C++ v14 runtime torch links against: missing (ED601), too old in System32
for the installed torch (ED602), or an older copy elsewhere that loads first (ED603)."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.knowledge import windows as knowledge
from envdoctor.model.findings import Severity
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.probes.windows import APP_DIR, PATH, SYSTEM32, TORCH_LIB, DllFile, WindowsFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import planned_fix
from envdoctor.rules.windows.dlls import (
    copy_fixes,
    described,
    loaded_runtime,
    redist_fixes,
    runtime_owner,
    too_old,
    torch_version,
)


@rule(
    code="ED601",
    name="vc-runtime-missing",
    severity=Severity.ERROR,
    summary="the Microsoft Visual C++ v14 runtime DLLs torch needs are missing",
    needs=(WindowsFacts,),
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


def _evidence(loaded: DllFile, observed: bool, facts: WindowsFacts) -> tuple[str, ...]:
    how = "loaded in the DLL check" if observed else "the first copy in the search order"
    system = facts.runtime(loaded.name, SYSTEM32)
    return (
        f"{loaded.name} {how}: {described(loaded)}",
        *(f"System32 copy: {described(f)}" for f in system if f.path != loaded.path),
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
    found = too_old(ctx)
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
        title=f"{minimum.dll} {loaded.version} is too old for torch {torch_version(ctx)} "
        f"(needs >= {minimum.minimum})",
        detail=f"torch >= {minimum.torch} loads {minimum.dll} from {facts.system32}, version "
        f"{loaded.version}; below {minimum.minimum} import torch fails with '{minimum.error}' on "
        f"c10.dll. Caveat: {minimum.caveat}",
        evidence=_evidence(loaded, observed, facts),
        fixes=tuple(fixes),
    )


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
    found = too_old(ctx)
    if found is None:
        return
    loaded, observed, minimum = found
    if loaded.origin == SYSTEM32:
        return  # ED602
    facts = ctx.need(WindowsFacts)
    system = facts.runtime(minimum.dll, SYSTEM32)
    system_ok = any((knowledge.file_version(f.version) or minimum.minimum) >= minimum.minimum for f in system)
    owner = runtime_owner(loaded, ctx)
    fixes = list(copy_fixes(ctx, loaded, minimum))
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
        f"{torch_version(ctx)}",
        detail=f"{state} {loaded.path} ({owner}) is the copy torch gets, because {why}. torch >= "
        f"{minimum.torch} needs {minimum.dll} >= {minimum.minimum}: '{minimum.error}' on c10.dll. "
        f"Installing the redistributable does not help while this copy loads first. Caveat: "
        f"{minimum.caveat}",
        evidence=_evidence(loaded, observed, facts),
        fixes=tuple(fixes),
    )
