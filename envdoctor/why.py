"""`envdoctor why`: a pasted error, explained with this machine's facts.

The check runs as `check` runs it, with the pasted text as one more error text for the signatures
(knowledge/signatures). A finding whose rule a signature names is backed by both the text and the
facts and comes first; a signature no fact confirms becomes a finding of its own, backed by the
text alone, with what tells its cause apart; the rest of the check follows.
"""

from __future__ import annotations

from dataclasses import replace

from envdoctor.knowledge.signatures import PASTED, ErrorEvidence, SignatureMatch
from envdoctor.model.findings import Explained, Finding, Fix, Report, Support

MAX_READ = 1024 * 1024  # a log is read up to this many bytes; the rest is said to be cut


def pasted_matches(evidence: ErrorEvidence) -> tuple[SignatureMatch, ...]:
    return tuple(m for m in evidence.matches if m.source == PASTED)


def text_only_finding(match: SignatureMatch) -> Finding | None:
    """The finding a signature gives when no rule confirms it from this machine's facts."""
    from envdoctor.rules import RULES_BY_CODE

    signature = match.signature
    rule = next((RULES_BY_CODE[c] for c in signature.rules if c in RULES_BY_CODE), None)
    if rule is None:
        return None
    checks = "; ".join(f"`{c}`" for c in signature.checks)
    detail = (
        f"The pasted error says so (line {match.line}: “{match.excerpt}”), but the facts envdoctor sees "
        "here do not show it: the error may come from another machine, another environment or an "
        "earlier state of this one."
    )
    if checks:
        detail += f" To confirm it where the error happened: {checks}."
    return Finding(
        code=rule.code,
        name=rule.name,
        severity=rule.severity,
        title=signature.cause,
        detail=detail,
        area=rule.area,
        evidence=(f"pasted error, line {match.line}",),
        fixes=(Fix(summary=signature.fix),),
        support=Support.TEXT,
    )


def explain(
    report: Report, evidence: ErrorEvidence, *, read_bytes: int, truncated: bool, source: str
) -> Report:
    """`report` (a check run with the pasted text) with the findings the text points to first."""
    matches = pasted_matches(evidence)
    pointed = {code for m in matches for code in m.signature.rules}
    confirmed = [replace(f, support=Support.BOTH) for f in report.findings if f.code in pointed]
    present = {f.code for f in report.findings}
    text_only = [
        finding
        for m in matches
        if not present & set(m.signature.rules)
        for finding in (text_only_finding(m),)
        if finding is not None
    ]
    unique_text: list[Finding] = []
    for finding in text_only:  # one per rule: the first signature that names it
        if all(f.code != finding.code for f in unique_text):
            unique_text.append(finding)
    rest = [replace(f, support=Support.FACTS) for f in report.findings if f.code not in pointed]
    explained = Explained(
        known=bool(matches),
        signatures=tuple(m.signature.id for m in matches),
        read_bytes=read_bytes,
        truncated=truncated,
        input=source,
    )
    return replace(report, findings=(*confirmed, *unique_text, *rest), explained=explained)
