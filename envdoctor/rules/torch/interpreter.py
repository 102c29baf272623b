"""Interpreters torch has no wheel for (ED020-ED022): a 32-bit Python, a Python the wanted release
(or every release) has no wheel for, and a free-threaded Python (3.13t, 3.14t) where the build or
a companion has none. pip then says "Could not find a version that satisfies the requirement torch
(from versions: none)", or falls back to the 0.1.2 placeholder on the default index.

Facts: the python probe (version, bits, free-threading), the torch probe, and the error texts
(pasted under `envdoctor why`, or captured) for the release a requirement pinned. Which release has
which Python: knowledge/interpreters.py over releases.json and interpreters.json.
"""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor import knowledge
from envdoctor.knowledge import interpreters
from envdoctor.knowledge.signatures import ErrorEvidence
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import planned_fix
from envdoctor.util.lazy_re import Lazy
from envdoctor.util.records import record

PYTHON_DOWNLOADS = "https://www.python.org/downloads/"
COMPATIBILITY = "https://github.com/pytorch/pytorch/blob/main/RELEASE.md#release-compatibility-matrix"
_OS_WORDS = {"windows": "Windows", "macos": "macOS", "linux": "Linux"}
# pip's words for a requirement it found nothing for; the package and the pinned version.
_NOT_FOUND = Lazy(
    r"(?:satisfies the requirement|No matching distribution found for)\s+"
    r"(?P<package>[A-Za-z0-9][A-Za-z0-9._-]{0,80})\s*(?:={2,3}\s*(?P<version>\d[0-9A-Za-z.+!]{0,40}))?"
)
# uv's words for the same (its resolver names the package it could not find on any index).
_UV_NOT_FOUND = Lazy(
    r"Because (?P<package>[A-Za-z0-9][A-Za-z0-9._-]{0,80}) was not found in the package registry"
)
_LINKER_LIB = Lazy(r"cannot open file '(?P<lib>python3\d+)\.lib'")
_PLACEHOLDER = Lazy(r"from versions: 0\.1\.2|version=\"0\.1\.2\.post2\"|torch-0\.1\.2\.post2")


def _platform(ctx: RuleContext) -> str:
    return knowledge.platform_key(ctx.platform.os, ctx.platform.machine)


def _os_word(ctx: RuleContext) -> str:
    return _OS_WORDS.get(ctx.platform.os, ctx.platform.os)


def _torch_works(ctx: RuleContext) -> bool:
    torch = ctx.get(TorchFacts)
    return torch is not None and torch.imported


@record
class NotFound:
    package: str
    version: str | None
    line: str


def not_found(evidence: ErrorEvidence | None) -> tuple[NotFound, ...]:
    """Every requirement pip said it found no distribution for, in the error texts."""
    if evidence is None:
        return ()
    found: dict[tuple[str, str | None], NotFound] = {}
    for text in evidence.texts:
        for raw in text.text.splitlines()[:5000]:
            line = raw[:2000]
            for match in _NOT_FOUND.finditer(line):
                package = match.group("package").lower().rstrip(".")
                version = match.group("version")
                if version is not None:
                    version = version.rstrip(".")
                found.setdefault((package, version), NotFound(package, version, line.strip()[:300]))
            for match in _UV_NOT_FOUND.finditer(line):
                package = match.group("package").lower().rstrip(".")
                found.setdefault((package, None), NotFound(package, None, line.strip()[:300]))
    return tuple(found.values())


def _said(evidence: ErrorEvidence | None, pattern: Lazy) -> str | None:
    if evidence is None:
        return None
    for text in evidence.texts:
        for raw in text.text.splitlines()[:5000]:
            if pattern.search(raw[:2000]):
                return raw.strip()[:300]
    return None


def _new_environment_fix(ctx: RuleContext, minor: str, summary: str, free_threaded: bool = False) -> Fix:
    """Create an environment with Python `minor` and examine it there: that check plans the install."""
    suffix = "t" if free_threaded else ""
    folder = ".venv-ft" if free_threaded else ".venv"
    if ctx.platform.os == "windows":
        create = f"py -{minor}{suffix} -m venv {folder}"
    else:
        create = f"python{minor}{suffix} -m venv {folder}"
    return Fix(
        summary=f"{summary}, create the project environment with it and examine that one (its check "
        "shows the command that installs torch there)",
        commands=(create, f"envdoctor check --python {folder}"),
        link=PYTHON_DOWNLOADS,
    )


# --- ED020: a 32-bit interpreter --------------------------------------------------------------------


