"""NumPy beside torch: a NumPy 2 that a torch built for NumPy 1.x cannot use (ED210), and no NumPy
at all (ED211)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from envdoctor.install.packages import PackageRequest
from envdoctor.knowledge import numpy_support
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.torch_build import BridgeStatus, NumpyFacts, TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import package_fix, planned_fix

# What NumPy 2 and torch say when a torch built against NumPy 1.x meets NumPy 2.
_NUMPY1_SIGNS = (
    "_ARRAY_API not found",
    "compiled using NumPy 1.x cannot be run in",
    "numpy.core.multiarray failed to import",
)
_NUMPY2_WORDS = ("_ARRAY_API not found", "compiled using NumPy 1.x cannot be run in")


def _first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else ""


def _numpy1_signs(torch: TorchFacts) -> list[str]:
    """torch's warnings and NumPy's own words that show the NumPy bridge failed for this reason."""
    numpy = torch.numpy
    texts = list(torch.warnings)
    if numpy is not None:
        texts += [numpy.message or "", numpy.error or ""]
    if torch.import_error is not None:
        texts.append(torch.import_error.message)
    found = []
    for text in texts:
        for line in text.splitlines():
            if any(sign in line for sign in _NUMPY1_SIGNS) and line.strip() not in found:
                found.append(line.strip())
    return found


def _numpy_fix(ctx: RuleContext, summary: str, requirement: str) -> Fix:
    """NumPy for the examined interpreter, as the planner routes it on this machine's sources."""
    return package_fix(ctx, summary, PackageRequest((requirement,)))


