"""Shared by the fixture tests and tests/regen_golden.py: fixtures -> reports -> golden text."""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envdoctor.engine import judge, registry_names
from envdoctor.model.findings import Report
from envdoctor.render.console import make_console, render_console
from envdoctor.render.json_report import report_to_data
from envdoctor.settings import Settings, resolve
from envdoctor.snapshot import load

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
GOLDEN = ROOT / "tests" / "golden"

# Fixtures whose whole console report is kept as golden text (plain, no colour, fixed width).
CONSOLE_GOLDEN = (
    "linux-driver470-cu124-too-old",
    "win11-rtx4070-pypi-cpu-torch",
    "linux-a100-healthy",
    "linux-rtx5090-cu124-no-sm120",
    "linux-vgpu-a800-smoke-hang",
    "win11-torch291-vc-redist-1436-winerror-1114",  # one root cause, its consequences folded under it
)

# Fixtures whose `envdoctor report` Markdown (the bug report) is kept as golden text.
BUG_REPORT_GOLDEN = ("linux-torch221-numpy2-array-api-not-found",)


def fixture_names() -> list[str]:
    return sorted(p.stem for p in FIXTURES.glob("*.json"))


def fixture_settings(name: str) -> Settings:
    """A fixture's project config, fixtures/NAME.envdoctor.toml, as `check --config` reads it."""
    config = FIXTURES / f"{name}.envdoctor.toml"
    if not config.exists():
        return Settings()
    return resolve({}, cwd=str(FIXTURES), names=registry_names(), config=str(config))


def fixture_check_args(name: str) -> list[str]:
    """`check` options that diagnose fixture `name` as fixture_report does: --from, and --config."""
    config = FIXTURES / f"{name}.envdoctor.toml"
    return ["--from", str(FIXTURES / f"{name}.json"), *(["--config", str(config)] if config.exists() else [])]


@functools.cache
def fixture_report(name: str) -> Report:
    """The report of fixture `name` (reports are immutable; each is made once per run)."""
    snap = load(str(FIXTURES / f"{name}.json"))
    return judge(
        snap.platform, snap.interpreter, snap.probes, fixture_settings(name), source=f"fixtures/{name}.json"
    )


def findings_summary(report: Report) -> list[str]:
    """ "ED101 error" per finding, in report order: what the golden findings files hold."""
    return [f"{f.code} {f.severity.value}" for f in report.findings]


def stable_json(report: Report) -> str:
    return _dump(report_to_data(report))


# Console text already rendered, by (id(report), verbose); the report is kept beside its text so
# that a later report given the same id() cannot be answered another one's text. Reports are
# immutable and rendering at a fixed width is pure, and the fixture tests render the same report
# several times (its golden files, its rule goldens, the reassembled report, verbose checks).
_CONSOLE_TEXT: dict[tuple[int, bool], tuple[Report, str]] = {}


def console_text(report: Report, verbose: bool = False) -> str:
    known = _CONSOLE_TEXT.get((id(report), verbose))
    if known is not None and known[0] is report:
        return known[1]
    buffer = io.StringIO()
    render_console(report, make_console(buffer, width=100, no_color=True, plain=True), verbose)
    text = buffer.getvalue()
    _CONSOLE_TEXT[(id(report), verbose)] = (report, text)
    return text


# -- goldens ------------------------------------------------------------------------------------
#
# A rule's words live in one file, tests/golden/rules/EDxxx.json: its findings in every fixture that
# triggers it, as the JSON report holds them and as the console prints them. The per-fixture goldens
# hold the rest: NAME.findings.json (codes and severities, in order), NAME.report.json (the whole
# JSON report with each finding cut down to a reference) and, for some fixtures, NAME.console.txt
# (the console report with each finding's block cut down to one reference line). Rewording a rule
# touches its own golden file only; reassemble() puts the full reports back together.

RULE_GOLDEN = GOLDEN / "rules"


def _dump(data: object, ascii_only: bool = True) -> str:
    """Report files keep the escapes they always had; rule files show the text as users read it."""
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=ascii_only) + "\n"


def rule_reference(code: str) -> str:
    return f"rules/{code}.json"