@rule(
    code="ED020",
    name="python-32-bit-no-torch-wheel",
    severity=Severity.ERROR,
    summary="the examined Python is a 32-bit build, and torch has no wheel for any 32-bit Python",
    needs=(PythonFacts,),
    doc=RuleDoc(
        what="The word size of the examined interpreter (sys.maxsize), when torch is not working there.",
        why="torch publishes wheels for 64-bit interpreters only (Windows x86-64, Linux x86-64 and "
        "aarch64, macOS arm64). On a 32-bit Python pip finds nothing but the 0.1.2 placeholder "
        'releases on the default index ("from versions: 0.1.2, 0.1.2.post1, 0.1.2.post2"), or tries '
        "to build torch-0.1.2.post2 from source and fails with a confusing error; no index has a build.",
        fix='Install a 64-bit Python (on Windows the python.org "Windows installer (64-bit)"; on a '
        "32-bit ARM board a 64-bit OS) and create the environment with it.",
        example="Windows 10 with C:\\Program Files (x86)\\Python38-32\\python.exe: `pip install torch` "
        "tries to build torch 0.1.2.post2.",
    ),
)
def python_32_bit(ctx: RuleContext) -> Iterator[Hit]:
    python = ctx.need(PythonFacts)
    if python.bits >= interpreters.wheel_bits() or _torch_works(ctx):
        return
    platform = _platform(ctx)
    newest = interpreters.newest_python(platform) or python.minor
    said = _said(ctx.get(ErrorEvidence), _PLACEHOLDER)
    detail = (
        f"{python.executable} is a {python.bits}-bit Python {python.version}. torch has wheels for "
        f"64-bit interpreters only, so no index offers one here: pip finds only the "
        f"{interpreters.placeholder_release()} placeholder releases on the default index (or tries to "
        "build torch-0.1.2.post2 from source, which fails)."
    )
    if said:
        detail += f" The error shows it: “{said}”."
    if ctx.platform.os == "windows":
        install = Fix(
            summary=f'Install a 64-bit Python {newest} (python.org\'s "Windows installer (64-bit)", or '
            "winget), then open a new terminal",
            commands=(f"winget install --id Python.Python.{newest}",),
            link=PYTHON_DOWNLOADS,
        )
    else:
        install = Fix(
            summary=f"Use a 64-bit system (x86_64 or aarch64) and its Python: a {python.bits}-bit OS "
            f"({ctx.platform.machine}) has no torch wheel at all",
            link=COMPATIBILITY,
        )
    yield Hit(
        title=f"Python {python.version} here is a {python.bits}-bit build: torch has no wheel for it",
        detail=detail,
        evidence=(f"python.bits = {python.bits}", f"python.executable = {python.executable}")
        + ((f"error: {said}",) if said else ()),
        fixes=(install, _new_environment_fix(ctx, newest, f"Then, with 64-bit Python {newest} installed")),
    )


# --- ED021: no wheel for this Python --------------------------------------------------------------


def _pinned_torch(ctx: RuleContext) -> NotFound | None:
    for item in not_found(ctx.get(ErrorEvidence)):
        if item.package == "torch" and item.version is not None:
            return item
    return None


@rule(
    code="ED021",
    name="no-torch-wheel-for-this-python",
    severity=Severity.ERROR,
    summary="the torch release asked for (or every release) has no wheel for this Python version",
    needs=(PythonFacts,),
    doc=RuleDoc(
        what="The examined Python's version against the Python versions of the torch release a "
        "requirement pins (from the error text: `torch==2.3.1 (from versions: none)`), or, with no "
        "pin and torch missing, against every release envdoctor knows for this platform.",
        why="Each torch release has wheels for a handful of Python versions; pip silently skips the "
        'others and says "Could not find a version that satisfies the requirement torch==2.5.1 (from '
        'versions: ...)" even though the release exists. A Python newer than every release (a fresh '
        "3.15) has no torch at all until PyTorch publishes one.",
        fix="Create the environment with a Python the release supports (named), or keep this Python "
        "and install a release that has wheels for it (the command is shown).",
        example="Python 3.13 on Windows with requirements.txt pinning torch==2.5.1, which has "
        "wheels for 3.9-3.12 only.",
    ),
)
def no_torch_wheel_for_this_python(ctx: RuleContext) -> Iterator[Hit]:
    python = ctx.need(PythonFacts)
    if python.bits < interpreters.wheel_bits():
        return  # ED020: no Python version helps a 32-bit interpreter
    platform = _platform(ctx)
    pinned = _pinned_torch(ctx)
    if pinned is not None and pinned.version is not None:
        yield from _pinned_release(ctx, python, platform, pinned)
        return
    if _torch_works(ctx):
        return
    newest = interpreters.newest_python(platform)
    if newest is None or interpreters.minor_key(python.minor) <= interpreters.minor_key(newest):
        return
    yield Hit(
        title=f"no torch release envdoctor knows has a wheel for Python {python.minor} on {_os_word(ctx)}",
        detail=f"{python.executable} is Python {python.version}; the newest Python any release has "
        f"wheels for on {platform} is {newest} (envdoctor's data as of {knowledge.releases_as_of()}). "
        'pip therefore finds no torch at all ("from versions: none"). A newer torch release may add '
        f"it: PyTorch's nightly index (download.pytorch.org/whl/nightly/) gets a new Python first.",
        evidence=(f"python = {python.version}", f"newest supported Python on {platform} = {newest}"),
        fixes=(_new_environment_fix(ctx, newest, f"Install Python {newest}"),),
    )


