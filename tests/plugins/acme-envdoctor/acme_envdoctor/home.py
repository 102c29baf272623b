"""ACME002: ACME_HOME must name a folder that exists (a rule in the plugin probe's own area)."""

from __future__ import annotations

from collections.abc import Iterator

from acme_envdoctor.probe import AcmeFacts
from envdoctor.plugin import Fix, Hit, RuleContext, RuleDoc, Severity, rule


@rule(
    code="ACME002",
    name="acme-home-missing",
    severity=Severity.WARNING,
    summary="ACME_HOME names a folder that does not exist",
    needs=(AcmeFacts,),
    area="acme",
    doc=RuleDoc(
        what="Whether $ACME_HOME, when set, is an existing folder.",
        why="The ACME loaders write their caches there and stop when it is missing.",
        fix="Create the folder, or point ACME_HOME at one that exists.",
        example="ACME_HOME=/data/acme on a node without /data.",
    ),
)
def acme_home_missing(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(AcmeFacts)
    if facts.home and not facts.home_exists:
        yield Hit(
            title=f"ACME_HOME={facts.home} does not exist",
            detail="The ACME loaders write their caches there.",
            fixes=(Fix(summary="Create it", commands=(f"mkdir -p {facts.home}",)),),
        )
