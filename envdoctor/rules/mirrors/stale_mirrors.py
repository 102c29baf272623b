"""Mirrors the knowledge base knows to be stale or no longer served, and conda mirrors without
the channels they are asked for (ED504)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from envdoctor.knowledge import mirrors
from envdoctor.knowledge.mirrors import IndexStatus, KnownIndex
from envdoctor.knowledge.signatures import ErrorEvidence
from envdoctor.model.findings import Fix, Severity
from envdoctor.model.sources import MirrorFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.mirrors import pasted
from envdoctor.rules.mirrors.config_edits import origin_line, pip_edit_fix
from envdoctor.rules.mirrors.urls import channel_name
from envdoctor.util.records import record


def note_text(note: str) -> str:
    """A knowledge-base note without its pointer into envdoctor's own fact files."""
    text = re.sub(r"shared/docs/facts/[\w.]+\.md(?: [\d.]+)?:?\s*", "", note).strip()
    return text[:1].upper() + text[1:]


@record
class ConfiguredUrl:
    """One URL a package tool is configured with, and where: what ED504 and ED514 judge."""

    tool: str
    setting: str  # index-url, extra-index-url, channels, custom_channels, index, ...
    url: str
    origin: str
    line: int | None


def configured_urls(facts: MirrorFacts) -> Iterator[ConfiguredUrl]:
    """Every URL a tool uses now (pip: the effective values; conda: merged; uv: all indexes)."""
    for key in ("index-url", "extra-index-url", "find-links"):
        setting = facts.pip.get(key)
        if setting is None:
            continue
        for url in setting.items:
            yield ConfiguredUrl("pip", key, url, setting.origin, setting.line)
    conda = facts.conda
    for key in ("channels", "default_channels"):
        for channel, where in conda.merged_list(key):
            if "://" in channel:
                yield ConfiguredUrl("conda", key, channel, where.origin, where.line)
    for name, url, where in conda.custom_channels():
        yield ConfiguredUrl("conda", f"custom_channels.{name}", url, where.origin, where.line)
    alias = conda.last("channel_alias")
    if alias is not None and alias.value:
        yield ConfiguredUrl("conda", "channel_alias", alias.value, alias.origin, alias.line)
    for index in facts.uv.indexes:
        yield ConfiguredUrl("uv", index.via, index.url, index.origin, index.line)


def _replacement(index: KnownIndex) -> KnownIndex | None:
    for candidate in mirrors.known_indexes():
        if (
            candidate.name == index.name
            and candidate.kind == index.kind
            and candidate.status == IndexStatus.OK
        ):
            return candidate
    return None


def _missing_channels(item: ConfiguredUrl, known: KnownIndex) -> tuple[str, ...]:
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


def _stale_hit(ctx: RuleContext, item: ConfiguredUrl, known: KnownIndex, where: str) -> Hit:
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


def _missing_channel_hit(item: ConfiguredUrl, known: KnownIndex, missing: tuple[str, ...], where: str) -> Hit:
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
        "and the channels a working conda mirror does not carry (USTC's has no pytorch channel); "
        "under `envdoctor why`, also the indexes of a pasted pip command and pip's \"Looking in "
        'indexes" line.',
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
    yield from _pasted_mirrors(ctx)
    for item in configured_urls(facts):
        known = mirrors.recognise(item.url)
        if known is None or (item.url, item.origin) in seen:
            continue
        where = origin_line(item.origin, item.line, facts.home)
        missing = _missing_channels(item, known)
        if known.status in (IndexStatus.STALE, IndexStatus.DROPPED):
            yield _stale_hit(ctx, item, known, where)
        elif missing:
            yield _missing_channel_hit(item, known, missing, where)
        else:
            continue
        seen.add((item.url, item.origin))


def _pasted_mirrors(ctx: RuleContext) -> Iterator[Hit]:
    """A stale or dropped index in a pasted pip/uv command (-i URL) or pip's "Looking in indexes"."""
    evidence = ctx.get(ErrorEvidence)
    urls: dict[str, str] = {}
    for command in pasted.commands(evidence):
        for url in command.sources:
            urls.setdefault(url, f"the pasted command (“{command.line}”)")
    for looked in pasted.looking_in(evidence):
        for url in looked.indexes + looked.links:
            urls.setdefault(url, f"pip's “{looked.line}”")
    for url, where in urls.items():
        known = mirrors.recognise(url)
        if known is None or known.status not in (IndexStatus.STALE, IndexStatus.DROPPED):
            continue
        better = _replacement(known)
        instead = f"{better.url} ({better.title})" if better is not None else "PyPI or a maintained mirror"
        yield Hit(
            title=f"the command uses {known.title}, which is {known.status}",
            detail=f"{url} comes from {where}. {note_text(known.note)}",
            evidence=(f"pasted index = {url}", f"mirror status: {known.status}"),
            fixes=(
                Fix(
                    summary=f"Run the command with {instead} instead of {url} (or without -i, which "
                    "uses PyPI), and remove the old URL wherever the command came from (a README, a script)"
                ),
            ),
        )
