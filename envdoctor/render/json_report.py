"""The JSON report, schema "envdoctor.report/1": additive changes only within a version."""

from __future__ import annotations

import json
from typing import Any

from envdoctor.model.findings import Finding, Report
from envdoctor.util.redact import redact
from envdoctor.util.serde import to_data

SCHEMA = "envdoctor.report/1"


def finding_to_data(finding: Finding) -> dict[str, Any]:
    data = _finding_fields(finding)
    # Additive: only a folded finding carries the key, so reports without folding keep their shape.
    if finding.folded_under is not None:
        data["folded_under"] = finding.folded_under
    if finding.support is not None:  # `envdoctor why`: the pasted text, the facts, or both
        data["support"] = finding.support.value
    return data


def _finding_fields(finding: Finding) -> dict[str, Any]:
    return {
        "code": finding.code,
        "name": finding.name,
        "severity": finding.severity.value,
        "area": finding.area,
        "title": finding.title,
        "detail": finding.detail,
        "evidence": list(finding.evidence),
        "fixes": [
            {"summary": fix.summary, "commands": list(fix.commands), "link": fix.link}
            for fix in finding.fixes
        ],
    }


def report_to_data(report: Report) -> dict[str, Any]:
    clean = redact(report)
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "envdoctor_version": clean.envdoctor_version,
        "source": clean.source,
        "interpreter": {"path": clean.interpreter.path, "reason": clean.interpreter.reason},
        "platform": to_data(clean.platform),
        "status": clean.status,
        "exit_code": clean.exit_code,
        "areas": [
            {"area": a.area, "title": a.title, "severity": a.severity.value, "verdict": a.verdict}
            for a in clean.areas
        ],
        "probes": [
            {
                "name": p.probe,
                "status": p.status.value,
                "seconds": round(p.seconds, 3),
                "error": p.error,
            }
            for p in clean.probes
        ],
        "facts": {p.probe: to_data(p.facts) for p in clean.probes if p.facts is not None},
        "findings": [finding_to_data(f) for f in clean.findings],
    }
    # Only when used, so reports of plain checks keep their exact shape.
    if clean.expectations is not None:
        data["expectations"] = expectations_to_data(clean)
    if clean.ignored:
        data["ignored"] = list(clean.ignored)
    if clean.explained is not None:  # `envdoctor why`
        data["why"] = to_data(clean.explained)
    if clean.plugins:  # installed plugin packages, and what each added
        data["plugins"] = [to_data(p) for p in clean.plugins]
    return data


def expectations_to_data(report: Report) -> dict[str, Any]:
    """Each stated expectation: its value, the rule that judges it, and "met" / "not met" / "ignored"."""
    from envdoctor.rules.expectations.requirements import RULE_OF_KEY, key_status

    assert report.expectations is not None
    status = key_status(report.expectations, report.findings, report.ignored)
    return {
        key: {"value": value, "rule": RULE_OF_KEY[key], "status": status[key]}
        for key, value in report.expectations.items()
    }


def render_json(report: Report) -> str:
    return json.dumps(report_to_data(report), indent=2) + "\n"