def _pinned_release(ctx: RuleContext, python: PythonFacts, platform: str, pinned: NotFound) -> Iterator[Hit]:
    version = (pinned.version or "").split("+", 1)[0]
    supported = interpreters.pythons(version, platform)
    if supported is None or not supported or python.minor in supported:
        return  # a release envdoctor does not know, or one that has this Python: another cause
    span = interpreters.span(python.minor, platform)
    pythons = ", ".join(supported)
    detail = (
        f"The requirement pins torch {version}, whose wheels for {_os_word(ctx)} are for Python "
        f"{pythons}; this environment runs Python {python.version}, so pip skips every file of that "
        f"release and reports no matching distribution (“{pinned.line}”)."
    )
    if span.first is not None:
        detail += f" The first release with wheels for Python {python.minor} is {span.first}."
    fixes = [_new_environment_fix(ctx, supported[-1], f"Install Python {supported[-1]}")]
    keep = planned_fix(ctx, f"Keep Python {python.minor} and install a torch release that has wheels for it")
    if keep is not None and span.first is not None:
        fixes.append(keep)
    yield Hit(
        title=f"torch {version} has no wheel for Python {python.minor} on {_os_word(ctx)}",
        detail=detail,
        evidence=(f"python = {python.version}", f"torch {version} wheels: Python {pythons}", pinned.line),
        fixes=tuple(fixes),
    )


# --- ED022: a free-threaded interpreter -----------------------------------------------------------


@rule(
    code="ED022",
    name="free-threaded-python-without-wheels",
    severity=Severity.ERROR,
    summary="a free-threaded Python (3.13t, 3.14t) for which torch or a package it needs has no build",
    needs=(PythonFacts,),
    doc=RuleDoc(
        what="A free-threaded (no-GIL) interpreter where torch is missing or does not import, or "
        'where an error shows a package with no free-threaded wheel ("from versions: none") or an '
        "extension build that links the regular python3NN.lib.",
        why="Free-threaded Python has its own ABI (cp313t): it loads only wheels built for it. torch "
        "publishes experimental free-threaded builds (3.13t from 2.6, 3.14t from 2.9), but many "
        "companions (torchao, xformers, flash-attn) do not, a regular cp313 torch in a shared "
        'site-packages fails with "Failed to load PyTorch C extensions", and extension builds on '
        "Windows look for python3NN.lib where only python3NNt.lib exists.",
        fix="Use the regular (GIL) build of the same Python version for the project, or keep the "
        "free-threaded one in an environment of its own with builds made for it.",
        example="python3.13t on Windows runs a torch 2.6.0+cpu installed for python 3.13 into the "
        "same site-packages and fails to load torch._C.",
    ),
)
def free_threaded_python(ctx: RuleContext) -> Iterator[Hit]:
    python = ctx.need(PythonFacts)
    if not python.free_threaded:
        return
    evidence = ctx.get(ErrorEvidence)
    torch = ctx.get(TorchFacts)
    missing = [n for n in not_found(evidence) if n.package != "torch" or not _torch_works(ctx)]
    linker = _said(evidence, _LINKER_LIB)
    first = interpreters.free_threaded_from(python.minor)
    builds = (
        f"torch publishes experimental free-threaded builds for Python {python.minor}t from {first} on "
        "(PyTorch's per-variant indexes)"
        if first is not None
        else f"no torch release envdoctor knows has a free-threaded build for Python {python.minor}t"
    )
    tag = f"cp{python.minor.replace('.', '')}t"
    if missing and missing[0].package != "torch":
        item = missing[0]
        title = f"{item.package} has no build for free-threaded Python {python.minor}t"
        detail = (
            f"pip found no {item.package} for this interpreter (“{item.line}”): free-threaded Python loads "
            f"only {tag} wheels, and {item.package} publishes none for it. {builds}, but its companions "
            "often lag behind."
        )
    elif linker is not None:
        title = (
            f"an extension build links the regular Python library, which free-threaded {python.minor}t lacks"
        )
        detail = (
            f"The linker asks for the regular import library (“{linker}”), while a free-threaded "
            f"Python ships only the t-suffixed one ({tag}): building C++/CUDA extensions against torch "
            "fails there until the build tools learn the new name."
        )
    elif torch is None or not torch.imported:
        state = "does not import" if torch is not None and torch.installed else "is not installed"
        title = f"free-threaded Python {python.minor}t: torch {state}"
        detail = (
            f"{python.executable} is a free-threaded (no-GIL) build, which loads only {tag} wheels. "
            f"{builds}. A torch built for the regular Python {python.minor} (a shared site-packages, as "
            'the python.org Windows installer has) fails here with "Failed to load PyTorch C extensions".'
        )
    else:
        return
    fixes = [
        _new_environment_fix(
            ctx, python.minor, f"Use the regular (GIL) Python {python.minor} for this project instead"
        )
    ]
    if first is not None:
        fixes.append(
            _new_environment_fix(
                ctx,
                python.minor,
                f"Keep {python.minor}t in an environment of its own (torch {first} or newer has "
                "experimental builds for it)",
                free_threaded=True,
            )
        )
    yield Hit(
        title=title,
        detail=detail,
        evidence=(f"python = {python.version} (free-threaded)",) + ((linker,) if linker else ()),
        fixes=tuple(fixes),
    )
