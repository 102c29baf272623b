"""One root cause, one finding: the engine folds consequences under their cause (Rule.consequence_of)
and never shows the same command twice; every renderer shows the folded findings under their cause."""

from __future__ import annotations

import json
from collections.abc import Iterator

from envdoctor.engine import evaluate, fold, without_repeated_commands
from envdoctor.model.findings import Finding, Fix, Interpreter, PlatformInfo, Severity
from envdoctor.render.console import make_console, render_console
from envdoctor.render.github import render_github
from envdoctor.render.json_report import finding_to_data, render_json
from envdoctor.render.markdown import render_markdown
from envdoctor.rules import RULES, RULES_BY_CODE
from envdoctor.rules.base import Hit, Rule, RuleContext, RuleDoc, rule
from tests.fixture_support import console_text, fixture_report

LINUX = PlatformInfo("Linux", "6.8", "1", "x86_64")
DOC = RuleDoc("what.", "why.", "fix.", "example.")


def _rule(
    code: str, severity: Severity, consequence_of: tuple[str, ...] = (), fixes: tuple[Fix, ...] = ()
) -> Rule:
    def check(ctx: RuleContext) -> Iterator[Hit]:
        yield Hit(title=f"{code} happened", detail="d", fixes=fixes)

    check.__module__ = "envdoctor.rules.torch.fake"
    return rule(
        code=code,
        name=f"rule-{code.lower()}",
        severity=severity,
        summary="s",
        needs=(),
        doc=DOC,
        consequence_of=consequence_of,
    )(check)


def _run(*rules: Rule) -> tuple[Finding, ...]:
    ctx = RuleContext.build(LINUX, Interpreter("/env/bin/python", "r"), ())
    return evaluate(ctx, rules)


def test_a_chain_folds_under_its_root_and_loses_its_fixes() -> None:
    install = Fix("install the runtime", ("install-runtime",))
    reinstall = Fix("reinstall torch", ("pip install torch",))
    found = _run(
        _rule("ED902", Severity.ERROR, fixes=(install,)),
        _rule("ED903", Severity.ERROR, ("ED902",), fixes=(reinstall,)),
        _rule("ED904", Severity.ERROR, ("ED903",), fixes=(reinstall,)),
    )
    by_code = {f.code: f for f in found}
    assert by_code["ED902"].folded_under is None and by_code["ED902"].fixes == (install,)
    # ED904 is a consequence of ED903, itself one of ED902: both go under the root.
    assert by_code["ED903"].folded_under == "ED902" and by_code["ED903"].fixes == ()
    assert by_code["ED904"].folded_under == "ED902" and by_code["ED904"].fixes == ()


def test_a_cause_that_is_absent_folds_nothing() -> None:
    found = _run(_rule("ED903", Severity.ERROR, ("ED902",), fixes=(Fix("x", ("cmd",)),)))
    assert found[0].folded_under is None and found[0].fixes[0].commands == ("cmd",)


def test_the_first_cause_present_wins_and_cycles_end() -> None:
    findings = tuple(
        Finding(code, code.lower(), Severity.ERROR, code, "d", "torch")
        for code in ("ED901", "ED902", "ED903")
    )
    rules = [
        _rule("ED901", Severity.ERROR, ("ED902",)),
        _rule("ED902", Severity.ERROR, ("ED901",)),  # a cycle: must not loop
        _rule("ED903", Severity.ERROR, ("ED999", "ED902", "ED901")),
    ]
    folded = {f.code: f.folded_under for f in fold(findings, rules)}
    # Neither ED901 nor ED902 can be the root of the other: nothing is hidden.
    assert folded == {"ED901": None, "ED902": None, "ED903": None}
    acyclic = [_rule("ED901", Severity.ERROR), _rule("ED903", Severity.ERROR, ("ED999", "ED902", "ED901"))]
    assert {f.code: f.folded_under for f in fold(findings, acyclic)}["ED903"] == "ED902"  # first present


