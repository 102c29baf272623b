"""Where the ACME stack keeps its data: ACME_HOME, read through envdoctor's host."""

from __future__ import annotations

from dataclasses import dataclass

from envdoctor.plugin import ProbeContext, ProbeSpec


@dataclass(frozen=True)
class AcmeFacts:
    home: str | None = None  # $ACME_HOME
    home_exists: bool = False


def collect(ctx: ProbeContext) -> AcmeFacts:
    home = ctx.host.env.get("ACME_HOME")
    return AcmeFacts(home, bool(home) and ctx.host.exists(home))


def describe(facts: AcmeFacts) -> str:
    return f"ACME_HOME={facts.home}" if facts.home else "ACME_HOME is not set"


PROBE = ProbeSpec(name="acme", title="ACME stack", facts_type=AcmeFacts, collect=collect, describe=describe)
