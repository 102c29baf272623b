"""Mirrors and package-index configuration: where pip, conda and uv would fetch torch from.

Facts come from the mirrors probe; which index a URL is comes from the knowledge base
(knowledge/mirrors.json). Background: shared/docs/facts/mirror_facts.md sections 1.5-1.6 (no index
priority in pip), 2.3 (the pytorch conda channel stopped at 2.5), 4 (mirrors), 5 (pitfalls), 6
(credentials).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from urllib.parse import urlsplit, urlunsplit

from packaging.version import Version

from envdoctor.install import plan as install
from envdoctor.install.commands import resolve_mirror
from envdoctor.knowledge import mirrors, parse_version
from envdoctor.knowledge.mirrors import IndexKind, IndexStatus, KnownIndex
from envdoctor.model import Fix, Severity
from envdoctor.probes.mirrors import (
    DIRECTORY,
    MALFORMED,
    MISSING,
    UNREADABLE,
    ConfigFile,
    MirrorFacts,
    PipConfig,
    PipSetting,
    is_variable,
    origin_text,
)
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.redact import has_secret, redact_text
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import GET_STARTED, install_target
from envdoctor.shell import quote

PIP_AUTH_DOCS = "https://pip.pypa.io/en/stable/topics/authentication/"
PIP_CONFIG_DOCS = "https://pip.pypa.io/en/stable/topics/configuration/"
PIP_FINDING_PACKAGES = "https://pip.pypa.io/en/stable/cli/pip_install/#finding-packages"
UV_INDEX_DOCS = "https://docs.astral.sh/uv/concepts/indexes/"
CONDA_CHANNEL_END = "https://github.com/pytorch/pytorch/issues/138506"
CONDA_CONFIG_DOCS = "https://docs.conda.io/projects/conda/en/latest/user-guide/configuration/use-condarc.html"


# ---------------------------------------------------------------------------------------------
# which index a URL is


def _key(url: str) -> str:
    """Host and path, lower-cased, without scheme, credentials or trailing slashes."""
    try:
        parts = urlsplit(url.strip() if "://" in url else "https://" + url.strip())
        return f"{(parts.hostname or '').lower()}{parts.path.rstrip('/').lower()}"
    except ValueError:
        return ""


def pypi_mirror(url: str) -> KnownIndex | None:
    found = mirrors.recognise(url)
    return found if found is not None and found.kind == IndexKind.PYPI else None


def torch_index(url: str) -> KnownIndex | None:
    """PyTorch's wheel index or a known mirror of it."""
    found = mirrors.recognise(url)
    return found if found is not None and found.kind == IndexKind.PYTORCH_WHEELS else None


def variant_of(url: str, index: KnownIndex) -> str | None:
    """ "cu126" from https://download.pytorch.org/whl/cu126 (or .../whl/nightly/cu126)."""
    rest = _key(url)[len(_key(index.url)) :].strip("/")
    for segment in rest.split("/"):
        if segment == "cpu" or segment.startswith(("cu", "rocm", "xpu")):
            return segment
    return None


def without_credentials(url: str) -> str:
    """The URL without user:password@, a conda /t/<token>/ segment or secret query parameters."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_text(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    path = parts.path
    if path.startswith("/t/"):
        path = "/" + path[3:].split("/", 1)[-1] if "/" in path[3:] else "/"
    query = "&".join(p for p in parts.query.split("&") if p and not has_secret("?" + p))
    return urlunsplit((parts.scheme, netloc, path, query, parts.fragment))


# ---------------------------------------------------------------------------------------------
# shared bits of fixes


def _python(ctx: RuleContext) -> str:
    return quote(ctx.interpreter.path, ctx.platform.os)


def _where(origin: str, line: int | None, home: str | None) -> str:
    text = origin_text(origin, home)
    return f"{text} line {line}" if line else text


def _unset_variable(name: str, os_name: str) -> str:
    return f"Remove-Item Env:{name}" if os_name == "windows" else f"unset {name}"


def _set_variable(name: str, value: str, os_name: str) -> str:
    if os_name == "windows":
        return f"$env:{name} = {quote(value, os_name)}"
    return f"export {name}={quote(value, os_name)}"


def _pip_config_level(pip: PipConfig, path: str) -> str | None:
    """The `pip config --<level>` flag that edits `path`, if pip can edit it.

    pip edits the last file of a level (configuration.py `_get_parser_to_modify`), so a setting in
    /etc/xdg/pip/pip.conf cannot be changed with `pip config --global`.
    """
    for level in ("global", "user", "site"):
        files = [f for f in pip.files if f.level == level]
        if files and files[-1].path == path:
            return level
    return None


def pip_set_commands(
    ctx: RuleContext, pip: PipConfig, setting: PipSetting, items: list[str]
) -> tuple[str, ...]:
    """Commands that leave `setting` holding `items` (none left: removed), where it was set."""
    os_name = ctx.platform.os
    value = " ".join(items)
    if setting.from_env:
        return (
            _set_variable(setting.origin, value, os_name)
            if items
            else _unset_variable(setting.origin, os_name),
        )
    level = _pip_config_level(pip, setting.origin)
    if level is None:
        return ()
    name = f"{setting.section}.{setting.key}"
    if items:
        return (f"{_python(ctx)} -m pip config --{level} set {name} {quote(value, os_name)}",)
    return (f"{_python(ctx)} -m pip config --{level} unset {name}",)


def pip_edit_fix(
    ctx: RuleContext, pip: PipConfig, setting: PipSetting, items: list[str], summary: str, home: str | None
) -> Fix:
    """A fix that leaves `setting` holding `items`: the command where one can do it, else the edit."""
    commands = pip_set_commands(ctx, pip, setting, items)
    if setting.from_env:
        summary += f" (also where {setting.origin} is set: shell profile, CI settings)"
    elif not commands:
        where = _where(setting.origin, setting.line, home)
        if items:
            summary += f"; by hand: make {where} read `{setting.key} = {' '.join(items)}`"
        else:
            summary += f"; by hand: delete the `{setting.key}` entry at {where}"
    return Fix(summary=summary, commands=commands, link=PIP_CONFIG_DOCS)


def note_text(note: str) -> str:
    """A knowledge-base note without its pointer into envdoctor's own fact files."""
    text = re.sub(r"shared/docs/facts/[\w.]+\.md(?: [\d.]+)?:?\s*", "", note).strip()
    return text[:1].upper() + text[1:]


