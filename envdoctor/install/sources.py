"""Where the package manager will really look: the planner's second input, beside the machine.

Pure. `Sources` is what pip (index-url, extra-index-url, find-links, no-index, constraints), uv
(indexes, explicit indexes, [tool.uv.sources], find-links) or conda (channels) will use, as the
mirrors probe read their configuration, plus what the sources probe saw: the torch wheels that
local folders and file:// indexes hold, the constraint files' lines, and which remote indexes
answered. `from_facts` builds it from those facts, for `check`'s fixes and for `install` alike.

The helpers here answer the planner's questions about it: which local wheel is exactly the build it
wants, which constraint rejects a release, whether an index answered, and the file name of a wheel
for the offline route. The probes' types are imported only where facts become Sources (from_facts,
answer_of): planning for a described machine loads no probe (start-up, issue #9).
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from packaging.version import Version

from envdoctor import knowledge
from envdoctor.knowledge import Release
from envdoctor.util.lazy_re import Lazy
from envdoctor.util.pep503 import normalize_name
from envdoctor.util.records import record

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

    from envdoctor.model.sources import (
        CondaConfig,
        ConstraintFile,
        PipConfig,
        ReachCheck,
        SourcesFacts,
        UvConfig,
    )

TORCH_PACKAGES = ("torch", "torchvision", "torchaudio")
PIP_CONSTRAINT = "pip's constraint"


def _specifier(text: str) -> SpecifierSet:
    from packaging.specifiers import SpecifierSet  # only a configured constraint needs it

    return SpecifierSet(text)


class SourceKind(str, enum.Enum):
    INDEX = "index"  # pip's index-url, uv's default index
    EXTRA_INDEX = "extra-index"  # pip's extra-index-url, uv's other indexes
    FIND_LINKS = "find-links"


class Reach(str, enum.Enum):
    REACHABLE = "reachable"
    UNREACHABLE = "unreachable"
    UNCHECKED = "unchecked"  # --offline, or nothing asked (a snapshot without the sources probe)


@record
class Source:
    url: str  # as configured
    kind: SourceKind
    origin: str  # the file or variable that sets it
    local: bool = False  # a folder or a file:// URL on this machine
    name: str | None = None  # uv: the index's name
    explicit: bool = False  # uv: used only for packages [tool.uv.sources] routes to it


@record
class LocalWheel:
    filename: str
    project: str  # canonical: "torch"
    version: Version  # 2.13.0+cpu
    tags: frozenset[str]  # "cp311-cp311-manylinux_2_28_x86_64", ...
    source: Source  # the folder or index that lists it

    @property
    def label(self) -> str:
        return self.version.local or ""


@record
class Constraint:
    project: str  # canonical
    specifier: str  # "<=2.14.1"
    file: str
    line: int
    lift: str  # how to take it away, in words
    label: str = PIP_CONSTRAINT  # "uv's constraint", "uv's override"

    def allows(self, version: str) -> bool:
        from packaging.specifiers import InvalidSpecifier  # only a configured constraint needs it

        try:
            return _specifier(self.specifier).contains(version, prereleases=True)
        except InvalidSpecifier:
            return True  # pip itself would refuse the file; a rule says so, the planner does not guess

    @property
    def text(self) -> str:
        return f"{self.project}{self.specifier}"


@record
class Answer:
    url: str
    reach: Reach
    detail: str = ""


DEFAULT_CHANNEL_ALIAS = "https://conda.anaconda.org"  # conda/base/constants.py (mirror_facts.md 2.2)


@record
class CondaChannels:
    """What decides where `conda install -c NAME` looks: the configured channels, channel_alias and
    custom_channels, each with the file (or variable) that sets it, as conda merges them."""

    channels: tuple[tuple[str, str], ...] = ()  # (name or URL, where), highest priority first
    alias: str | None = None  # channel_alias, when set
    alias_origin: str = ""
    custom: tuple[tuple[str, str, str], ...] = ()  # custom_channels: (name, base URL, where)

    def resolve(self, name: str) -> tuple[str, str]:
        """(the URL conda reads for channel `name`, why that one): custom_channels first, "which takes
        precedence over channel_alias", then channel_alias, then conda's default alias."""
        if "://" in name:
            return name, "a URL"
        for custom, base, origin in self.custom:
            if custom == name:
                return f"{base.rstrip('/')}/{name}", f"custom_channels in {origin}"
        if self.alias:
            return f"{self.alias.rstrip('/')}/{name}", f"channel_alias in {self.alias_origin}"
        return f"{DEFAULT_CHANNEL_ALIAS}/{name}", "conda's default channel_alias"

    def mirrored(self, name: str) -> bool:
        """Whether channel `name` resolves away from anaconda.org (a mirror, or a company proxy)."""
        url, _ = self.resolve(name)
        return not url.startswith(DEFAULT_CHANNEL_ALIAS + "/")

    def has(self, name: str) -> bool:
        return any(c == name or c.rstrip("/").endswith(f"/{name}") for c, _ in self.channels)


