"""Every fixture in every format: valid output that carries the same findings as the JSON report
(codes, severities, fix commands), and GitHub's escaping."""

from __future__ import annotations

import dataclasses
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from envdoctor.cli.options import ReportFormat, render
from envdoctor.model.findings import Finding, Fix, Severity
from envdoctor.render.github import escape_data, escape_property
from envdoctor.render.json_report import report_to_data
from envdoctor.rules import RULES
from tests.cli_support import run_cli
from tests.fixture_support import FIXTURES, fixture_names, fixture_report

NAMES = fixture_names()


def expected(name: str) -> tuple[dict[str, Any], list[tuple[str, str, list[str]]]]:
    """The JSON report and, per finding, (code, severity, fix commands): what every format must carry."""
    data = json.loads(render(fixture_report(name), ReportFormat.json))
    findings = [
        (f["code"], f["severity"], [c for fix in f["fixes"] for c in fix["commands"]])
        for f in data["findings"]
        if "folded_under" not in f  # shown under their cause: see folded()
    ]
    return data, findings


def folded(data: dict[str, Any]) -> list[tuple[str, str]]:
    """(code, the code it is folded under) of each finding shown under its root cause."""
    return [(f["code"], f["folded_under"]) for f in data["findings"] if "folded_under" in f]


# --- GitHub workflow commands ---------------------------------------------------------------------

_COMMAND = re.compile(r"^::(?P<command>error|warning|notice)(?: (?P<props>[^:]*))?::(?P<message>.*)$")


def unescape(value: str, prop: bool = False) -> str:
    if prop:
        value = value.replace("%3A", ":").replace("%2C", ",")
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def parse_github(text: str) -> list[tuple[str, dict[str, str], str]]:
    parsed = []
    for line in text.splitlines():
        if not line.startswith("::"):
            continue
        match = _COMMAND.match(line)
        assert match, f"not a workflow command: {line!r}"
        props = {}
        for pair in (match.group("props") or "").split(","):
            key, _, value = pair.partition("=")
            props[key] = unescape(value, prop=True)
        parsed.append((match.group("command"), props, unescape(match.group("message"))))
    return parsed


@pytest.mark.parametrize("name", NAMES)
def test_github_agrees_with_json(name: str) -> None:
    data, findings = expected(name)
    text = render(fixture_report(name), ReportFormat.github)
    commands = parse_github(text)
    severity = {"error": "error", "warning": "warning", "notice": "info"}
    assert len(commands) == len(findings)
    primary = [f for f in data["findings"] if "folded_under" not in f]
    for (command, props, message), (code, level, fix_commands), finding in zip(commands, findings, primary):
        assert props["title"] == f"{code} {finding['name']}"
        assert severity[command] == level
        assert message.splitlines()[0] == finding["title"]
        for fix_command in fix_commands:
            assert f"  $ {fix_command}" in message.splitlines()
        for code_, under in folded(data):
            if under == code:
                assert any(line.startswith(f"  {code_} ") for line in message.splitlines())
    assert text.splitlines()[-1].startswith("envdoctor: ")
    assert text.splitlines()[-1].endswith(f"exit {data['exit_code']}")


def test_github_escaping_follows_the_toolkit() -> None:
    assert escape_data("100% done\r\nnext: a,b") == "100%25 done%0D%0Anext: a,b"
    assert escape_property("ED101 a:b,c%\n") == "ED101 a%3Ab%2Cc%25%0A"
    assert unescape(escape_data("%0A literal")) == "%0A literal"  # % first, so nothing decodes twice