_LEVEL_WORDS = {
    "global": "its global file",
    "user": "its user file",
    "site": "the environment's own file",
    "env": "the file PIP_CONFIG_FILE names",
    "search-path": "a file on its search path",
    "condarc": "the file CONDARC names",
    "project": "the project's file",
    "system": "its system file",
    "config-file": "the file UV_CONFIG_FILE names",
}


def _cuda_wanted(ctx: RuleContext) -> bool:
    nvml = ctx.get(NvmlFacts)
    torch = ctx.get(TorchFacts)
    if nvml is not None and nvml.working and nvml.gpus:
        return True
    return torch is not None and torch.imported and bool(torch.cuda)


def _plan_fixes(ctx: RuleContext, summary: str, mirror_url: str) -> list[Fix]:
    """The planner's CUDA install command, and the same from the mirror operator's PyTorch-wheel
    mirror when it runs one that envdoctor's data marks as working."""
    target = install_target(ctx, want_cuda=True)
    plan = install.plan(target)
    if not plan.possible:
        return []
    commands = tuple(c.command for c in plan.commands)
    fixes = [Fix(summary=f"{summary}: {plan.reason}", commands=commands, link=GET_STARTED)]
    choice = resolve_mirror(mirror_url, "detected")
    wheels = choice.wheels
    if wheels is not None and wheels.name != "official-pytorch" and wheels.status == IndexStatus.OK:
        mirrored = install.plan(replace(target, mirror=choice))
        nearer = tuple(c.command for c in mirrored.commands)
        if mirrored.possible and nearer != commands:
            fixes.append(Fix(summary=f"The same from {wheels.title}", commands=nearer))
    return fixes


# ---------------------------------------------------------------------------------------------
# ED501: a PyPI mirror as the index on Windows/macOS while a CUDA build is wanted


@dataclass(frozen=True)
class _DefaultIndex:
    tool: str
    url: str
    origin: str
    line: int | None
    mirror: KnownIndex
    others: tuple[str, ...]  # the tool's other index and find-links URLs


def _default_indexes(facts: MirrorFacts) -> Iterator[_DefaultIndex]:
    pip = facts.pip
    index = pip.get("index-url")
    if index is not None and not pip.flag("no-index"):
        found = pypi_mirror(index.value.strip())
        if found is not None:
            others = tuple(
                u for key in ("extra-index-url", "find-links") for s in [pip.get(key)] if s for u in s.items
            )
            yield _DefaultIndex("pip", index.value.strip(), index.origin, index.line, found, others)
    uv = facts.uv
    defaults = [
        i for i in uv.indexes if i.default or i.via in ("index-url", "default-index", "pip.index-url")
    ]
    if defaults and not any(s.key.endswith("torch-backend") for s in uv.settings):
        first = defaults[0]
        found = pypi_mirror(first.url)
        if found is not None:
            others = tuple(i.url for i in uv.indexes if i is not first)
            yield _DefaultIndex("uv", first.url, first.origin, first.line, found, others)


