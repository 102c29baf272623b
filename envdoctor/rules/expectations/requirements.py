"""The project's stated requirements as a whole: which rule judges each key, whether each is met,
and the expectations area's line in the report. The rules themselves sit beside this module, one
family per file."""

from __future__ import annotations

from envdoctor.model.findings import AreaVerdict, Expectations, Finding, Severity

AREA = "expectations"
AREA_TITLE = "Project expectations"

# Which rule judges each key; GPU_KEYS also fall under ED701 when there is no GPU at all.
RULE_OF_KEY = {
    "require-gpu": "ED701",
    "min-gpus": "ED702",
    "require-cuda": "ED703",
    "require-torch": "ED704",
    "require-capability": "ED705",
    "min-gpu-memory": "ED706",
    "require-smoke": "ED707",
}
GPU_KEYS = ("require-gpu", "min-gpus", "require-capability", "min-gpu-memory", "require-smoke")


def key_status(
    expect: Expectations, findings: tuple[Finding, ...], ignored: tuple[str, ...] = ()
) -> dict[str, str]:
    """ "met", "not met" or "ignored" for each stated key."""
    codes = {f.code for f in findings}
    status = {}
    for key, _ in expect.items():
        code = RULE_OF_KEY[key]
        if code in ignored:
            status[key] = "ignored"
        elif code in codes or (key in GPU_KEYS and "ED701" in codes):
            status[key] = "not met"
        else:
            status[key] = "met"
    return status


def area_verdict(
    expect: Expectations, findings: tuple[Finding, ...], ignored: tuple[str, ...] = ()
) -> AreaVerdict:
    status = key_status(expect, findings, ignored)
    unmet = [k for k, s in status.items() if s == "not met"]
    worst = max((f.severity for f in findings if f.area == AREA), default=Severity.OK)
    shown = ", ".join(f"{k} {'true' if v is True else v}" for k, v in expect.items())
    if unmet:
        verdict = f"{len(unmet)} of {len(status)} not met ({', '.join(unmet)})"
    else:
        verdict = f"all {len(status)} met: {shown}"
    return AreaVerdict(AREA, AREA_TITLE, worst, verdict)
