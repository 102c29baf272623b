"""Is torch there at all, and does `import torch` work?"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from envdoctor.model.ending import EndingKind
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import planned_fix
from envdoctor.rules.torch import import_errors
from envdoctor.shell import quote


@rule(
    code="ED001",
    name="torch-not-installed",
    severity=Severity.ERROR,
    summary="torch is not installed in the examined environment",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="Whether the examined interpreter can find the torch package at all.",
        why="Nothing else can work without it; often the package went into another "
        "environment (a different python, a different venv, a conda base).",
        fix="Install torch into this interpreter with the pinned command shown; running pip "
        "as `python -m pip` of this interpreter makes sure it lands here.",
        example="`pip install torch` ran in the base conda env while the project's venv is active.",
    ),
)
def torch_not_installed(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    if torch.installed or torch.crash is not None:
        return
    fix = planned_fix(ctx, "Install torch for this machine")
    if fix is None:  # no CUDA build fits (a GPU too old for every one, a driver too old): the CPU build
        fix = planned_fix(ctx, "Install torch's CPU build (no CUDA build fits this machine)", want_cuda=False)
    yield Hit(
        title=f"torch is not installed in {ctx.interpreter.path}",
        detail=_not_importable(ctx.interpreter.reason),
        evidence=("torch.installed = false",),
        fixes=(fix,) if fix else (),
    )


def _not_importable(reason: str) -> str:
    """ED001's detail in whole sentences. The chooser's reason can hold clauses ("the project
    environment ./.venv; envdoctor's own environment (...) has no torch (--python chooses
    another)", "envdoctor's own environment (...): no project environment found (...); create
    one ..."), which read badly as one apposition."""
    where, _, rest = reason.partition("; ")
    where, _, found = where.partition(": ")
    if not rest and not found:
        return f"The examined environment, {where}, cannot import torch."
    text = f"The examined environment is {where}, and it cannot import torch."
    if found:
        return f"{text} {found[0].upper()}{found[1:]}{f'; {rest}' if rest else ''}."
    rest = rest.replace(" (--python chooses another)", "; --python examines another interpreter")
    return f"{text} It was chosen because {rest}."


@dataclass(frozen=True)
class KnownCause:
    """A known import failure: what the message looks like, what it means, what to do."""

    pattern: str
    cause: str
    fix: str
    commands: tuple[str, ...] = ()  # "{python}" stands for the examined interpreter
    link: str | None = None


# Ordered from most to least specific; the first match explains the failure.
IMPORT_CAUSES: tuple[KnownCause, ...] = (
    KnownCause(
        r"undefined symbol|version `?\S+'? not defined in file",
        "A CUDA library from outside torch (a system CUDA toolkit or cuDNN on LD_LIBRARY_PATH) is "
        "loaded instead of the one torch bundles, and lacks a symbol torch needs.",
        "Start a shell without the foreign CUDA libraries on the loader path, then try again; "
        "if that works, remove those entries from LD_LIBRARY_PATH for good.",
        ("env -u LD_LIBRARY_PATH {python} -c 'import torch; print(torch.__version__)'",),
        "https://github.com/pytorch/pytorch/issues/111469",
    ),
    KnownCause(
        r"WinError 1455",
        "Windows could not commit the memory torch's CUDA DLLs need: the paging file is too small "
        "(each DataLoader worker process loads them again).",
        "Let Windows manage the page file size (or set a larger one), keep free space on its drive, "
        "restart; use fewer DataLoader workers.",
        ("SystemPropertiesPerformance.exe",),
        "https://github.com/pytorch/pytorch/issues/59904",
    ),
    KnownCause(
        r"WinError 1114|WinError 126|WinError 127|c10\.dll|Error loading .*\.dll",
        "Windows could not load one of torch's DLLs: most often an old or missing Microsoft "
        "Visual C++ 2015-2022 redistributable, else another program's DLL earlier on PATH.",
        "Install the latest VC++ 2015-2022 x64 redistributable, then open a new terminal.",
        ("winget install --id Microsoft.VCRedist.2015+.x64",),
        "https://aka.ms/vc14/vc_redist.x64.exe",
    ),
    KnownCause(
        r"lib(cudart|cublas|cudnn|nccl|nvJitLink|cusparse|cufft)\S*: cannot open shared object",
        "A CUDA library torch needs is missing: the nvidia-* wheels torch depends on are absent or "
        "broken (often after an interrupted or --no-deps install).",
        "Reinstall torch with its dependencies.",
    ),
    KnownCause(
        r"GLIBC_\d",
        "This torch wheel needs a newer C library (glibc) than the system has.",
        "Use an older torch release that supports this distribution, or a newer distribution.",
    ),
    KnownCause(
        r"compiled using NumPy 1\.x cannot be run in|numpy\.core\.multiarray failed to import",
        "torch (or an extension) was built against NumPy 1.x while NumPy 2 is installed.",
        "Install a NumPy the build supports, or upgrade torch.",
        ('{python} -m pip install "numpy<2"',),
    ),
    KnownCause(
        r"No module named 'torch\._C'|torch\._C|name '_C' is not defined|No module named _C",
        "torch's compiled core is missing: a broken install, or Python is running from inside "
        "the torch source tree.",
        "Run from another folder; if it persists, reinstall torch.",
    ),
)