def conda_channels(conda: CondaConfig) -> CondaChannels:
    alias = conda.last("channel_alias")
    return CondaChannels(
        channels=tuple((name, setting.origin) for name, setting in conda.merged_list("channels")),
        alias=alias.value if alias is not None and alias.value else None,
        alias_origin=alias.origin if alias is not None else "",
        custom=tuple((name, url, setting.origin) for name, url, setting in conda.custom_channels()),
    )


@record
class Sources:
    manager: str = "pip"
    index: Source | None = None  # None: the default index (PyPI)
    extra: tuple[Source, ...] = ()  # extra indexes and find-links the manager adds to any command
    no_index: Source | None = None  # pip's no-index, where it is set
    constraints: tuple[Constraint, ...] = ()
    wheels: tuple[LocalWheel, ...] = ()
    answers: tuple[Answer, ...] = ()
    offline: bool = False
    uv_routes: tuple[tuple[str, str], ...] = ()  # [tool.uv.sources]: (package, index name)
    channels: tuple[str, ...] = ()  # conda
    default_index: str | None = None  # PyPI's index URL, as pip knows it
    conda: CondaChannels | None = None  # for conda plans: where `-c NAME` resolves
    # The manager cannot load its own configuration (pip.conf with a syntax error, a uv.toml uv
    # refuses, a FIFO it would wait on): every command of it fails, so the planner plans none.
    broken: str | None = None
    # What pip itself would use here: the sources of the pip step inside a conda environment, and
    # the local wheels a uv plan may take with an explicit --find-links (uv reads no pip settings).
    pip_inside: Sources | None = None

    def reach(self, url: str | None) -> Answer:
        """What is known of `url`'s host: the answer for the longest checked prefix of it, else one for
        the same scheme and host, else unchecked. None stands for the index a command without
        --index-url uses: the configured one, else the default."""
        wanted = url or (self.index.url if self.index is not None else self.default_index)
        if wanted is None:
            return Answer("", Reach.UNCHECKED)
        if _is_local(wanted):
            return Answer(wanted, Reach.REACHABLE, "on this machine")
        best: Answer | None = None
        for answer in self.answers:
            if wanted.startswith(answer.url.rstrip("/")) and (
                best is None or len(answer.url) > len(best.url)
            ):
                best = answer
        if best is None:
            host = _host(wanted)
            best = next((a for a in self.answers if _host(a.url) == host), None)
        return best if best is not None else Answer(wanted, Reach.UNCHECKED)

    def usable(self, url: str | None) -> bool:
        """Whether a command naming `url` can be expected to reach it: it answered, or nothing was
        asked while online (the plan then stays as it always was)."""
        answer = self.reach(url)
        if answer.reach is Reach.UNCHECKED:
            return not self.offline
        return answer.reach is Reach.REACHABLE

    @property
    def others(self) -> tuple[Source, ...]:
        """The sources pip adds to a command that names its own --index-url."""
        return tuple(s for s in self.extra if not s.explicit)