def test_machine_text_cannot_start_a_workflow_command() -> None:
    report = fixture_report("linux-rtx4090-driver535-cu121-healthy")
    evil = Finding(
        code="ED999",
        name="x",
        severity=Severity.WARNING,
        title="50% of: things, here",
        detail="first\n::add-mask::secret\r\n::set-output name=a::b",
        area="torch",
        fixes=(Fix("f", ("echo '%PATH%'",)),),
    )
    text = render(dataclasses.replace(report, findings=(evil,)), ReportFormat.github)
    lines = text.splitlines()
    assert len(lines) == 2  # one annotation, one summary: no line of the detail starts a command
    ((command, props, message),) = parse_github(text)
    assert command == "warning"
    assert props == {"title": "ED999 x"}
    expected_lines = ["50% of: things, here", "first", "::add-mask::secret", "::set-output name=a::b"]
    assert message.splitlines() == [*expected_lines, "Fix: f", "  $ echo '%PATH%'"]


# --- JUnit ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("strict", [False, True])
def test_junit_is_valid_and_agrees_with_json(name: str, strict: bool) -> None:
    report = dataclasses.replace(fixture_report(name), strict=strict)
    data = report_to_data(report)
    root = ET.fromstring(render(report, ReportFormat.junit))
    assert root.tag == "testsuites"
    probes, rules = root.findall("testsuite")
    assert [c.get("name").split(":")[0] for c in probes.findall("testcase")] == [
        p["name"] for p in data["probes"]
    ]
    failing = {"error", "warning"} if strict else {"error"}
    cases = rules.findall("testcase")
    finding_cases = {c.get("name"): c for c in cases if ": " in c.get("name")}  # in rule order
    assert len(finding_cases) == len(data["findings"])
    for finding in data["findings"]:
        case = finding_cases[f"{finding['code']} {finding['name']}: {finding['title']}"]
        failure = case.find("failure")
        body = failure.text if failure is not None else case.find("system-out").text
        assert (failure is not None) == (finding["severity"] in failing)
        if failure is not None:
            assert failure.get("type") == finding["severity"]
        for fix in finding["fixes"]:
            for command in fix["commands"]:
                assert f"$ {command}" in body
    # every rule appears: with its findings, or once as passed/skipped
    named = {c.get("name").split(":")[0].split(" ")[0] for c in cases}
    assert named == {r.code for r in RULES}
    total = sum(int(s.get("tests")) for s in root.findall("testsuite"))
    assert int(root.get("tests")) == total == len(cases) + len(probes.findall("testcase"))
    assert int(root.get("failures")) == sum(1 for f in data["findings"] if f["severity"] in failing)


def test_junit_skips_ignored_and_unchecked_rules_and_errors_failed_probes() -> None:
    from envdoctor.engine import judge
    from envdoctor.settings import Settings
    from envdoctor.snapshot import load

    snap = load(str(FIXTURES / "linux-nvml-probe-timeout.json"))
    report = judge(snap.platform, snap.interpreter, snap.probes, Settings(ignore=("ED104",)))
    root = ET.fromstring(render(report, ReportFormat.junit))
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["ED104 no-nvidia-gpu"].find("skipped").get("message") == "ignored (--ignore)"
    assert "no expectation was stated" in cases["ED701 gpu-requirement-unmet"].find("skipped").get("message")
    assert cases["nvml: NVIDIA driver"].find("error").get("type") == "timeout"
    assert (
        cases["ED101 driver-too-old-for-torch-cuda"]
        .find("skipped")
        .get("message")
        .endswith("the facts it needs were not collected")
    )


def test_junit_survives_control_characters() -> None:
    report = fixture_report("linux-rtx4090-driver535-cu121-healthy")
    noisy = Finding("ED999", "x", Severity.ERROR, "red \x1b[31mtext\x1b[0m", "bell\x07 nul\x00 ok", "torch")
    root = ET.fromstring(render(dataclasses.replace(report, findings=(noisy,)), ReportFormat.junit))
    failure = next(c for c in root.iter("testcase") if c.get("name").startswith("ED999")).find("failure")
    assert failure.get("message") == "red [31mtext[0m"
    assert "bell nul ok" in failure.text