@rule(
    code="ED501",
    name="pypi-mirror-gives-cpu-torch",
    severity=Severity.WARNING,
    summary="a PyPI mirror is the index on Windows/macOS while a CUDA build is wanted",
    needs=(MirrorFacts,),
    doc=RuleDoc(
        what="On Windows and macOS, whether pip's index-url or uv's default index is a known PyPI "
        "mirror (TUNA, USTC, Aliyun, ...) with no PyTorch wheel index configured beside it, while "
        "an NVIDIA GPU or an installed CUDA build says CUDA is wanted.",
        why="PyPI has only CPU-only torch wheels for Windows and macOS, and mirrors copy PyPI, so "
        '`pip install torch` through the mirror always gives +cpu (the classic "the TUNA torch '
        'has no CUDA" report). macOS has no CUDA builds at all, so there it never fires.',
        fix="Keep the mirror for everything else and name a PyTorch CUDA index on the torch "
        "command line (--index-url overrides the configured one); the command is shown, with the "
        "mirror operator's own PyTorch-wheel mirror where it runs one.",
        example="Windows 11, RTX 4070, %APPDATA%\\pip\\pip.ini: index-url = "
        "https://pypi.tuna.tsinghua.edu.cn/simple; `pip install torch` gives 2.5.1+cpu.",
    ),
)
def pypi_mirror_gives_cpu_torch(ctx: RuleContext) -> Iterator[Hit]:
    if ctx.platform.os not in ("windows", "macos") or not _cuda_wanted(ctx):
        return
    facts = ctx.need(MirrorFacts)
    system = "Windows" if ctx.platform.os == "windows" else "macOS"
    for default in _default_indexes(facts):
        if any(torch_index(url) for url in default.others):
            continue  # a PyTorch index is configured too: ED502 explains how they mix
        where = _where(default.origin, default.line, facts.home)
        torch = ctx.get(TorchFacts)
        now = ""
        if torch is not None and torch.imported and torch.variant == "cpu":
            now = f" The installed torch {torch.version} is such a CPU-only build."
        fixes = _plan_fixes(
            ctx,
            "Install torch from a PyTorch CUDA index for this one command (the mirror stays for the rest)",
            default.url,
        )
        yield Hit(
            title=f"{default.tool}'s index is {default.mirror.title}: on {system} it "
            "offers only CPU builds of torch",
            detail=f"{default.tool} takes its default index {default.url} from {where}. PyPI, and every "
            f"mirror of it, carries only CPU-only torch wheels for {system}; CUDA builds are published "
            "only on PyTorch's per-variant indexes (download.pytorch.org/whl/cuXXX) and mirrors of those. "
            "`pip install torch` from this index gives a +cpu build and torch.cuda.is_available() "
            f"is False.{now}",
            evidence=(
                f"{default.tool} index = {default.url} ({where})",
                f"platform = {ctx.platform.os}",
                "CUDA wanted",
            ),
            fixes=tuple(fixes),
        )


# ---------------------------------------------------------------------------------------------
# ED502: a PyTorch index only as an extra index next to PyPI or a mirror (pip)