def _is_local(url: str) -> bool:
    return url.startswith("file:") or "://" not in url


def _host(url: str) -> str:
    try:
        return f"{urlsplit(url).scheme}://{(urlsplit(url).hostname or '').lower()}"
    except ValueError:
        return ""


# --- local wheels ---------------------------------------------------------------------------------


_PLATFORM_TAGS = {  # the platform part of a wheel tag, per knowledge platform key
    "linux-x86_64": Lazy(r"^(many|musl)?linux(\d+|_\d+_\d+)?_x86_64$"),
    "linux-aarch64": Lazy(r"^(many|musl)?linux(\d+|_\d+_\d+)?_aarch64$"),
    "windows-x86_64": Lazy(r"^win_amd64$"),
    "macos-arm64": Lazy(r"^macosx_\d+_\d+_(arm64|universal2)$"),
    "macos-x86_64": Lazy(r"^macosx_\d+_\d+_(x86_64|intel|universal2?)$"),
}


def fits(tag: str, platform: str, python: str | None) -> bool:
    interpreter, abi, plat = tag.split("-")
    pattern = _PLATFORM_TAGS.get(platform)
    if plat != "any" and (pattern is None or not pattern.match(plat)):
        return False
    if python is None:
        return True
    digits = python.replace(".", "")
    if interpreter in (f"cp{digits}", f"py{digits}", "py3"):
        return abi in (f"cp{digits}", "abi3", "none")
    if abi == "abi3" and interpreter.startswith("cp3"):  # cp38-abi3 serves 3.8 and later
        return Version(f"3.{interpreter[3:]}") <= Version(python)
    return False


def parse_wheel(filename: str, source: Source) -> LocalWheel | None:
    # packaging.utils loads packaging.tags and logging: only a listing with wheels pays for them.
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        name, version, _, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, ValueError):
        return None
    return LocalWheel(filename, str(name), version, frozenset(str(t) for t in tags), source)


def wanted_label(release: Release, variant: str, platform: str) -> tuple[str, ...]:
    """The local labels a wheel of this build may carry: the variant's ("cpu", "cu130"), and none at
    all where PyPI's plain wheel is that build (a PyPI mirror's copy)."""
    builds = release.builds(platform)
    plain = builds is not None and builds.pypi == variant
    return (variant, "") if plain else (variant,)


def local_build(
    sources: Sources,
    project: str,
    version: str | None,
    labels: tuple[str, ...],
    platform: str,
    python: str | None,
) -> LocalWheel | None:
    """The local wheel of `project` at public `version` whose label is one of `labels`, for this
    platform and Python; a labelled wheel first (it is the exact build, whatever else is there)."""
    if version is None:
        return None
    public = Version(version)
    found = [
        w
        for w in sources.wheels
        if w.project == project
        and Version(w.version.public) == public
        and w.label in labels
        and any(fits(t, platform, python) for t in w.tags)
    ]
    found.sort(key=lambda w: (w.label == "", not w.source.local))
    return found[0] if found else None


def pin(wheel: LocalWheel, sources: Sources) -> str:
    """`name==version` that only this build satisfies among the listed wheels. An unlabelled pin
    also accepts any labelled build of that version (PEP 440), so when one is listed too the pin
    uses `===`, which compares the version text exactly."""
    if wheel.label:
        return f"{wheel.project}=={wheel.version}"
    rivals = [
        w for w in sources.wheels if w.project == wheel.project and w.version.public == wheel.version.public
    ]
    operator = "===" if any(w.label for w in rivals) else "=="
    return f"{wheel.project}{operator}{wheel.version}"


# --- constraints ----------------------------------------------------------------------------------


def blocking(sources: Sources | None, project: str, version: str | None) -> Constraint | None:
    """The first configured constraint that rejects `project`==`version`."""
    if sources is None or version is None:
        return None
    name = normalize_name(project)
    return next((c for c in sources.constraints if c.project == name and not c.allows(version)), None)


# --- the offline route ----------------------------------------------------------------------------


