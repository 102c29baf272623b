"""The Microsoft Visual C++ v14 runtime torch links against: missing (ED601), too old in System32
for the installed torch (ED602), or an older copy elsewhere that loads first (ED603): the one the DLL
check saw, or one a Python package bundles (the Qt bindings, pyzmq) that wins whenever that package
is imported before torch."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.knowledge import windows as knowledge
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.probes.windows import APP_DIR, PATH, SYSTEM32, TORCH_LIB, DllFile, WindowsFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import powershell_quote
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
from envdoctor.shell import quote


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
    info = knowledge.vc_redist()
    version = knowledge.file_version(registered)
    if (
        registered
        and version is not None
        and version < info.vcruntime140_1_from
        and missing == ["vcruntime140_1.dll"]
    ):
        said = (
            f"The registry records version {registered}: a Visual Studio 2015/2017 redistributable, "
            f"older than {info.vcruntime140_1_from} (2019), the first that ships vcruntime140_1.dll."
        )
    elif registered:
        said = f"The registry records version {registered}, so the installation is damaged."
    else:
        said = "The registry has no v14 redistributable either (both views)."
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
        "in the search order) is a copy outside System32 older than torch's minimum; and the "
        "copies Python packages bundle under that name (the Qt bindings' bin folders, PySide, "
        "pyzmq, pyarrow, delvewheel's .libs folders), older than it.",
        why="Windows gives every DLL that asks for msvcp140.dll the copy loaded first; a "
        "conda environment's or another package's old copy breaks torch even when the "
        "system redistributable is new. A package's copy is loaded when that package is "
        "imported: a program that imports PyQt5 before torch fails, the same torch imported "
        "alone works.",
        fix="Import torch before that package (first line of the entry script), update the package "
        "that ships the old copy (conda: vc14_runtime), or remove its folder from PATH.",
        example="A PyQt5 GUI on torch >= 2.9: main.py imports PyQt5 first and c10.dll fails to "
        "initialise; importing torch first fixes it (JiaxinWang123/StoManager1#50).",
    ),
)
def old_msvcp140_loads_first(ctx: RuleContext) -> Iterator[Hit]:
    yield from _bundled_copies(ctx)
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
    pin = planned_fix(
        ctx, f"If you cannot update it: torch before {minimum.torch} does not need it", torch="2.8.0"
    )
    if pin is not None:
        fixes.append(pin)
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


def _import_name(file: DllFile) -> str:
    """What a program imports to load `file`'s package: its folder under site-packages."""
    return file.package or "that package"


def _bundled_copies(ctx: RuleContext) -> Iterator[Hit]:
    """Packages whose own msvcp140.dll is older than this torch needs: whichever is imported first
    serves every later DLL, so torch fails whenever one of them comes before it."""
    facts = ctx.need(WindowsFacts)
    minimum = knowledge.runtime_minimum(torch_version(ctx))
    if minimum is None:
        return
    old = [
        f
        for f in facts.bundled_runtime
        if (version := knowledge.file_version(f.version)) is not None and version < minimum.minimum
    ]
    if not old:
        return
    names = list(dict.fromkeys(_import_name(f) for f in old))
    python = quote(ctx.interpreter.path, "windows")
    first = names[0]
    fixes = [
        Fix(
            summary=f"Import torch before {', '.join(names)}: put `import torch` above the first "
            f"import of {first} in the program's entry script (or its __init__), so that torch's "
            f"requirement is met by System32's msvcp140.dll before {first} maps its own",
            commands=(f'{python} -c "import torch; import {first}; print(torch.__version__)"',),
            link="https://github.com/JiaxinWang123/StoManager1/issues/50",
        ),
        Fix(
            summary=f"Update {', '.join(names)} to a release that ships msvcp140.dll >= "
            f"{minimum.minimum} or links the runtime statically (pyzmq does since zeromq/pyzmq#2012); "
            "see a copy's version with PowerShell: "
            + "; ".join(f"(Get-Item {powershell_quote(f.path)}).VersionInfo.FileVersion" for f in old[:2]),
        ),
        Fix(
            summary="Load torch in a separate process from the GUI (a worker started before Qt is "
            "imported), as setiastro/setiastrosuitepro#97 did",
        ),
    ]
    system = facts.runtime(minimum.dll, SYSTEM32)
    system_ok = any((knowledge.file_version(f.version) or minimum.minimum) >= minimum.minimum for f in system)
    if not system_ok:
        fixes.extend(redist_fixes())
    copies = "; ".join(f"{f.path} {f.version} ({_import_name(f)})" for f in old)
    yield Hit(
        title=f"{', '.join(names)} bundles an older msvcp140.dll ({old[0].version}) than torch "
        f"{torch_version(ctx)} needs: importing it first breaks torch",
        detail=f"torch >= {minimum.torch} needs {minimum.dll} >= {minimum.minimum}. These packages carry "
        f"their own: {copies}. Windows hands every later request for {minimum.dll} the copy loaded "
        f"first, so a program that imports {first} before torch fails with '{minimum.error}' on "
        f"c10.dll (or torch_python.dll), while torch imported on its own, as envdoctor's check does, "
        f'works. Tell them apart: `{python} -c "import {first}; import torch"` fails, the other '
        f"order works. Caveat: {minimum.caveat}",
        evidence=tuple(f"{f.path}: {f.version}" for f in old[:3]),
        fixes=tuple(fixes),
    )