@rule(
    code="ED502",
    name="pytorch-index-as-extra-index",
    severity=Severity.WARNING,
    summary="a PyTorch wheel index is only an extra index or find-links next to PyPI or a mirror",
    needs=(MirrorFacts,),
    doc=RuleDoc(
        what="Whether pip's effective extra-index-url or find-links holds a PyTorch wheel index "
        "(official or a mirror) while the index-url is PyPI, a mirror or another index.",
        why="pip has no index priority: the highest version from any source wins, and the "
        "source is not part of the ranking. Same version: the +cuXXX/+cpu wheel outranks the "
        "plain one. Newer plain version elsewhere: that one wins, which is how CPU-only or "
        "wrong-CUDA builds arrive silently (pytorch/pytorch#96884, pytorch/ci-infra#661).",
        fix="Remove the PyTorch index from the configuration and give it as --index-url on the "
        "torch command, pinning the variant with its local label (torch==2.5.1+cu124).",
        example="pip.conf: index-url = https://mirrors.aliyun.com/pypi/simple/, extra-index-url = "
        "https://download.pytorch.org/whl/cu116; torch 2.0 then comes from the mirror.",
    ),
)
def pytorch_index_as_extra_index(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(MirrorFacts)
    pip = facts.pip
    if pip.flag("no-index"):
        return
    index = pip.get("index-url")
    main = index.value.strip() if index is not None else None
    if main is not None and torch_index(main) is not None:
        return  # the PyTorch index is the index: pip cannot fall back to another source
    for key in ("extra-index-url", "find-links"):
        setting = pip.get(key)
        if setting is None:
            continue
        torch_urls = [u for u in setting.items if torch_index(u) is not None]
        if not torch_urls:
            continue
        main_text = main if main is not None else "PyPI (pip's default index)"
        where = _where(setting.origin, setting.line, facts.home)
        variants = sorted(
            {v for u in torch_urls for i in [torch_index(u)] if i for v in [variant_of(u, i)] if v}
        )
        cpu_note = ""
        if "cpu" in variants and _cuda_wanted(ctx):
            cpu_note = (
                " Here the extra index is the CPU variant on a machine that wants CUDA: its +cpu files "
                "outrank the mirror's plain files of the same version."
            )
        detail = (
            f"pip reads {', '.join(torch_urls)} as {key} ({where}) next to {main_text}. pip has no index "
            "priority: it collects candidates from every source and installs the highest version. A "
            "PyTorch wheel carries a local label (2.5.1+cu124), which sorts above the same public "
            "version (2.5.1), so for a version both sides have, the labelled wheel wins. But when the "
            "other index has a newer release than this PyTorch index (a CUDA variant no longer built, "
            "or not yet published), the newer plain wheel wins: a CPU-only build on Windows/macOS, on "
            "Linux the default CUDA build that may need a newer driver. And `torch==2.5.1` also "
            "accepts whichever labelled build exists, so what you get depends on what each index holds."
            + cpu_note
        )
        remaining = [u for u in setting.items if u not in torch_urls]
        summary = f"Take the PyTorch index out of {key} ({where})"
        edit = pip_edit_fix(ctx, pip, setting, remaining, summary, facts.home)
        fix = edit
        plan = install.plan(install_target(ctx))
        if plan.possible and plan.variant and plan.torch:
            pinned = tuple(_pin_variant(c.command, plan) for c in plan.commands)
            fix = Fix(
                summary=f"{edit.summary}, then install with the PyTorch index as --index-url and the "
                f"variant pinned by its local label: {plan.reason}",
                commands=edit.commands + pinned,
                link=PIP_FINDING_PACKAGES,
            )
        yield Hit(
            title=f"a PyTorch index is only an extra source ({key}) next to {main_text}: pip takes the "
            "highest version from any of them",
            detail=detail,
            evidence=(
                f"pip {key} = {setting.value} ({where})",
                f"pip index-url = {main or '(PyPI default)'}",
            ),
            fixes=(fix,),
        )


def _pin_variant(command: str, plan: install.InstallPlan) -> str:
    """torch==2.5.1 -> torch==2.5.1+cu124: only that build satisfies it, whatever other indexes hold."""
    if "--index-url" not in command:  # macOS: plain PyPI wheels carry no label
        return command
    return command.replace(f"torch=={plan.torch} ", f"torch=={plan.torch}+{plan.variant} ")


# ---------------------------------------------------------------------------------------------
# ED503: conda's pytorch/nvidia channels while a newer torch is wanted or installed


def channel_name(channel: str) -> str:
    """ "pytorch" from "pytorch", "pytorch/label/x" or a channel URL ending in /pytorch/."""
    text = channel.strip().rstrip("/")
    if "://" in text:
        return text.rsplit("/", 1)[-1]
    return text.split("/", 1)[0]


@dataclass(frozen=True)
class _Frozen:
    channel: str  # as configured: a name or a URL
    name: str  # pytorch, nvidia
    last: str  # the last torch release served there
    key: str  # channels or default_channels
    origin: str
    line: int | None


def _frozen_in_use(facts: MirrorFacts, torch: TorchFacts | None) -> list[_Frozen]:
    installed = parse_version(torch.public_version) if torch is not None and torch.installed else None
    found = []
    for key in ("channels", "default_channels"):
        for channel, setting in facts.conda.merged_list(key):
            name = channel_name(channel)
            last = mirrors.conda_channel_last_torch(name)
            if last is None:
                continue
            cutoff = parse_version(last)
            if installed is not None and cutoff is not None and installed <= cutoff:
                continue  # what is installed is still within what the channel served
            found.append(_Frozen(channel, name, last, key, setting.origin, setting.line))
    return found


def _remove_channel(ctx: RuleContext, item: _Frozen, home: str | None) -> Fix:
    os_name = ctx.platform.os
    if is_variable(item.origin):
        return Fix(
            summary=f"Drop {item.channel} from {item.origin} (and wherever it is set)",
            commands=(_unset_variable(item.origin, os_name),),
        )
    return Fix(
        summary=f"Remove {item.channel} from {origin_text(item.origin, home)}",
        commands=(
            f"conda config --file {quote(item.origin, os_name)} "
            f"--remove {item.key} {quote(item.channel, os_name)}",
        ),
        link=CONDA_CONFIG_DOCS,
    )


@rule(
    code="ED503",
    name="conda-pytorch-channel-frozen",
    severity=Severity.WARNING,
    summary="conda's pytorch/nvidia channels are configured, but PyTorch no longer publishes there",
    needs=(MirrorFacts,),
    doc=RuleDoc(
        what="conda's merged channels and default_channels (every .condarc and CONDA_CHANNELS) "
        "for channels whose torch publication ended (knowledge base: pytorch and nvidia), while "
        "torch is missing or newer than their last release.",
        why="PyTorch published 2.5 as its last release to the pytorch channel "
        "(pytorch/pytorch#138506); every mirror of it is frozen at 2.5.x. Newer torch cannot come "
        "from there: the solve fails or an old build is installed.",
        fix="Remove the channel and install torch with pip from PyTorch's wheel index inside the "
        "conda environment, or take conda-forge's pytorch package.",
        example="~/.condarc: channels [pytorch, nvidia, defaults] on a machine that needs torch "
        "2.7 for an RTX 5090.",
    ),
)
def conda_pytorch_channel_frozen(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(MirrorFacts)
    torch = ctx.get(TorchFacts)
    frozen = _frozen_in_use(facts, torch)
    if not frozen:
        return
    names = " and ".join(dict.fromkeys(f.name for f in frozen))
    last = max(frozen, key=lambda f: parse_version(f.last) or Version("0")).last
    want = (
        f"the installed torch {torch.version or torch.dist_version}"
        if torch is not None and torch.installed and torch.public_version
        else "a current torch"
    )
    listed = "; ".join(
        f"{f.channel} in {f.key} ({_where(f.origin, f.line, facts.home)}): torch up to {f.last}"
        for f in frozen
    )
    removals = [_remove_channel(ctx, item, facts.home) for item in frozen]
    remove_commands = tuple(c for fix in removals for c in fix.commands)
    remove_text = "; ".join(fix.summary for fix in removals)
    fixes = []
    plan = install.plan(install_target(ctx))
    if plan.possible:
        fixes.append(
            Fix(
                summary=f"{remove_text}; then install torch with pip inside the conda environment: "
                f"{plan.reason}",
                commands=remove_commands + tuple(c.command for c in plan.commands),
                link=GET_STARTED,
            )
        )
    fixes.append(
        Fix(
            summary=f"{remove_text}; then use conda-forge's build",
            commands=(*remove_commands, "conda install -c conda-forge pytorch"),
            link=CONDA_CHANNEL_END,
        )
    )
    yield Hit(
        title=f"conda is set to use the {names} channel{'s' if len(frozen) > 1 else ''}, which stopped at "
        f"torch {last}",
        detail=f"{listed}. PyTorch stopped publishing to its conda channels (pytorch/pytorch#138506), and "
        f"mirrors of them are frozen at the same point. For {want} conda either finds no "
        "solution or silently installs an old build.",
        evidence=tuple(f"conda {f.key} includes {f.channel}" for f in frozen),
        fixes=tuple(fixes),
    )


# ---------------------------------------------------------------------------------------------
# ED504: a configured mirror known to be stale or dropped


@dataclass(frozen=True)
class _Configured:
    tool: str
    setting: str  # index-url, extra-index-url, channels, custom_channels, index, ...
    url: str
    origin: str
    line: int | None


def configured_urls(facts: MirrorFacts) -> Iterator[_Configured]:
    """Every URL a tool uses now (pip: the effective values; conda: merged; uv: all indexes)."""
    for key in ("index-url", "extra-index-url", "find-links"):
        setting = facts.pip.get(key)
        if setting is None:
            continue
        for url in setting.items:
            yield _Configured("pip", key, url, setting.origin, setting.line)
    conda = facts.conda
    for key in ("channels", "default_channels"):
        for channel, where in conda.merged_list(key):
            if "://" in channel:
                yield _Configured("conda", key, channel, where.origin, where.line)
    for name, url, where in conda.custom_channels():
        yield _Configured("conda", f"custom_channels.{name}", url, where.origin, where.line)
    alias = conda.last("channel_alias")
    if alias is not None and alias.value:
        yield _Configured("conda", "channel_alias", alias.value, alias.origin, alias.line)
    for index in facts.uv.indexes:
        yield _Configured("uv", index.via, index.url, index.origin, index.line)


def _replacement(index: KnownIndex) -> KnownIndex | None:
    for candidate in mirrors.known_indexes():
        same = candidate.name == index.name and candidate.kind == index.kind
        if same and candidate.status == IndexStatus.OK:
            return candidate
    return None


def _missing_channels(item: _Configured, known: KnownIndex) -> tuple[str, ...]:
    """The channels a conda setting takes from a mirror that does not carry them itself."""
    if item.tool != "conda" or not known.channels_missing:
        return ()
    if item.setting == "channel_alias":
        return known.channels_missing  # every channel named without a URL goes there, -c pytorch too
    if item.setting.startswith("custom_channels."):
        reached = item.setting.split(".", 1)[1]
    else:
        reached = channel_name(item.url)
    return (reached,) if reached in known.channels_missing else ()


def _stale_hit(ctx: RuleContext, item: _Configured, known: KnownIndex, where: str) -> Hit:
    facts = ctx.need(MirrorFacts)
    better = _replacement(known)
    fixes: list[Fix] = []
    if item.tool == "pip":
        setting = next(s for s in facts.pip.effective if s.key == item.setting)
        if better is not None:
            items = [better.url if u == item.url else u for u in setting.items]
            summary = f"Switch to {better.url}, its current address"
        else:
            items = [u for u in setting.items if u != item.url]
            summary = (
                "Remove it"
                + (" (pip then uses PyPI)" if item.setting == "index-url" else "")
                + ", or point it at a maintained mirror"
            )
        fixes.append(pip_edit_fix(ctx, facts.pip, setting, items, summary, facts.home))
    else:
        replacement = f" with {better.url} ({better.title})" if better is not None else ""
        fixes.append(Fix(summary=f"In {where}, replace {item.url}{replacement} or remove it"))
    return Hit(
        title=f"{item.tool} uses {known.title}, which is {known.status}",
        detail=f"{item.url} is set as {item.setting} ({where}). {note_text(known.note)}",
        evidence=(f"{item.tool} {item.setting} = {item.url} ({where})", f"mirror status: {known.status}"),
        fixes=tuple(fixes),
    )


def _missing_channel_hit(item: _Configured, known: KnownIndex, missing: tuple[str, ...], where: str) -> Hit:
    names = " and ".join(missing)
    channels = f"channel{'s' if len(missing) > 1 else ''}"
    return Hit(
        title=f"{item.tool} takes the {names} {channels} from {known.title}, which does not carry "
        f"{'them' if len(missing) > 1 else 'it'}",
        detail=f"{item.url} is set as {item.setting} ({where}). {note_text(known.note)}",
        evidence=(
            f"{item.tool} {item.setting} = {item.url} ({where})",
            f"mirror without the {names} {channels}",
        ),
        fixes=(
            Fix(
                summary=f"In {where}, replace {item.url} with a mirror that carries the {names} "
                f"{channels}, or remove it"
            ),
        ),
    )


@rule(
    code="ED504",
    name="stale-or-dropped-mirror",
    severity=Severity.WARNING,
    summary="a configured mirror is known to be stale or no longer served",
    needs=(MirrorFacts,),
    doc=RuleDoc(
        what="Every index, find-links, channel, custom channel and channel_alias that pip, conda "
        "and uv use, against the knowledge base's mirror status (stale or dropped, with source) "
        "and the channels a working conda mirror does not carry (USTC's has no pytorch channel).",
        why='A stale mirror silently offers older releases or none at all ("Could not find a '
        'version that satisfies the requirement"); a dropped one fails with connection errors '
        "that look like network trouble.",
        fix="Switch to the operator's current URL where there is one (shown), else remove the "
        "entry or use a maintained mirror.",
        example="index-url = https://pypi.douban.com/simple (dead since 2024) or "
        "https://pypi.mirrors.ustc.edu.cn/simple (the very old USTC host).",
    ),
)
def stale_or_dropped_mirror(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(MirrorFacts)
    seen: set[tuple[str, str]] = set()
    for item in configured_urls(facts):
        known = mirrors.recognise(item.url)
        if known is None or (item.url, item.origin) in seen:
            continue
        where = _where(item.origin, item.line, facts.home)
        missing = _missing_channels(item, known)
        if known.status in (IndexStatus.STALE, IndexStatus.DROPPED):
            yield _stale_hit(ctx, item, known, where)
        elif missing:
            yield _missing_channel_hit(item, known, missing, where)
        else:
            continue
        seen.add((item.url, item.origin))


# ---------------------------------------------------------------------------------------------
# ED505: credentials written into a configuration file


def _secrets_in_files(facts: MirrorFacts) -> Iterator[tuple[str, str, str, str, int | None]]:
    """(tool, setting, value, file, line) for each configured value carrying a credential."""
    for setting in facts.pip.settings:
        if not setting.from_env and has_secret(setting.value):
            for url in setting.items:
                if has_secret(url):
                    yield "pip", f"{setting.section}.{setting.key}", url, setting.origin, setting.line
    for conda_setting in facts.conda.settings:
        if is_variable(conda_setting.origin):
            continue
        values = list(conda_setting.items) + [u for _, u in conda_setting.pairs]
        values += [conda_setting.value] if conda_setting.value else []
        for value in values:
            if has_secret(value):
                yield "conda", conda_setting.key, value, conda_setting.origin, conda_setting.line
    for index in facts.uv.indexes:
        if is_variable(index.origin) or not has_secret(index.url):
            continue
        yield (
            "uv",
            index.via if not index.name else f"index {index.name}",
            index.url,
            index.origin,
            index.line,
        )


@rule(
    code="ED505",
    name="index-credentials-in-plain-text",
    severity=Severity.WARNING,
    summary="a configuration file holds an index password or token in plain text",
    needs=(MirrorFacts,),
    doc=RuleDoc(
        what="URLs in pip files, .condarc files and uv.toml/pyproject.toml with user:password@, "
        "token@, a conda /t/<token>/ segment or a secret-looking query parameter. Environment "
        "variables are the recommended place and are not flagged. envdoctor itself masks every "
        "such value as **** in all its output.",
        why="Configuration files get copied, backed up, shared and committed; `pip config list` "
        "prints the values unredacted.",
        fix="Keep the bare URL in the file and move the login to the keyring or ~/.netrc (pip), "
        "UV_INDEX_<NAME>_USERNAME/PASSWORD (uv), or the issuing tool's token store (conda).",
        example="pip.conf: extra-index-url = https://__token__:glpat-...@gitlab.example.com/api/v4/"
        "projects/1/packages/pypi/simple",
    ),
)
def index_credentials_in_plain_text(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(MirrorFacts)
    os_name = ctx.platform.os
    for tool, setting, value, path, line in _secrets_in_files(facts):
        clean = without_credentials(value)
        host = urlsplit(clean).hostname or "the index host"
        where = _where(path, line, facts.home)
        if tool == "pip":
            section, key = setting.split(".", 1)
            stored = next(
                (s for s in facts.pip.settings if s.origin == path and s.section == section and s.key == key),
                None,
            )
            commands: tuple[str, ...] = ()
            if stored is not None:
                items = [clean if u == value else u for u in stored.items]
                commands = pip_set_commands(ctx, facts.pip, stored, items)
            fix = Fix(
                summary=f"Keep {clean} in the file and let pip take the login from the keyring or ~/.netrc "
                f"(a line `machine {host} login USER password TOKEN`)",
                commands=commands,
                link=PIP_AUTH_DOCS,
            )
        elif tool == "uv":
            name = setting.split(" ", 1)[1] if setting.startswith("index ") else None
            variable = (name or "NAME").upper().replace("-", "_")
            fix = Fix(
                summary=f"Keep url = {clean} in the file (give the index a name if it has none) and pass "
                "the login through variables uv reads",
                commands=(
                    _set_variable(f"UV_INDEX_{variable}_USERNAME", "USER", os_name),
                    _set_variable(f"UV_INDEX_{variable}_PASSWORD", "TOKEN", os_name),
                ),
                link=UV_INDEX_DOCS,
            )
        else:
            fix = Fix(
                summary=f"Replace it with {clean} and log in with the tool that issued the token (for "
                "anaconda.org: `anaconda login`), so the token lives in its token store",
                link=CONDA_CONFIG_DOCS,
            )
        yield Hit(
            title=f"a password or token for {host} is written in {origin_text(path, facts.home)}",
            detail=f"{tool} {setting} in {where} carries credentials in plain text ({redact_text(value)}). "
            "Anyone who can read the file, a backup, or a shared or committed copy of it can use them; "
            "`pip config list` and `pip config debug` print them unredacted.",
            evidence=(f"{tool} {setting} ({where}) has credentials in its URL",),
            fixes=(fix,),
        )


# ---------------------------------------------------------------------------------------------
# ED506 / ED507: configuration files the tool rejects, or silently skips


def _file_effect(file: ConfigFile) -> str | None:
    """ "fatal" when the tool refuses to run, "ignored" when it silently skips the file, else None.

    pip reads with configparser.read(), which skips files it cannot open but aborts on a syntax
    error; conda opens every file on its search path and aborts on bad YAML; uv aborts on a bad
    uv.toml but only warns about a bad pyproject.toml and skips an unreadable user file.
    """
    status = file.status
    if status == MISSING:
        if not file.named_by:
            return None
        return "fatal" if file.tool == "uv" else "ignored"
    if status == MALFORMED:
        if file.tool == "uv" and file.path.endswith("pyproject.toml"):
            return "ignored"
        return "fatal"
    if status in (UNREADABLE, DIRECTORY):
        if file.tool == "pip" or (file.tool == "uv" and file.level == "user"):
            return "ignored"
        return "fatal"
    return None


def _inspect_command(ctx: RuleContext, tool: str) -> str | None:
    return {
        "pip": f"{_python(ctx)} -m pip config debug",
        "conda": "conda config --show-sources",
    }.get(tool)


def _move_aside(path: str, os_name: str) -> str:
    if os_name == "windows":
        name = path.replace("/", "\\").rsplit("\\", 1)[-1]
        return f"Rename-Item -Path {quote(path, os_name)} -NewName {quote(name + '.bak', os_name)}"
    return f"mv {quote(path, os_name)} {quote(path + '.bak', os_name)}"


def _why(file: ConfigFile) -> str:
    if file.status == MALFORMED:
        return f"line {file.line}: {file.error}" if file.line else str(file.error)
    if file.status == MISSING:
        return f"{file.named_by} names it, but there is no such file"
    if file.status == DIRECTORY:
        return "it is a folder, not a file"
    return f"it cannot be read ({file.error})"


def _broken_files(ctx: RuleContext, effect: str) -> Iterator[Hit]:
    facts = ctx.need(MirrorFacts)
    os_name = ctx.platform.os
    for file in (*facts.pip.files, *facts.conda.files, *facts.uv.files):
        if _file_effect(file) != effect:
            continue
        shown = origin_text(file.path, facts.home)
        why = _why(file)
        fixes: list[Fix] = []
        if file.status == MALFORMED:
            fixes.append(
                Fix(
                    summary=f"Correct line {file.line or '?'} of {shown}; to test without it, move it aside",
                    commands=(_move_aside(file.path, os_name),),
                )
            )
        elif file.status == MISSING:
            fixes.append(
                Fix(
                    summary=f"Point {file.named_by} at the file you meant, or unset it",
                    commands=(_unset_variable(str(file.named_by), os_name),),
                )
            )
        elif file.status == DIRECTORY:
            fixes.append(Fix(summary=f"Remove or rename the folder {shown}; the tool expects a file there"))
        else:
            fixes.append(Fix(summary=f"Make {shown} readable for this user, or remove it"))
        inspect = _inspect_command(ctx, file.tool)
        if inspect:
            fixes.append(Fix(summary=f"See every file {file.tool} reads", commands=(inspect,)))
        if effect == "fatal":
            title = f"{file.tool} cannot use its configuration file {shown}: {why}"
            detail = (
                f"{file.tool} reads {file.path} ({_LEVEL_WORDS.get(file.level, file.level)}) and stops "
                "with an error, so every "
                f"`{file.tool} install` fails until the file is fixed."
            )
        else:
            title = f"{file.tool} silently skips {shown}: {why}"
            detail = (
                f"{file.tool} would read {file.path} ({_LEVEL_WORDS.get(file.level, file.level)}) but "
                "skips it without a word, so the "
                "index, mirror or constraint settings written there do not apply."
            )
        yield Hit(
            title=title,
            detail=detail,
            evidence=(f"{file.tool} file {file.path}: {file.status}",),
            fixes=tuple(fixes),
        )


@rule(
    code="ED506",
    name="package-config-unusable",
    severity=Severity.ERROR,
    summary="pip, conda or uv refuses to run because of a broken configuration file",
    needs=(MirrorFacts,),
    doc=RuleDoc(
        what="Every configuration file on the tools' search paths: INI syntax for pip, YAML "
        "syntax and value types for conda, TOML for uv, plus files named by UV_CONFIG_FILE that "
        "do not exist and files conda or uv cannot open.",
        why='pip ("Configuration file could not be loaded"), conda and uv stop at such a file, '
        "so no install works, whatever the command line says.",
        fix="Correct the named line, or move the file aside to confirm it is the cause.",
        example="pip.conf without a [global] header: `index-url = ...` on line 1.",
    ),
)
def package_config_unusable(ctx: RuleContext) -> Iterator[Hit]:
    return _broken_files(ctx, "fatal")


@rule(
    code="ED507",
    name="package-config-ignored",
    severity=Severity.WARNING,
    summary="a configuration file is silently skipped, so its settings do not apply",
    needs=(MirrorFacts,),
    doc=RuleDoc(
        what="pip files that are unreadable or are folders (configparser skips them silently), "
        "PIP_CONFIG_FILE or CONDARC naming a file that does not exist, a pyproject.toml uv cannot "
        "parse (uv warns and moves on), an unreadable uv user file.",
        why="The mirror, index or constraint you configured is not used, and nothing says so.",
        fix="Fix the permissions, replace the folder by a file, or point the variable at the right file.",
        example="PIP_CONFIG_FILE=~/pip.conf exported in .bashrc while the file is ~/.pip/pip.conf.",
    ),
)
def package_config_ignored(ctx: RuleContext) -> Iterator[Hit]:
    return _broken_files(ctx, "ignored")


RULES = (
    pypi_mirror_gives_cpu_torch,
    pytorch_index_as_extra_index,
    conda_pytorch_channel_frozen,
    stale_or_dropped_mirror,
    index_credentials_in_plain_text,
    package_config_unusable,
    package_config_ignored,
)