def wheel_filename(
    release_torch: str, project: str, version: str, variant: str, platform: str, python: str | None
) -> str:
    """The file name of a build on PyTorch's index (torch-2.13.0+cpu-cp313-cp313-manylinux_2_28_x86_64.whl);
    `*` stands for a part envdoctor's data does not know (the platform tag of some releases)."""
    digits = python.replace(".", "") if python else "*"
    tag = knowledge.wheel_platform_tag(release_torch, platform) or "*"
    return f"{project}-{version}+{variant}-cp{digits}-cp{digits}-{tag}.whl"


# --- from the probes' facts -----------------------------------------------------------------------


def _lift(path: str, line: int, origin: str) -> str:
    from envdoctor.model.sources import UV_CONSTRAINT_SETTINGS, is_variable

    if is_variable(origin):
        return f"unset ${origin}, or remove line {line} of {path}"
    if origin in UV_CONSTRAINT_SETTINGS:
        return f"remove or relax the entry on line {line} of {path} ({origin})"
    return f"remove or relax line {line} of {path}"


def _uv_constraints(files: tuple[ConstraintFile, ...]) -> list[Constraint]:
    found = []
    for file in files:
        override = file.origin in ("UV_OVERRIDE", "override-dependencies")
        label = "uv's override" if override else "uv's constraint"
        found += [
            Constraint(
                normalize_name(c.project),
                c.specifier,
                file.path,
                c.line,
                _lift(file.path, c.line, file.origin),
                label,
            )
            for c in file.lines
        ]
    return found


def _pip_sources(pip: PipConfig) -> tuple[Source | None, list[Source], Source | None]:
    index = None
    setting = pip.get("index-url")
    if setting is not None:
        index = Source(
            setting.value.strip(), SourceKind.INDEX, setting.origin, _is_local(setting.value.strip())
        )
    extra: list[Source] = []
    for key, kind in (("extra-index-url", SourceKind.EXTRA_INDEX), ("find-links", SourceKind.FIND_LINKS)):
        found = pip.get(key)
        if found is not None:
            extra += [Source(url, kind, found.origin, _is_local(url)) for url in found.items]
    no_index = None
    if pip.flag("no-index"):
        flag = pip.get("no-index")
        no_index = Source("", SourceKind.INDEX, flag.origin if flag else "")
    return index, extra, no_index


def _uv_sources(uv: UvConfig) -> tuple[Source | None, list[Source]]:
    index = None
    extra: list[Source] = []
    for found in uv.indexes:
        if found.via.startswith("pip."):
            continue  # [tool.uv.pip] applies to `uv pip` only; the planner's uv commands add their index
        kind = SourceKind.FIND_LINKS if found.flat else SourceKind.EXTRA_INDEX
        source = Source(found.url, kind, found.origin, _is_local(found.url), found.name, found.explicit)
        if found.default or found.via in ("index-url", "default-index"):
            index = Source(found.url, SourceKind.INDEX, found.origin, _is_local(found.url), found.name)
        else:
            extra.append(source)
    return index, extra


def answer_of(check: ReachCheck) -> Answer:
    from envdoctor.model.sources import ReachStatus

    reach = {ReachStatus.REACHABLE: Reach.REACHABLE, ReachStatus.UNREACHABLE: Reach.UNREACHABLE}
    return Answer(check.url, reach.get(check.status, Reach.UNCHECKED), check.detail)


