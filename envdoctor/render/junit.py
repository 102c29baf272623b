"""JUnit XML, so GitLab and Jenkins show the check as a test report.

Two suites: one test case per probe (failed or timed out: an error; not applicable: skipped), and
one per rule result: a failure per error finding (and per warning under --strict), a passed case
carrying the finding for other warnings and notes, a passed case for a rule that ran and found
nothing, a skipped case for a rule that was ignored or could not run. Findings come from the JSON
report's data; the XML is written by ElementTree, with the characters XML 1.0 forbids removed.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from envdoctor.model.findings import Report
from envdoctor.render.github import annotation_message
from envdoctor.render.json_report import report_to_data

SUITE = "envdoctor"
# Control characters (an ANSI colour escape in captured stderr, say) make XML unparsable.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def clean(value: object) -> str:
    return _NOT_XML.sub("", str(value))


def _case(suite: ET.Element, classname: str, name: str, seconds: float = 0.0) -> ET.Element:
    return ET.SubElement(
        suite, "testcase", classname=clean(classname), name=clean(name), time=f"{seconds:.3f}"
    )


def _child(case: ET.Element, tag: str, body: str | None = None, **attrs: str) -> None:
    element = ET.SubElement(case, tag, {k: clean(v) for k, v in attrs.items()})
    if body is not None:
        element.text = clean(body)


def _probes(root: ET.Element, data: dict[str, Any]) -> None:
    suite = ET.SubElement(root, "testsuite", name=f"{SUITE}.probes")
    verdicts = {a["area"]: a for a in data["areas"]}
    for probe in data["probes"]:
        area = verdicts.get(probe["name"])
        title = area["title"] if area else probe["name"]
        case = _case(suite, f"{SUITE}.probes", f"{probe['name']}: {title}", probe["seconds"])
        if probe["status"] in ("failed", "timeout"):
            _child(
                case,
                "error",
                probe["error"] or "",
                message=f"{probe['status']}: {probe['error']}",
                type=probe["status"],
            )
        elif probe["status"] == "not_applicable":
            _child(case, "skipped", message=f"not applicable: {probe['error']}")
        elif area is not None:
            _child(case, "system-out", area["verdict"])


def _rules(root: ET.Element, data: dict[str, Any], report: Report, rules: tuple[Any, ...]) -> None:
    suite = ET.SubElement(root, "testsuite", name=f"{SUITE}.rules")
    by_code: dict[str, list[dict[str, Any]]] = {}
    for finding in data["findings"]:
        by_code.setdefault(finding["code"], []).append(finding)
    fails = {"error"} | ({"warning"} if report.strict else set())
    for rule in rules:
        classname = f"{SUITE}.rules.{rule.area}"
        found = by_code.pop(rule.code, [])
        for finding in found:
            case = _case(suite, classname, f"{rule.code} {rule.name}: {finding['title']}")
            message = annotation_message(finding)
            if finding["severity"] in fails:
                _child(case, "failure", message, message=finding["title"], type=finding["severity"])
            else:
                _child(case, "system-out", f"[{finding['severity']}] {message}")
        if found:
            continue
        case = _case(suite, classname, f"{rule.code} {rule.name}")
        if rule.code in report.ignored:
            _child(case, "skipped", message="ignored (--ignore)")
        elif rule.code not in report.checked:
            why = (
                "no expectation was stated"
                if rule.area == "expectations"
                else "the facts it needs were not collected"
            )
            _child(case, "skipped", message=f"not checked: {why}")
    for code, findings in by_code.items():  # a rule unknown here (a snapshot from elsewhere)
        for finding in findings:
            case = _case(suite, f"{SUITE}.rules", f"{code} {finding['name']}: {finding['title']}")
            if finding["severity"] in fails:
                _child(
                    case,
                    "failure",
                    annotation_message(finding),
                    message=finding["title"],
                    type=finding["severity"],
                )


def _count(root: ET.Element) -> None:
    """tests/failures/errors/skipped/time on every suite and on the root, as JUnit readers expect."""
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    seconds = 0.0
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        counts = {
            "tests": len(cases),
            "failures": sum(1 for c in cases if c.find("failure") is not None),
            "errors": sum(1 for c in cases if c.find("error") is not None),
            "skipped": sum(1 for c in cases if c.find("skipped") is not None),
        }
        suite_seconds = sum(float(c.get("time", "0")) for c in cases)
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", f"{suite_seconds:.3f}")
        seconds += suite_seconds
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{seconds:.3f}")


def render_junit(report: Report) -> str:
    from envdoctor.rules import RULES

    data = report_to_data(report)
    root = ET.Element("testsuites", name=SUITE)
    _probes(root, data)
    _rules(root, data, report, RULES)
    _count(root)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
