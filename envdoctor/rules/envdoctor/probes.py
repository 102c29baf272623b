"""envdoctor's own trouble: a probe that failed or timed out, so part of the picture is missing."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.model.findings import ProbeStatus, Severity
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule


@rule(
    code="ED901",
    name="probe-failed",
    severity=Severity.WARNING,
    summary="one of envdoctor's checks failed or timed out",
    needs=(),
    doc=RuleDoc(
        what="Every probe's status: a probe that raised or ran past its timeout.",
        why="The rest of the report still comes out, but conclusions that needed the missing "
        "facts could not be drawn.",
        fix="Run again with a larger --timeout; if it keeps failing, report it with "
        "`envdoctor snapshot` attached.",
        example="The NVML query hangs because the GPU fell off the bus.",
    ),
)
def probe_failed(ctx: RuleContext) -> Iterator[Hit]:
    for result in ctx.probes:
        if result.status not in (ProbeStatus.FAILED, ProbeStatus.TIMEOUT):
            continue
        how = "timed out" if result.status is ProbeStatus.TIMEOUT else "failed"
        yield Hit(
            title=f"the {result.probe} check {how}; its part of the report is missing",
            detail=result.error or how,
            evidence=(f"probe {result.probe}: {result.status.value}",),
        )
