"""Is torch there at all, and does `import torch` work?"""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.install.packages import PackageRequest
from envdoctor.knowledge.symptoms import SymptomCause, symptom
from envdoctor.model.ending import EndingKind
from envdoctor.model.findings import Fix, FixKind, Severity
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules import symptoms
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import package_fix, planned_fix
from envdoctor.rules.symptoms import POSSIBLE, RULED_OUT, Likelihood, Reader, Reading, reads
from envdoctor.rules.torch import import_errors
from envdoctor.shell import quote


@rule(
    code="ED001",
    name="torch-not-installed",
    severity=Severity.ERROR,
    summary="torch is not installed in the examined environment",
    needs=(TorchFacts,),
    consequence_of=("ED020", "ED021", "ED022"),  # no torch wheel for this Python: why none is there
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
    # envdoctor's own isolated environment is never where torch belongs: the causes of a torch
    # missing from the user's interpreter (and their pip commands) do not apply to it.
    causes = () if ctx.interpreter.own_isolated else symptoms.ranked(ctx, "ED001", values=_values(ctx))
    usual = " If torch was installed and the error persists, the usual reasons: " if causes else ""
    yield Hit(
        title=f"torch is not installed in {ctx.interpreter.path}",
        detail=_not_importable(ctx.interpreter.reason) + usual + symptoms.listed(causes),
        evidence=("torch.installed = false", *symptoms.evidence(causes)),
        fixes=((fix,) if fix else ()) + symptoms.cause_fixes(causes),
    )


def _values(ctx: RuleContext) -> dict[str, str]:
    """The data's placeholders for this machine: the examined interpreter, quoted for its shell."""
    return {"python": quote(ctx.interpreter.path, ctx.platform.os)}


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


SYMPTOM_IMPORT = "ED002"


def explain_import_error(message: str) -> SymptomCause | None:
    """The first cause (in the data's order, most specific first) whose words the message carries."""
    found = symptom(SYMPTOM_IMPORT)
    return next((c for c in found.causes if c.said_in(message)), None) if found is not None else None


def _import_message(ctx: RuleContext) -> str:
    torch = ctx.get(TorchFacts)
    error = torch.import_error if torch is not None else None
    return f"{error.type}: {error.message}" if error is not None else ""


def _worded(key: str) -> Reader:
    """A cause named by the words of the import error: confirmed when they are there; ruled out
    when another cause's words are (the first one explains it) or the folder is the cause."""

    def read(ctx: RuleContext) -> Reading:
        torch = ctx.get(TorchFacts)
        if torch is not None and _outside_site_packages(torch) is not None:
            return RULED_OUT
        first = explain_import_error(_import_message(ctx))
        if first is None:
            return POSSIBLE
        if first.key != key:
            return RULED_OUT
        fix = planned_fix(ctx, first.fix.summary) if first.fix.planned == "reinstall" else None
        return Reading(Likelihood.CONFIRMED, fix=fix)

    return read


def _register_worded() -> None:
    found = symptom(SYMPTOM_IMPORT)
    for cause in found.causes if found is not None else ():
        if cause.pattern is not None:
            reads(SYMPTOM_IMPORT, cause.key)(_worded(cause.key))


_register_worded()


@reads(SYMPTOM_IMPORT, "shadowing-folder")
def _shadowing_folder(ctx: RuleContext) -> Reading:
    torch = ctx.get(TorchFacts)
    outside = _outside_site_packages(torch) if torch is not None else None
    if outside is not None:
        return Reading(
            Likelihood.CONFIRMED,
            title=f"torch is imported from {outside}, a folder that is no installed package (a source "
            "checkout of torch, or a folder named torch in the working directory), which shadows the "
            "installed torch",
        )
    if torch is not None and torch.location:
        return RULED_OUT  # imported from an installed package
    return POSSIBLE


@rule(
    code="ED002",
    name="torch-import-fails",
    severity=Severity.ERROR,
    summary="`import torch` raises an exception",
    needs=(TorchFacts,),
    consequence_of=(
        *("ED604", "ED601", "ED602", "ED603", "ED609", "ED610", "ED611", "ED408", "ED210"),
        *("ED217", "ED218", "ED220", "ED221", "ED222", "ED223", "ED224", "ED225"),
        "ED137",  # a wheel of another JetPack
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
    causes = symptoms.ranked(ctx, SYMPTOM_IMPORT, values=_values(ctx))
    fixes = list(symptoms.cause_fixes(causes))
    if not any(f.kind == FixKind.INSTALL for f in fixes):
        reinstall = planned_fix(ctx, "Reinstall a matching torch")
        if reinstall is not None:
            fixes.append(reinstall)
    detail = f"{error.type}: {first_line}"
    confirmed = [c for c in causes if c.likelihood is Likelihood.CONFIRMED]
    if confirmed:
        detail += f"\nLikely cause: {confirmed[0].title}."
    else:
        detail += "\nThe message names none of the known causes; the usual ones: " + symptoms.listed(causes)
    yield Hit(
        title="import torch fails",
        detail=detail,
        evidence=(f"torch.import_error.type = {error.type}", *symptoms.evidence(causes)),
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
    EndingKind.TIMEOUT: "A hang while importing torch or initialising CUDA.",
    EndingKind.SIGNAL: "A native crash while loading torch or its CUDA libraries.",
    EndingKind.NOT_STARTED: "The interpreter disappeared or cannot be executed.",
    EndingKind.EXITED: "The interpreter exited before reporting.",
}
SYMPTOM_CRASH = "ED003"


def _by_ending(key: str) -> Reader:
    """A crash cause is possible where it explains this ending (a signal, a timeout, ...)."""

    def read(ctx: RuleContext) -> Reading:
        torch = ctx.get(TorchFacts)
        end = torch.crash if torch is not None else None
        found = symptom(SYMPTOM_CRASH)
        cause = found.cause(key) if found is not None else None
        if end is None or cause is None or str(end.ending.kind) not in cause.endings:
            return RULED_OUT
        if key == "illegal-instruction" and end.exit_signal is not None:
            return Reading(Likelihood.CONFIRMED) if end.exit_signal == SIGILL else RULED_OUT
        return POSSIBLE

    return read


def _register_endings() -> None:
    found = symptom(SYMPTOM_CRASH)
    for cause in found.causes if found is not None else ():
        reads(SYMPTOM_CRASH, cause.key)(_by_ending(cause.key))


_register_endings()


@rule(
    code="ED003",
    name="torch-check-crashed",
    severity=Severity.ERROR,
    summary="importing torch crashed, hung or exited without a report",
    needs=(TorchFacts,),
    consequence_of=("ED137",),  # a wheel of another JetPack
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
    causes = symptoms.ranked(ctx, SYMPTOM_CRASH, values=_values(ctx))
    if causes:
        detail += "\nThe usual causes: " + symptoms.listed(causes)
    yield Hit(
        title=f"the torch check {ending.describe(end.last_stage)}",
        detail=detail,
        evidence=("torch.crash", *symptoms.evidence(causes)),
        fixes=(
            Fix(summary="Reproduce by hand to see the full error", commands=(command,)),
            *symptoms.cause_fixes(causes),
        ),
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
                package_fix(
                    ctx,
                    "Install a NumPy whose OpenBLAS detects this CPU right (1.19.5 is the one known to "
                    "crash on Jetson)",
                    PackageRequest(("numpy!=1.19.5",)),
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
