"""Commands for packages other than a torch build, on the sources the manager really uses. Pure.

A rule that wants a package installed (an extension's build for this torch, a companion paired
with it, NumPy below 2, conda's nomkl) says what and from where it officially comes; this module
turns that into the command for the examined interpreter and its manager, or says why no command
can work here:
1. a configured constraint that rejects a pinned version: no command, the constraint named;
2. local wheels (find-links folders, file:// indexes the manager reads) that hold every pinned
   requirement: the command without the remote index, which the manager satisfies from them;
3. the official index, or the user's configured index when the package's home is the default
   index, when it answered (or nothing was asked while online);
4. otherwise nothing reachable has it: no command, and how to carry the files over.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envdoctor.install.commands import Command
from envdoctor.install.sources import Sources, blocking
from envdoctor.util.records import record

if TYPE_CHECKING:
    from envdoctor.install.target import InstallTarget


@record
class PackageRequest:
    """What a rule wants installed, and where it officially comes from."""

    requirements: tuple[str, ...]  # "flash-attn==2.5.8", "numpy<2"
    index: str | None = None  # the official index for them; None: the default index (or its mirror)
    find_links: str | None = None  # an official wheel page (-f) beside the index
    hold: tuple[str, ...] = ()  # requirements that must not move ("torch==2.5.1+cu124")
    options: tuple[str, ...] = ()  # "--upgrade", "--force-reinstall", "--no-deps", "--no-build-isolation"
    replace_index: bool = True  # the index replaces the configured one (--index-url); else --extra-index-url


@record
class CondaRequest:
    """Conda packages for the examined conda environment."""

    packages: tuple[str, ...]  # "nomkl", "vc14_runtime>=14.40"
    prefix: str | None = None  # the environment's folder; None: the active environment
    channel: str | None = None  # "conda-forge"; None: the configured channels


@record
class PackagePlan:
    commands: tuple[Command, ...]
    route: str  # "local", "index", "configured", or "none"
    reason: str | None = None  # why there is no command, when there is none

    @property
    def possible(self) -> bool:
        return bool(self.commands)


def _host(url: str) -> str:
    return urlsplit(url).hostname or url


def _pinned(requirement: str) -> tuple[str, str] | None:
    """(canonical name, version) of an exact pin ("x==1.2", "x===1.2+cpu"); None for a range."""
    try:
        parsed = Requirement(requirement)
    except InvalidRequirement:
        return None
    specs = list(parsed.specifier)
    if len(specs) != 1 or specs[0].operator not in ("==", "===") or "*" in specs[0].version:
        return None
    return canonicalize_name(parsed.name), specs[0].version


def _local_holds(sources: Sources, requirement: str) -> bool:
    pinned = _pinned(requirement)
    if pinned is None:
        return False
    name, version = pinned
    try:
        wanted = Version(version)
    except InvalidVersion:
        return False
    exact = "+" in version
    return any(
        w.project == name and (w.version == wanted if exact else w.version.public == wanted.public)
        for w in sources.wheels
    )


def _argv(target: InstallTarget, words: list[str]) -> tuple[str, ...]:
    launcher = target.python_launcher
    if target.manager == "uv":
        python = launcher[0] if len(launcher) == 3 and launcher[1:] == ("-m", "pip") else None
        return ("uv", "pip", "install", *(("--python", python) if python else ()), *words)
    return (*launcher, "install", *words)


def _command(target: InstallTarget, request: PackageRequest, remote: bool) -> Command:
    words = [*request.options, *request.requirements, *request.hold]
    if remote and request.index:
        option = "--index-url" if request.replace_index else "--extra-index-url"
        words += [option, request.index]
    if remote and request.find_links:
        words += ["--find-links" if target.manager == "uv" else "-f", request.find_links]
    return Command(_argv(target, words), "uv" if target.manager == "uv" else "pip")


def plan_packages(target: InstallTarget, request: PackageRequest) -> PackagePlan:
    """The command that installs `request` into the examined interpreter here, or why none can."""
    sources = target.sources
    if sources is not None and sources.broken is not None:
        return PackagePlan((), "none", sources.broken)
    for requirement in (*request.requirements, *request.hold):
        pinned = _pinned(requirement)
        constraint = blocking(sources, *pinned) if pinned is not None else None
        if constraint is not None:
            return PackagePlan(
                (),
                "none",
                f"{constraint.label} {constraint.text} ({constraint.file}, line {constraint.line}) rejects "
                f"{requirement}; {constraint.lift}",
            )
    if sources is None:
        return PackagePlan((_command(target, request, remote=True),), "index")
    if request.requirements and all(_local_holds(sources, r) for r in request.requirements):
        return PackagePlan((_command(target, request, remote=False),), "local")
    urls = [r for r in request.requirements if r.startswith(("http://", "https://"))]  # a wheel's address
    remote = [u for u in (request.index, request.find_links, *urls) if u]
    if not remote:
        if sources.usable(None):
            return PackagePlan((_command(target, request, remote=False),), "configured")
        where = sources.index.url if sources.index is not None else "the default index"
        return PackagePlan((), "none", _unreachable(where, request, sources.offline))
    if all(sources.usable(u) for u in remote):
        return PackagePlan((_command(target, request, remote=True),), "index")
    silent = next(u for u in remote if not sources.usable(u))
    return PackagePlan((), "none", _unreachable(silent, request, sources.offline))


def _unreachable(where: str, request: PackageRequest, offline: bool) -> str:
    host = _host(where) if "://" in where else where
    why = "offline (--offline)" if offline else f"{host} did not answer from here"
    wanted = " ".join(request.requirements)
    fetch = f"pip download {wanted} --no-deps" + (f" --index-url {request.index}" if request.index else "")
    return (
        f"{why}, and no local source holds {wanted}: on a machine that reaches it run `{fetch} -d wheels`, "
        "copy the wheels folder here and install with --no-index --find-links wheels"
    )


def plan_conda(sources: Sources | None, request: CondaRequest) -> PackagePlan:
    """`conda install -p PREFIX [-c CHANNEL] PACKAGES`; offline, from conda's package cache."""
    argv = ["conda", "install", *(("-p", request.prefix) if request.prefix else ())]
    if request.channel:
        argv += ["-c", request.channel]
    offline = sources is not None and sources.offline
    if offline:
        argv.append("--offline")  # conda then installs only what its package cache holds
    argv += list(request.packages)
    return PackagePlan((Command(tuple(argv), "conda"),), "local" if offline else "index")
