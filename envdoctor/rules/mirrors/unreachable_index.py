"""A configured index that does not answer from this machine (ED514).

A mirror or private index set in pip.conf, uv.toml or a variable outlives the network it worked
on: a VPN that is down, a company proxy that is not set, a mirror that moved, a typo in the host.
Every install then ends in pip's retries and "Could not find a version that satisfies the
requirement torch (from versions: none)", which reads like "no such torch" instead of "no such
host". The sources probe asks each configured index once; only a definite failure (the name does
not resolve, the connection is refused, no route) counts, never a slow answer.
"""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.knowledge import mirrors
from envdoctor.knowledge.mirrors import IndexStatus
from envdoctor.model.findings import Fix, Severity
from envdoctor.model.sources import MirrorFacts, ReachCheck, ReachStatus, SourcesFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import unset_command
from envdoctor.rules.mirrors.config_edits import PIP_CONFIG_DOCS, origin_line, pip_edit_fix
from envdoctor.rules.mirrors.index_variables import UV_ENV_DOCS
from envdoctor.rules.mirrors.stale_mirrors import ConfiguredUrl, configured_urls
from envdoctor.rules.mirrors.urls import without_credentials

# What pip and uv do with an index that does not answer, by the setting that names it.
_CONSEQUENCE = {
    "index-url": "pip asks it for every package a local source does not hold, retries five times, "
    'and ends with "Could not find a version that satisfies the requirement ... (from versions: '
    'none)" or "No matching distribution found"',
    "extra-index-url": "pip asks it on every install too, and waits through five retries with "
    "back-off each time before it goes on with the other indexes",
    "find-links": "pip reads it on every install and warns after its retries",
}
_UV_CONSEQUENCE = 'uv stops at the first index it cannot fetch from ("Failed to fetch")'


_NAME_NOT_FOUND = ("not known", "name resolution", "getaddrinfo", "host not found", "nodename")


def _likely_causes(detail: str) -> str:
    lowered = detail.lower()
    if any(words in lowered for words in _NAME_NOT_FOUND):
        return (
            "A host name that does not resolve is a typo, a mirror that moved, or a name only a VPN's "
            "or a company network's DNS knows"
        )
    if "refused" in lowered:
        return "A refused connection is a server that is down, a wrong port, or a firewall"
    return "No route to it: a network that only a VPN or a proxy reaches"


def _inconclusive(check: ReachCheck) -> bool:
    """A slow answer or a failure of envdoctor's own: not proof that the index is gone."""
    detail = check.detail.lower()
    return (
        detail.startswith(("no answer within", "envdoctor could not ask"))
        or "timed out" in detail
        or "timeout" in detail
    )


def _failed(sources: SourcesFacts) -> dict[str, ReachCheck]:
    return {
        check.url.strip(): check
        for check in sources.reach
        if check.status is ReachStatus.UNREACHABLE and not _inconclusive(check)
    }


@rule(
    code="ED514",
    name="configured-index-unreachable",
    severity=Severity.WARNING,
    summary="an index pip or uv is configured with does not answer from this machine",
    needs=(MirrorFacts, SourcesFacts),
    doc=RuleDoc(
        what="The remote indexes and find-links pages set in pip's and uv's configuration files and "
        "variables, asked once each by the sources probe (with the proxy variables pip uses): one "
        "whose host name does not resolve or whose connection is refused or has no route. A slow "
        "answer is not counted, nor an index pip reaches through its own `proxy` setting, nor "
        "anything under --offline. Known stale or dropped mirrors are ED504's.",
        why="pip retries an index that does not answer and then reports that no torch exists "
        '("from versions: none"), which sends people after Python versions and wheel tags; uv '
        "stops at it. The cause is the network the setting was written for: a VPN, a proxy, a "
        "company mirror, or a host that moved.",
        fix="Remove the setting (pip falls back to PyPI) or point it at an index that answers here; "
        "if the index is reached through a proxy or a VPN, set HTTPS_PROXY or connect first.",
        example="PIP_INDEX_URL=https://nexus.corp.example/repository/pypi/simple, exported in a "
        "shell profile, on a laptop off the company VPN: `pip install torch` retries five times, "
        "then finds no version.",
    ),
)
def configured_index_unreachable(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(MirrorFacts)
    sources = ctx.need(SourcesFacts)
    if sources.offline:
        return
    failed = _failed(sources)
    pip_has_proxy = facts.pip.get("proxy") is not None
    seen: set[str] = set()
    for item in configured_urls(facts):
        check = failed.get(item.url.strip())
        if check is None or item.url in seen or item.tool == "conda":
            continue
        if item.tool == "pip" and pip_has_proxy:
            continue  # pip goes through its own proxy setting, which the probe did not use
        known = mirrors.recognise(item.url)
        if known is not None and known.status in (IndexStatus.STALE, IndexStatus.DROPPED):
            continue
        seen.add(item.url)
        yield _hit(ctx, facts, item, check)


def _hit(ctx: RuleContext, facts: MirrorFacts, item: ConfiguredUrl, check: ReachCheck) -> Hit:
    tool, setting, url, origin = item.tool, item.setting, item.url, item.origin
    shown = without_credentials(url)
    where = origin_line(origin, item.line, facts.home)
    consequence = _UV_CONSEQUENCE
    if tool == "pip":
        consequence = _CONSEQUENCE.get(setting, _CONSEQUENCE["extra-index-url"])
    fixes: list[Fix] = []
    if tool == "pip":
        pip_setting = facts.pip.get(setting)
        if pip_setting is not None:
            remaining = [u for u in pip_setting.items if u != url]
            summary = (
                "Remove it"
                + (" (pip then uses PyPI)" if setting == "index-url" else "")
                + ", or point it at an index that answers from here"
            )
            fixes.append(pip_edit_fix(ctx, facts.pip, pip_setting, remaining, summary, facts.home))
    elif origin.startswith("UV_"):  # UV_INDEX, UV_EXTRA_INDEX_URL, ...: a variable, not a file
        fixes.append(
            Fix(
                summary=f"Unset {origin} where it is set (shell profile, CI settings), or point it at an "
                "index that answers from here",
                commands=(unset_command(ctx.platform.os, None, origin),),
                link=UV_ENV_DOCS,
            )
        )
    else:
        fixes.append(Fix(summary=f"In {where}, remove the index {shown} or point it at one that answers"))
    fixes.append(
        Fix(
            summary="If the index answers only inside a company network: connect the VPN first, or, "
            "where the network needs a proxy, set HTTPS_PROXY (and HTTP_PROXY) to it, as pip and uv "
            "read them",
            link=PIP_CONFIG_DOCS,
        )
    )
    return Hit(
        title=f"{tool}'s {setting} {shown} does not answer from here ({check.detail})",
        detail=f"{shown} is set as {setting} ({where}); asked from this machine, it failed: "
        f"{check.detail}. {consequence}. {_likely_causes(check.detail)}. Tell: `curl -sSI {shown}` "
        "(or a browser) shows the same failure.",
        evidence=(f"{tool} {setting} = {shown} ({where})", f"asked {shown}: {check.detail}"),
        fixes=tuple(fixes),
    )
