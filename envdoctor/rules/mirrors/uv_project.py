"""uv project settings that an install did not apply (ED511), and lock resolutions that chose a
version with no wheel for this platform (ED512).

[tool.uv.sources] and [[tool.uv.index]] steer `uv sync`, `uv run`, `uv add` and `uv lock` only:
`uv pip install torch`, `uv pip sync requirements.txt`, pip, and anyone installing the published
package ignore them, and torch comes from the default index (CPU on Windows, the default CUDA on
Linux). A universal lock (uv, poetry, pdm) resolves for every platform at once and may settle on a
release that has no wheel for this one.
"""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.knowledge.signatures import ErrorEvidence
from envdoctor.model.findings import Fix, Severity
from envdoctor.model.sources import MirrorFacts, SourcesFacts, UvIndex
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.mirrors.urls import torch_index, variant_of, wheel_variant
from envdoctor.util.lazy_re import Lazy

UV_PYTORCH_GUIDE = "https://docs.astral.sh/uv/guides/integration/pytorch/"


def _index_urls(facts: MirrorFacts) -> dict[str, str]:
    return {i.name: i.url for i in facts.uv.indexes if i.name}


# The marker variables a [tool.uv.sources] entry is usually split on, per OS.
_MARKER_VALUES = {
    "linux": {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"},
    "windows": {"sys_platform": "win32", "platform_system": "Windows", "os_name": "nt"},
    "macos": {"sys_platform": "darwin", "platform_system": "Darwin", "os_name": "posix"},
}
_COMPARISON = Lazy(
    r"^\s*(?P<name>sys_platform|platform_system|os_name)\s*(?P<op>==|!=)\s*['\"](?P<value>[^'\"]*)['\"]\s*$"
)


def marker_applies(marker: str | None, os_name: str) -> bool:
    """Whether a source's marker holds on this OS: `==`/`!=` on sys_platform, platform_system and
    os_name, joined by `and`/`or`; any other marker is taken to hold (envdoctor does not judge it)."""
    if not marker:
        return True
    values = _MARKER_VALUES.get(os_name)
    if values is None:
        return True
    results = []
    for alternative in marker.split(" or "):
        held = True
        for part in alternative.split(" and "):
            match = _COMPARISON.match(part.strip().strip("()"))
            if match is None:
                continue
            equal = values[match.group("name")] == match.group("value")
            held = held and (equal if match.group("op") == "==" else not equal)
        results.append(held)
    return any(results)


def _variant(url: str) -> str | None:
    index = torch_index(url)
    return variant_of(url, index) if index is not None else wheel_variant(url)


@rule(
    code="ED511",
    name="uv-sources-not-applied",
    severity=Severity.WARNING,
    summary="[tool.uv.sources] routes torch to an index, but the installed torch did not come from it",
    needs=(SourcesFacts, MirrorFacts, TorchFacts),
    doc=RuleDoc(
        what="The project's [tool.uv.sources] entries for torch, torchvision and torchaudio and the "
        "[[tool.uv.index]] they name, against the variant of the torch installed in the examined "
        "environment.",
        why="Sources and project indexes apply to `uv sync`, `uv run`, `uv add` and `uv lock` only. "
        "`uv pip install`, `uv pip sync`, pip, and installs of the published package ignore them, so "
        "torch comes from the default index instead: a CPU-only build on Windows, the default CUDA "
        "build on Linux, whatever the project pinned.",
        fix="Install through the project (`uv sync`), or give the index on the command line (uv pip "
        "install --index ... / --torch-backend), and reinstall torch.",
        example="pyproject.toml routes torch to pytorch-cpu (explicit = true); `uv pip install -e .` "
        "pulls plain torch and the whole nvidia-* CUDA stack.",
    ),
)
def uv_sources_not_applied(ctx: RuleContext) -> Iterator[Hit]:
    sources = ctx.need(SourcesFacts)
    facts = ctx.need(MirrorFacts)
    torch = ctx.need(TorchFacts)
    urls = _index_urls(facts)
    routes = [
        r
        for r in sources.uv_routes
        if r.package.lower() == "torch" and r.index in urls and marker_applies(r.marker, ctx.platform.os)
    ]
    if not routes:
        return
    wanted = {v for r in routes for v in [_variant(urls[r.index])] if v}
    if not wanted:
        return
    names = ", ".join(sorted({r.index for r in routes}))
    shown = " or ".join(sorted(wanted))
    if torch.installed and torch.imported and torch.variant is not None:
        if torch.variant in wanted:
            return  # the installed build is the one the project routes to on this platform
        title = f"the project routes torch to {names} ({shown}), but the installed torch is {torch.version}"
        came = f"The installed torch {torch.version} came from elsewhere"
        evidence = f"installed torch = {torch.version}"
    elif not torch.installed:
        title = f"the project routes torch to {names} ({shown}), and torch is not installed"
        came = (
            "torch is not installed here; an install that does not go through the project will not find "
            "it there"
        )
        evidence = "torch not installed"
    else:
        return
    yield Hit(
        title=title,
        detail=f"{routes[0].origin} routes torch to the index {names} ({shown}) in [tool.uv.sources]. "
        f"{came}: sources and project indexes apply to `uv sync`, `uv run`, `uv add` and `uv lock` only, "
        "while `uv pip install`, `uv pip sync`, pip and an install of the published package ignore them "
        "and take torch from the default index (or fail to find it on an explicit index).",
        evidence=(f"[tool.uv.sources] torch -> {names} ({shown})", evidence),
        fixes=(
            Fix(
                summary="Install through the project, which applies [tool.uv.sources] (add "
                "--reinstall-package torch to replace the build that is there)",
                commands=("uv sync --reinstall-package torch",),
                link=UV_PYTORCH_GUIDE,
            ),
            Fix(
                summary="With uv pip, name the index on the command line: "
                f"--index {urls[routes[0].index]} "
                "(or --torch-backend=auto); pip and uv pip never read [tool.uv.sources]",
                link=UV_PYTORCH_GUIDE,
            ),
        ),
    )


def _project_torch_indexes(facts: MirrorFacts) -> list[UvIndex]:
    """PyTorch indexes a uv project (pyproject.toml / uv.toml) uses for every package: the default
    index, or an index that is not explicit = true."""
    project = {f.path for f in facts.uv.files if f.level == "project"}
    return [
        i
        for i in facts.uv.indexes
        if i.origin in project
        and not i.explicit
        and i.via in ("index", "index-url", "extra-index-url", "default-index")
        and torch_index(i.url) is not None
    ]


@rule(
    code="ED512",
    name="lock-without-wheel-for-platform",
    severity=Severity.WARNING,
    summary="a cross-platform lock reads packages from PyTorch's index, or chose a version with no wheel "
    "here",
    needs=(MirrorFacts,),
    doc=RuleDoc(
        what="A uv project whose default index, or an index not marked explicit = true, is PyTorch's "
        "(uv add --default-index/--index writes one into pyproject.toml); and, in an error text, "
        "uv's \"can't be installed because it doesn't have a source distribution or wheel for the "
        'current platform" / "with neither wheels nor source distribution", pdm\'s "doesn\'t provide '
        'an installable wheel for your platform", poetry\'s "Unable to find installation candidates".',
        why="uv, poetry and pdm resolve one lock for every platform at once and take the newest "
        "version that exists anywhere. PyTorch's indexes carry some packages (markupsafe, torchaudio "
        "2.0.0) for some platforms only, so a lock that reads every package from them settles on a "
        "file this machine cannot install, where `pip install` (which resolves for this machine only) "
        "would pick another.",
        fix="Mark PyTorch's index explicit = true and route only torch packages to it with "
        "[tool.uv.sources]; bound a package that lacks a wheel here, or limit the lock's platforms "
        "([tool.uv] environments / required-environments).",
        example="uv add torch torchvision torchaudio --default-index https://download.pytorch.org/whl/cu118 "
        "on Windows: torchaudio==2.0.0 has no source distribution or wheel for the current platform.",
    ),
)
def lock_chose_version_without_wheel(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(MirrorFacts)
    evidence = ctx.get(ErrorEvidence)
    matches = evidence.matching("ED512") if evidence is not None else ()
    indexes = _project_torch_indexes(facts)
    if not matches and not indexes:
        return
    fix = Fix(
        summary="Mark PyTorch's index explicit = true and route only torch, torchvision and torchaudio to "
        "it in [tool.uv.sources]; bound a package that has no wheel here (or add a platform marker), "
        "and limit the lock's platforms with [tool.uv] environments (or required-environments)",
        link=UV_PYTORCH_GUIDE,
    )
    if matches:
        match = matches[0]
        package = match.group("package") or match.group("candidate")
        what = package or "a package"
        detail = (
            f"The error says so (“{match.excerpt}”). uv, poetry and pdm resolve one lock for every platform "
            f"and take the newest version published for any of them; this machine ({ctx.platform.os} "
            f"{ctx.platform.machine}) has no wheel of it. `pip install` resolves for this machine only and "
            "would pick a version that has one."
        )
        if indexes:
            detail += (
                f" The project reads every package from {indexes[0].url} ({indexes[0].origin}), which "
                "carries "
                "some packages for some platforms only."
            )
        yield Hit(
            title=f"the lock chose {what} in a version that has no wheel for this platform",
            detail=detail,
            evidence=(f"error: {match.excerpt}",),
            fixes=(fix,),
        )
        return
    index = indexes[0]
    role = "the default index" if index.default or index.via in ("index-url", "default-index") else "an index"
    yield Hit(
        title=f"the uv project uses PyTorch's index ({index.url}) for every package, on every platform",
        detail=f"{index.origin} has {index.url} as {role} without explicit = true, so `uv lock`/`uv sync` "
        "look for every package there first, for all platforms at once. PyTorch's index carries only "
        "some packages, some for Linux only (markupsafe, older torchaudio): the lock can settle on a "
        "version with no wheel for this machine (\"doesn't have a source distribution or wheel for the "
        'current platform").',
        evidence=(f"uv index {index.url} ({index.origin}), explicit = false",),
        fixes=(fix,),
    )