def _reference(finding: dict[str, Any]) -> dict[str, Any]:
    """What NAME.report.json keeps of a finding: where it stands, not what it says."""
    return {
        "code": finding["code"],
        "severity": finding["severity"],
        "area": finding["area"],
        "text": rule_reference(finding["code"]),
    }


def console_blocks(report: Report) -> tuple[list[str], list[list[str]]]:
    """The console report split into its frame (with one empty slot per finding) and each
    finding's own lines, in report order. A finding folded under its root cause has no block of
    its own: its lines stand in the root's block."""
    lines = console_text(report).splitlines()
    if not report.findings:
        return lines, []
    heading = lines.index("Findings")
    frame = lines[: heading + 1]
    blocks: list[list[str]] = []
    at = heading + 1
    for finding in report.findings:
        if finding.folded_under is not None:
            blocks.append([])  # printed inside its root cause's block, which holds its lines
            continue
        end = lines.index("", at)
        block = lines[at:end]
        assert block and f" {finding.code} " in block[0], f"console block {block[:1]} is not {finding.code}"
        blocks.append(block)
        frame += [f" {finding.code} {finding.severity.value} -> {rule_reference(finding.code)}", ""]
        at = end + 1
    return frame + lines[at:], blocks


def _structure_console(report: Report) -> str:
    frame, _ = console_blocks(report)
    return "\n".join(frame) + "\n"


def golden_files(name: str) -> dict[Path, str]:
    """The golden files of fixture `name` and the text each must hold (rule goldens: rule_goldens)."""
    report = fixture_report(name)
    data = report_to_data(report)
    data["findings"] = [_reference(f) for f in data["findings"]]
    files = {
        GOLDEN / f"{name}.findings.json": json.dumps(findings_summary(report), indent=1) + "\n",
        GOLDEN / f"{name}.report.json": _dump(data),
    }
    if name in CONSOLE_GOLDEN:
        files[GOLDEN / f"{name}.console.txt"] = _structure_console(report)
    if name in BUG_REPORT_GOLDEN:
        from envdoctor.bug_report import render_report

        snap = load(str(FIXTURES / f"{name}.json"))
        files[GOLDEN / f"{name}.bugreport.md"] = render_report(snap, "markdown", {}, f"fixtures/{name}.json")
    return files


def rule_goldens(names: Sequence[str] | None = None) -> dict[Path, str]:
    """rules/EDxxx.json for every rule some fixture triggers: fixture name -> that rule's findings
    there, each as the JSON report holds it and as the console prints it."""
    by_code: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for name in fixture_names() if names is None else names:
        report = fixture_report(name)
        _, blocks = console_blocks(report)
        for finding, block in zip(report_to_data(report)["findings"], blocks):
            entry = {"finding": finding, "console": block}
            by_code.setdefault(finding["code"], {}).setdefault(name, []).append(entry)
    return {
        RULE_GOLDEN / f"{code}.json": _dump(found, ascii_only=False)
        for code, found in sorted(by_code.items())
    }


@functools.cache
def all_rule_goldens() -> dict[Path, str]:
    """rule_goldens() over every fixture, made once per run and only when a test first asks (not at
    collection: each pytest-xdist worker collects every test module)."""
    return rule_goldens()


def reassemble(name: str) -> tuple[str, str | None]:
    """Fixture `name`'s full JSON report and console text (None without a console golden), put back
    together from the golden files alone: what the goldens say the reports are."""
    data = json.loads((GOLDEN / f"{name}.report.json").read_text(encoding="utf-8"))
    taken: dict[str, int] = {}
    findings, blocks = [], []
    for reference in data["findings"]:
        code = reference["code"]
        rule = json.loads((GOLDEN / reference["text"]).read_text(encoding="utf-8"))
        entry = rule[name][taken.get(code, 0)]
        taken[code] = taken.get(code, 0) + 1
        findings.append(entry["finding"])
        blocks.append(entry["console"])
    data["findings"] = findings
    console_path = GOLDEN / f"{name}.console.txt"
    if not console_path.exists():
        return _dump(data), None
    lines, out = console_path.read_text(encoding="utf-8").splitlines(), []
    slots = iter([block for block in blocks if block])  # folded findings print inside their root
    for line in lines:
        if line.endswith(".json") and " -> rules/" in line:
            out += next(slots)
        else:
            out.append(line)
    return _dump(data), "\n".join(out) + "\n"