def from_facts(
    manager: str,
    pip: PipConfig | None,
    uv: UvConfig | None,
    conda: CondaConfig | None,
    facts: SourcesFacts | None,
    default_index: str | None = None,
) -> Sources:
    """The planner's Sources from the mirrors probe's configuration and the sources probe's look."""
    from envdoctor.model.sources import ListingKind, ListingStatus

    index: Source | None = None
    extra: list[Source] = []
    no_index = None
    routes: tuple[tuple[str, str], ...] = ()
    if manager == "uv" and uv is not None:
        index, extra = _uv_sources(uv)
        routes = tuple((r.package, r.index) for r in facts.uv_routes) if facts is not None else ()
    elif manager == "pip" and pip is not None:
        index, extra, no_index = _pip_sources(pip)
    channels = tuple(name for name, _ in conda.merged_list("channels")) if conda is not None else ()
    by_url = {s.url: s for s in ([index] if index else []) + extra}
    wheels: list[LocalWheel] = []
    constraints: list[Constraint] = []
    answers: list[Answer] = []
    offline = False
    if facts is not None:
        offline = facts.offline
        for listing in facts.listings:
            if listing.tool != manager or listing.status is not ListingStatus.LISTED:
                continue
            kind = SourceKind.FIND_LINKS if listing.kind is ListingKind.FIND_LINKS else SourceKind.EXTRA_INDEX
            source = by_url.get(listing.url) or Source(listing.url, kind, listing.origin, True)
            wheels += [w for w in (parse_wheel(unquote(f), source) for f in listing.files) if w is not None]
        if manager == "pip":
            for file in facts.constraints:
                constraints += [
                    Constraint(
                        normalize_name(c.project),
                        c.specifier,
                        file.path,
                        c.line,
                        _lift(file.path, c.line, file.origin),
                    )
                    for c in file.lines
                ]
        if manager == "uv":
            constraints += _uv_constraints(facts.uv_constraints)
        answers = [answer_of(check) for check in facts.reach]
    return Sources(
        manager=manager,
        index=index,
        extra=tuple(extra),
        no_index=no_index,
        constraints=tuple(constraints),
        wheels=tuple(wheels),
        answers=tuple(answers),
        offline=offline,
        uv_routes=routes,
        channels=channels,
        default_index=default_index,
        conda=conda_channels(conda) if manager == "conda" and conda is not None else None,
        broken=_unusable_configuration(manager, pip, uv, conda),
        pip_inside=from_facts("pip", pip, None, None, facts, default_index)
        if manager in ("conda", "uv")
        else None,
    )


def _unusable_configuration(
    manager: str, pip: PipConfig | None, uv: UvConfig | None, conda: CondaConfig | None
) -> str | None:
    """The first configuration file that stops the manager (conda's plans run pip inside the
    environment too), said with its file, its line and what to do."""
    from envdoctor.model.sources import ToolEffect, file_problem, tool_effect

    files = {
        "pip": pip.files if pip is not None else (),
        "uv": uv.files if uv is not None else (),
        "conda": (*(conda.files if conda is not None else ()), *(pip.files if pip is not None else ())),
    }.get(manager, ())
    for file in files:
        effect = tool_effect(file)
        if effect not in (ToolEffect.FATAL, ToolEffect.HANG):
            continue
        stops = "waits forever reading" if effect is ToolEffect.HANG else "cannot load"
        inspect = {"pip": "`python -m pip config debug`", "conda": "`conda config --show-sources`"}
        lists = f"; {inspect[file.tool]} lists the files it reads" if file.tool in inspect else ""
        return (
            f"{file.tool} {stops} its configuration file {file.path} ({file_problem(file)}): every "
            f"{file.tool} command, this one too, fails until the file is fixed or moved aside{lists}"
        )
    return None


def describe(sources: Sources) -> str:
    """One line for `install`'s inputs: what the manager reads besides its default index."""
    parts = []
    if sources.no_index is not None:
        parts.append("no-index")
    local = sorted({w.filename for w in sources.wheels if w.project == "torch"})
    for source in sources.extra:
        parts.append(f"{source.kind.value} {source.url}")
    if local:
        parts.append("local torch wheels: " + ", ".join(local))
    parts += [
        f"{'constraint' if c.label == PIP_CONSTRAINT else c.label} {c.text} ({c.file})"
        for c in sources.constraints
    ]
    if sources.conda is not None and sources.conda.channels:
        parts.append("conda channels " + ", ".join(name for name, _ in sources.conda.channels))
    if sources.conda is not None and sources.conda.alias:
        parts.append(f"channel_alias {sources.conda.alias}")
    if sources.offline:
        parts.append("offline")
    return "; ".join(parts)