def test_a_repeated_command_is_shown_once_and_the_fix_says_where() -> None:
    same = ("winget install redist",)
    findings = (
        Finding("ED601", "a", Severity.ERROR, "a", "d", "windows", fixes=(Fix("install", same),)),
        Finding(
            "ED604",
            "b",
            Severity.ERROR,
            "b",
            "d",
            "windows",
            fixes=(Fix("install it", same), Fix("other", ("x", "y"))),
        ),
        Finding("ED605", "c", Severity.WARNING, "c", "d", "windows", fixes=(Fix("two", ("x", "z")),)),
    )
    cleaned = without_repeated_commands(findings)
    assert cleaned[0] == findings[0]
    first, second = cleaned[1].fixes
    assert first.commands == () and first.summary == "install it (its command is shown under ED601 above)"
    assert second == findings[1].fixes[1]
    (partial,) = cleaned[2].fixes
    assert partial.commands == ("z",) and partial.summary == "two (1 more command is shown under ED604 above)"
    every = [c for f in cleaned for fix in f.fixes for c in fix.commands]
    assert len(every) == len(set(every))


def test_json_marks_only_folded_findings() -> None:
    plain = Finding("ED101", "n", Severity.ERROR, "t", "d", "nvml")
    assert "folded_under" not in finding_to_data(plain)
    assert (
        finding_to_data(Finding("ED101", "n", Severity.ERROR, "t", "d", "nvml", folded_under="ED305"))[
            "folded_under"
        ]
        == "ED305"
    )


def test_the_recorded_windows_case_offers_one_cure() -> None:
    """The case of the issue: torch 2.9.1 with msvcp140 14.36 printed "reinstall torch 2.13.0" beside
    the finding that named the runtime; now the cause carries the fixes, the rest is folded under it."""
    report = fixture_report("win11-torch291-vc-redist-1436-winerror-1114")
    assert [(f.code, f.folded_under) for f in report.findings] == [
        ("ED002", "ED602"),
        ("ED602", None),
        ("ED604", "ED602"),
    ]
    commands = [c for f in report.findings for fix in f.fixes for c in fix.commands]
    assert len(commands) == len(set(commands))
    assert not any("torch==2.13.0" in c for c in commands)  # no reinstall of the same breakage
    assert report.exit_code == 1 and [f.code for f in report.primary] == ["ED602"]
    text = console_text(report)
    assert "Caused by this (fixed by the fix above):" in text
    assert "(1 error, 2 consequences folded in)" in text
    markdown = render_markdown(report)
    assert "<details><summary>Caused by this (2 findings, fixed by the fix above)</summary>" in markdown
    assert markdown.count("#### ") == 1
    github = render_github(report)
    assert github.count("::error") == 1 and "ED604 torch's c10.dll does not load" in github.replace(
        "%0A", "\n"
    )
    data = json.loads(render_json(report))
    assert [f.get("folded_under") for f in data["findings"]] == ["ED602", None, "ED602"]


def test_verbose_console_shows_a_consequence_detail() -> None:
    import io

    report = fixture_report("win11-torch240-fbgemm-libomp140-winerror-126")
    buffer = io.StringIO()
    render_console(report, make_console(buffer, width=200, no_color=True, plain=True), verbose=True)
    assert "Loading torch\\lib the way import torch does" in buffer.getvalue()


def test_declared_causes_exist_are_not_milder_and_form_no_cycle() -> None:
    for rule_ in RULES:
        for cause in rule_.consequence_of:
            assert cause in RULES_BY_CODE, f"{rule_.code} names unknown cause {cause}"
            assert cause != rule_.code
            # The finding shown must not be milder than what it hides (the summary counts it).
            assert RULES_BY_CODE[cause].severity >= rule_.severity, (rule_.code, cause)

    def reaches(code: str, target: str, seen: frozenset[str]) -> bool:
        return any(
            c == target or (c not in seen and reaches(c, target, seen | {c}))
            for c in RULES_BY_CODE[code].consequence_of
        )

    for rule_ in RULES:
        assert not reaches(rule_.code, rule_.code, frozenset()), f"{rule_.code} is its own cause"