@rule(
    code="ED210",
    name="numpy2-with-torch-built-for-numpy1",
    severity=Severity.ERROR,
    summary="NumPy 2 is installed beside a torch built for NumPy 1.x: torch's NumPy bridge is off",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="The NumPy version beside torch against the first torch whose wheels are built "
        "against NumPy 2 (numpy.json: 2.3.0 on Linux and macOS, 2.4.1 on Windows), and what the "
        "import said: NumPy's 'A module that was compiled using NumPy 1.x cannot be run in NumPy "
        "2.x' and torch's 'Failed to initialize NumPy: _ARRAY_API not found'.",
        why="import torch still works, so the problem shows up later: the first tensor.numpy(), "
        "torch.from_numpy() or DataLoader collating NumPy arrays raises 'RuntimeError: Numpy is "
        "not available'.",
        fix='Pin NumPy below 2 for this torch (`pip install "numpy<2"`), or upgrade torch to a '
        "release built for NumPy 2 (the command is shown).",
        example="torch 2.2.1 with numpy 2.0.0: 'UserWarning: Failed to initialize NumPy: "
        "_ARRAY_API not found' on import, then 'RuntimeError: Numpy is not available'.",
    ),
)
def numpy2_with_torch_built_for_numpy1(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    numpy = torch.numpy or NumpyFacts()
    if not torch.installed:
        return
    version = torch.version or torch.dist_version
    old = numpy_support.built_for_numpy1(version, ctx.platform.os)
    signs = _numpy1_signs(torch)
    # NumPy 2's own words count on every OS and whatever version the metadata reports (a second
    # NumPy earlier on sys.path, a snapshot without the version); the generic "multiarray failed
    # to import" only beside a NumPy 2 (an older NumPy's C-API is ED225's).
    strong = [s for s in signs if any(sign in s for sign in _NUMPY2_WORDS)]
    if _c_api_sign(torch) is not None or (numpy.major is not None and numpy.major < 2 and not strong):
        return
    if numpy.major is None and not strong:
        return
    if not old and not signs:
        return
    floor = numpy_support.numpy2_floor(ctx.platform.os)
    said = f' torch said: "{signs[0]}".' if signs else ""
    if numpy.major is not None and numpy.major < 2:
        said += (
            f" The NumPy distribution here says {numpy.version}, yet the words are NumPy 2's: another "
            'NumPy (a stale copy earlier on sys.path) is the one imported; `python -c "import numpy; '
            'print(numpy.__version__, numpy.__file__)"` names it.'
        )
    if numpy.bridge == BridgeStatus.FAILED:
        effect = f"tensor.numpy() already failed here: {_first_line(numpy.error or 'RuntimeError')}."
    elif torch.import_error is not None:
        effect = "Here even import torch fails."
    else:
        effect = "tensor.numpy() and torch.from_numpy() fail with 'RuntimeError: Numpy is not available'."
    built = (
        f"torch wheels for {ctx.platform.os} are built against NumPy 2 (and run with 1.x too) "
        f"from torch {floor.torch} on."
        if floor is not None
        else ""
    )
    fixes = [_numpy_fix(ctx, f"Keep torch {version} and install the last NumPy 1.x beside it", "numpy<2")]
    if floor is not None:
        wants_cuda = bool(torch.cuda) or (torch.local_label or "").startswith("cu") or None
        upgrade = planned_fix(ctx, "Upgrade torch to a release built for NumPy 2", want_cuda=wants_cuda)
        if upgrade is not None and not numpy_support.built_for_numpy1(
            _planned_torch(upgrade), ctx.platform.os
        ):
            fixes.append(upgrade)
    yield Hit(
        title=f"NumPy {numpy.version} is installed, but torch {version} was built for NumPy 1.x"
        if numpy.major is not None and numpy.major >= 2
        else f"NumPy 2 meets torch {version}, which was built for NumPy 1.x",
        detail=f"import torch loads, but torch's NumPy bridge is switched off.{said} {effect} "
        f"{built} Libraries that hand NumPy arrays to torch (torchvision transforms, DataLoader "
        "collation, most data pipelines) stop at the first such call.",
        evidence=(f"numpy {numpy.version or '(version not read)'}", f"torch {version}", *signs[:2]),
        fixes=tuple(fixes),
    )


def _planned_torch(fix: Fix) -> str | None:
    """The torch release a planned fix pins ("torch==2.5.1" in its install command)."""
    for command in fix.commands:
        for word in command.split():
            if word.startswith("torch=="):
                return word.split("==", 1)[1]
    return None


@rule(
    code="ED211",
    name="numpy-not-installed",
    severity=Severity.INFO,
    summary="NumPy is not installed: torch works, its NumPy bridge and object collectives do not",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="Whether the NumPy distribution is installed beside an importable torch (read from "
        "its metadata in the torch child; NumPy has been an optional dependency of torch since 1.9).",
        why="torch itself runs, but tensor.numpy(), torch.from_numpy() and torch.distributed's "
        "object collectives raise 'RuntimeError: Numpy is not available', often deep inside a "
        "library, long after the environment was set up.",
        fix="Install NumPy into the same environment (below 2 for torch built for NumPy 1.x).",
        example="A fresh venv with only torch: import torch prints 'UserWarning: Failed to "
        "initialize NumPy: No module named 'numpy''.",
    ),
)
def numpy_not_installed(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    numpy = torch.numpy
    if numpy is None or numpy.version is not None or not torch.installed:
        return
    needed = torch.import_error is not None and "numpy" in torch.import_error.message.lower()
    if not torch.imported and not needed:
        return
    if needed and torch.import_error is not None:
        # Old torch builds (0.x) import NumPy's C-API at import: without NumPy, import torch fails.
        yield Hit(
            title="import torch fails: NumPy is not installed, and this torch needs it to import",
            detail=f"import torch says: {_first_line(torch.import_error.message)}. NumPy is not installed "
            "beside it; this torch build imports NumPy's C-API at start-up.",
            evidence=("numpy: not installed", _first_line(torch.import_error.message)[:200]),
            fixes=(_numpy_fix(ctx, "Install NumPy into this environment", "numpy"),),
        )
        return
    version = torch.version or torch.dist_version
    old = numpy_support.built_for_numpy1(version, ctx.platform.os)
    requirement = "numpy<2" if old else "numpy"
    warned = [w for w in torch.warnings if "Failed to initialize NumPy" in w]
    yield Hit(
        title="NumPy is not installed beside torch",
        detail=f"torch {version} works without it, but these raise 'RuntimeError: Numpy is not "
        f"available': {numpy_support.without_numpy_breaks()}.",
        evidence=("numpy: not installed", *(_first_line(w)[:200] for w in warned[:1])),
        fixes=(_numpy_fix(ctx, "Install NumPy into this environment", requirement),),
    )


_C_API = re.compile(
    r"module compiled against (?:ABI|API) version (?:0x)?(?P<built>[0-9a-f]+) but this version of numpy "
    r"is (?:0x)?(?P<have>[0-9a-f]+)",
    re.IGNORECASE,
)


def _c_api_sign(torch: TorchFacts) -> re.Match[str] | None:
    numpy = torch.numpy
    texts = list(torch.warnings)
    if numpy is not None:
        texts += [numpy.message or "", numpy.error or ""]
    if torch.import_error is not None:
        texts += [torch.import_error.message, torch.import_error.traceback or ""]
    for text in texts:
        found = _C_API.search(text)
        if found:
            return found
    return None


@rule(
    code="ED225",
    name="numpy-too-old-for-torch",
    severity=Severity.ERROR,
    summary="the installed NumPy is older than the C-API torch was compiled against",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="What torch said while importing: 'module compiled against API version 0xe but this "
        "version of numpy is 0xd' (in the import error, or in torch's 'Failed to initialize NumPy' "
        "warning), with the NumPy release that provides the C-API torch needs (numpy_abi.json).",
        why="A torch compiled against a newer NumPy C-API cannot use an older NumPy: either import "
        "torch fails ('numpy.core.multiarray failed to import'), or its NumPy bridge is off and "
        "tensor.numpy(), torch.from_numpy() and NumPy scalars raise ('Could not infer dtype of "
        "numpy.float32').",
        fix="Upgrade NumPy to at least the release that provides that C-API (below 2 for a torch built "
        "for NumPy 1.x).",
        example="torch 1.9.0 built against NumPy 1.20's C-API with numpy 1.19.5: 'Failed to initialize "
        "NumPy: module compiled against API version 0xe but this version of numpy is 0xd' "
        "(pytorch/pytorch#59533).",
    ),
)
def numpy_too_old_for_torch(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    sign = _c_api_sign(torch)
    if not torch.installed or sign is None:
        return
    built, have = int(sign.group("built"), 16), int(sign.group("have"), 16)
    if built <= have:
        return
    from envdoctor.knowledge.torch_extensions import numpy_for_api

    needed = numpy_for_api(built)
    version = torch.version or torch.dist_version
    old = numpy_support.built_for_numpy1(version, ctx.platform.os)
    installed = torch.numpy.version if torch.numpy is not None else None
    requirement = f"numpy>={needed}" if needed else "numpy"
    if old and needed and not needed.startswith("2"):
        requirement += ",<2"
    said = sign.group(0)
    effect = (
        "import torch fails."
        if torch.import_error is not None
        else "torch's NumPy bridge is off: "
        "tensor.numpy(), torch.from_numpy() and NumPy scalars in tensors fail."
    )
    yield Hit(
        title=f"NumPy {installed or ''} is older than the one torch {version} was compiled against".replace(
            "  ", " "
        ),
        detail=f'torch said: "{said}". It needs NumPy\'s C-API 0x{built:x}'
        + (f", which NumPy {needed} introduced" if needed else "")
        + f"; the installed NumPy has 0x{have:x}. Here {effect}",
        evidence=(said, *((f"numpy {installed}",) if installed else ())),
        fixes=(_numpy_fix(ctx, "Upgrade NumPy in this environment", requirement),),
    )