# --- Markdown and console ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_markdown_agrees_with_json(name: str) -> None:
    data, findings = expected(name)
    text = render(fixture_report(name), ReportFormat.markdown)
    headings = re.findall(r"^#### \S+ (ED\d{3}) `([a-z0-9-]+)` \((\w+)\)$", text, flags=re.M)
    assert [(code, level) for code, _, level in headings] == [(c, s) for c, s, _ in findings]
    blocks = re.findall(r"^```bash\n(.*?)\n```$", text, flags=re.M | re.S)
    assert [c for block in blocks for c in block.splitlines()] == [c for _, _, cmds in findings for c in cmds]
    listed = re.findall(r"^- \S+ (ED\d{3}) `", text, flags=re.M)
    assert sorted(listed) == sorted(code for code, _ in folded(data))
    assert text.startswith("## envdoctor: ")
    assert f"exit {data['exit_code']}" in text.splitlines()[0]
    for area in data["areas"]:
        assert f"| {area['title']} |" in text
    for key in data.get("expectations", {}):
        assert f"| `{key}` |" in text


@pytest.mark.parametrize("name", NAMES)
def test_console_carries_the_same_findings(name: str) -> None:
    data, findings = expected(name)
    text = render(fixture_report(name), ReportFormat.console)
    assert re.findall(r"^ \S (ED\d{3}) ", text, flags=re.M) == [c for c, _, _ in findings]
    consequences = re.findall(r"^ {7}\S (ED\d{3}) ", text, flags=re.M)
    assert sorted(consequences) == sorted(code for code, _ in folded(data))
    for _, _, commands in findings:
        for command in commands:
            assert f"$ {command}" in text
    assert "\x1b[" not in text


# --- through the command line -------------------------------------------------------------------------


def test_github_format_appends_the_step_summary(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    fixture = str(FIXTURES / "ci-runner-no-gpu-project-requires-gpu.json")
    result = run_cli(capsys, monkeypatch, "check", "--from", fixture, "--require-gpu", "--format", "github")
    assert result.code == 1
    assert result.out.startswith("::error title=ED701 gpu-requirement-unmet::")
    written = summary.read_text(encoding="utf-8")
    assert written.startswith("earlier step\n## envdoctor: problems found")
    assert "| `require-gpu` | `true` | ❌ not met | ED701 |" in written


def test_an_unwritable_step_summary_is_a_warning_only(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "missing" / "summary.md"))
    fixture = str(FIXTURES / "linux-rtx4090-driver535-cu121-healthy.json")
    result = run_cli(capsys, monkeypatch, "check", "--from", fixture, "-f", "github")
    assert result.code == 0
    assert result.err.startswith("envdoctor: warning: cannot append to $GITHUB_STEP_SUMMARY")


@pytest.mark.parametrize("fmt", ["json", "markdown", "github", "junit", "console"])
def test_output_file_for_any_format(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fmt: str
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    target = tmp_path / f"report.{fmt}"
    fixture = str(FIXTURES / "linux-driver470-cu124-too-old.json")
    result = run_cli(capsys, monkeypatch, "check", "--from", fixture, "-f", fmt, "-o", str(target))
    assert result.code == 1
    assert result.out == ""
    assert "ED101" in target.read_text(encoding="utf-8")


def test_ci_mode_prints_no_colour_codes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fixture = str(FIXTURES / "linux-driver470-cu124-too-old.json")
    monkeypatch.setenv("FORCE_COLOR", "1")  # what a colour-loving CI runner might export
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("CI", "false")
    coloured = run_cli(capsys, monkeypatch, "check", "--from", fixture)
    monkeypatch.setenv("CI", "true")
    plain = run_cli(capsys, monkeypatch, "check", "--from", fixture)
    assert "\x1b[" in coloured.out
    assert "\x1b[" not in plain.out
    assert "ED101" in plain.out
    assert plain.code == coloured.code == 1