def explain_import_error(message: str) -> KnownCause | None:
    for cause in IMPORT_CAUSES:
        if re.search(cause.pattern, message):
            return cause
    return None


@rule(
    code="ED002",
    name="torch-import-fails",
    severity=Severity.ERROR,
    summary="`import torch` raises an exception",
    needs=(TorchFacts,),
    consequence_of=(
        *("ED604", "ED601", "ED602", "ED603", "ED609", "ED610", "ED611", "ED408", "ED210"),
        *("ED217", "ED218", "ED220", "ED221", "ED222", "ED223", "ED224", "ED225"),
    ),
    doc=RuleDoc(
        what="Whether `import torch` succeeds in the examined interpreter; known messages "
        "are mapped to their causes (library shadowing, Windows DLL loading, missing CUDA "
        "libraries, old glibc, NumPy 2).",
        why="An installed torch that does not import is the most confusing failure: the "
        "package is there, but nothing runs.",
        fix="Follow the cause-specific fix shown; if none matches, reinstall a torch that "
        "matches this machine.",
        example="ImportError: libcusparse.so.12: undefined symbol: __nvJitLinkComplete_12_4, "
        "version libnvJitLink.so.12 (pytorch/pytorch#111469).",
    ),
)
def torch_import_fails(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    error = torch.import_error
    if error is None:
        return
    first_line = error.message.strip().splitlines()[0] if error.message.strip() else ""
    cause = explain_import_error(error.message)
    fixes: list[Fix] = []
    outside = _outside_site_packages(torch)
    if outside is not None:
        cause = None  # the folder is the cause: the generic reading of the message adds nothing
        fixes.append(
            Fix(
                summary=f"Start Python from another folder: torch is imported from {outside}, a folder that "
                "is no installed package (a source checkout of torch, or a folder named torch in the "
                "working directory), which shadows the installed torch",
                commands=("cd ~",) if ctx.platform.os != "windows" else ("cd $HOME",),
            )
        )
    if cause is not None and outside is None:
        python = quote(ctx.interpreter.path, ctx.platform.os)
        commands = tuple(c.replace("{python}", python) for c in cause.commands)
        fixes.append(Fix(summary=cause.fix, commands=commands, link=cause.link))
    reinstall = planned_fix(ctx, "Reinstall a matching torch")
    if reinstall is not None:
        fixes.append(reinstall)
    detail = f"{error.type}: {first_line}"
    if outside is not None:
        detail += f"\nLikely cause: torch is imported from {outside}, not from an installed package."
    elif cause is not None:
        detail += f"\nLikely cause: {cause.cause}"
    yield Hit(
        title="import torch fails",
        detail=detail,
        evidence=(f"torch.import_error.type = {error.type}",),
        fixes=tuple(fixes),
    )


def _outside_site_packages(torch: TorchFacts) -> str | None:
    """The folder torch was imported from when it is a source tree or a stray `torch` folder (not
    site-packages / dist-packages); None when it is an installed package or not known."""
    location = (torch.location or "").replace("\\", "/")
    if not location:
        return None
    folder = location.rsplit("/", 1)[0] if location.endswith(".py") else location
    if "site-packages" in folder or "dist-packages" in folder or "/conda" in folder or ".egg" in folder:
        return None
    return folder


# Why each ending happens, in the user's terms.
_CRASH_CAUSE = {
    EndingKind.TIMEOUT: "A hang while importing torch or initialising CUDA: a stuck driver, a GPU held by "
    "another process, or a network file system.",
    EndingKind.SIGNAL: "A native crash while loading torch or its CUDA libraries.",
    EndingKind.NOT_STARTED: "The interpreter disappeared or cannot be executed.",
    EndingKind.EXITED: "The interpreter exited before reporting.",
}


@rule(
    code="ED003",
    name="torch-check-crashed",
    severity=Severity.ERROR,
    summary="importing torch crashed, hung or exited without a report",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="Whether the child process that imports torch finished its report; a segfault, "
        "a hang past the timeout, or an early exit is reported with the stage it reached.",
        why="A crash during import or CUDA initialisation would also crash the user's "
        "program; envdoctor runs it isolated so the rest of the report still comes out.",
        fix="Reproduce by hand with faulthandler enabled to see the native stack; check the "
        "driver and the library path findings.",
        example="`import torch` dies with SIGSEGV (signal 11) while loading CUDA libraries; or "
        "the shell's working directory was deleted, where the import fails whatever is installed.",
    ),
)
def torch_check_crashed(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    end = torch.crash
    if end is None:
        return
    ending = end.ending
    tail = ending.last_output(3)
    detail = _CRASH_CAUSE[ending.kind] + ("\nLast output: " + tail if tail else "")
    python = quote(ctx.interpreter.path, ctx.platform.os)
    command = f'{python} -X faulthandler -c "import torch; print(torch.__version__)"'
    if end.exit_signal == SIGILL and not end.working_directory_gone:
        yield _illegal_instruction(ctx, torch, ending.describe(end.last_stage), command)
        return
    if end.working_directory_gone:
        # Named first: the crash is this folder's doing, and reproducing it here teaches nothing.
        yield Hit(
            title=f"the torch check {ending.describe(end.last_stage)}: "
            "the working directory no longer exists",
            detail="The folder this shell is in was deleted (or moved) after the shell entered it. "
            "`import torch` fails there for any program, whatever is installed." + ("\n" + detail),
            evidence=("torch.crash", "working directory: deleted"),
            fixes=(
                Fix(
                    summary="Change to a folder that exists, then run envdoctor again",
                    commands=("cd ~", "envdoctor check") if ctx.platform.os != "windows" else ("cd ~",),
                ),
            ),
        )
        return
    yield Hit(
        title=f"the torch check {ending.describe(end.last_stage)}",
        detail=detail,
        evidence=("torch.crash",),
        fixes=(Fix(summary="Reproduce by hand to see the full error", commands=(command,)),),
    )


SIGILL = 4


def _illegal_instruction(ctx: RuleContext, torch: TorchFacts, ended: str, command: str) -> Hit:
    """SIGILL while importing torch: an instruction this CPU lacks, in torch or in NumPy's OpenBLAS."""
    around = torch.surroundings
    machine = (around.machine if around is not None and around.machine else ctx.platform.machine).lower()
    numpy = around.numpy_version if around is not None else None
    flags = around.cpu_flags if around is not None else None
    fixes: list[Fix] = []
    if machine in ("aarch64", "arm64"):
        cause = (
            "NumPy's bundled OpenBLAS picks kernels by the CPU it detects, and on some ARM cores "
            "(NVIDIA Jetson) it detects wrong and runs an instruction they lack; import torch imports "
            f"NumPy{f' ({numpy})' if numpy else ''}."
        )
        fixes += import_errors.variable_fixes(
            ctx, "OPENBLAS_CORETYPE", "ARMV8", "so that OpenBLAS uses plain ARMv8 kernels"
        )
        if numpy == "1.19.5":
            fixes.append(
                Fix(
                    summary="Install a NumPy whose OpenBLAS detects this CPU right (1.19.5 is the one "
                    "known to crash on Jetson)",
                    commands=(
                        f'{quote(ctx.interpreter.path, ctx.platform.os)} -m pip install "numpy!=1.19.5"',
                    ),
                )
            )
    else:
        lacking = [f for f in ("avx", "avx2") if flags is not None and f not in flags]
        have = f" This CPU has no {' and no '.join(f.upper() for f in lacking)}." if lacking else ""
        cause = (
            "torch's binaries ran an instruction this CPU does not have (AVX in torch 1.6.0's default "
            f"code path, for one).{have}"
        )
        planned = planned_fix(ctx, "Install a torch release whose binaries run on this CPU (not 1.6.0)")
        if planned is not None:
            fixes.append(planned)
    fixes.append(Fix(summary="Reproduce by hand to see where it stops", commands=(command,)))
    return Hit(
        title=f"the torch check {ended}: illegal instruction (SIGILL)",
        detail=f"The process died of SIGILL: the CPU met an instruction it does not have. {cause}",
        evidence=(
            "torch.crash.exit_signal = 4",
            f"machine {machine}",
            *((f"numpy {numpy}",) if numpy else ()),
        ),
        fixes=tuple(fixes),
    )
