"""Which interpreter is examined, and how the engine survives probes that fail, hang or misbehave."""

from __future__ import annotations

import threading
import time

import pytest

from envdoctor.engine import diagnose, evaluate, run_probes
from envdoctor.host.base import ChildOutcome
from envdoctor.host.fake import FakeHost
from envdoctor.model.findings import Interpreter, PlatformInfo, ProbeStatus, Severity
from envdoctor.probes.base import NotApplicable, ProbeContext, ProbeSpec
from envdoctor.rules.base import Hit, Rule, RuleContext, RuleDoc
from envdoctor.target import TargetError, choose_interpreter, resolve_target
from tests.support import context

PY_RECORD = {
    "record": "python",
    "executable": "/env/bin/python",
    "version": "3.12.3",
    "implementation": "CPython",
    "bits": 64,
    "prefix": "/env",
    "is_venv": True,
    "is_conda": False,
}


def test_interpreter_order_explicit_then_venv_then_conda_then_own() -> None:
    host = FakeHost(
        environ={"VIRTUAL_ENV": "/v", "CONDA_PREFIX": "/c"},
        files={"/v/bin/python": "", "/c/bin/python": ""},
    )
    assert choose_interpreter(host, "/x/python").reason == "given with --python"
    assert choose_interpreter(host, None) == Interpreter(
        "/v/bin/python", "the active environment ($VIRTUAL_ENV)"
    )
    host.environ.pop("VIRTUAL_ENV")
    assert choose_interpreter(host, None).path == "/c/bin/python"
    host.environ.pop("CONDA_PREFIX")
    assert choose_interpreter(host, None) == Interpreter(host.python, "the interpreter envdoctor runs in")


def test_windows_venv_layout() -> None:
    host = FakeHost(
        platform_info=PlatformInfo("Windows", "11", "10", "AMD64"),
        environ={"CONDA_PREFIX": "C:\\conda\\envs\\ml"},
        files={"C:\\conda\\envs\\ml\\python.exe": ""},
    )
    assert choose_interpreter(host, None).path == "C:\\conda\\envs\\ml\\python.exe"


def test_resolve_target_reads_python_facts() -> None:
    host = FakeHost(files={"/env/bin/python": ""}, children={"python_info.py": ChildOutcome((PY_RECORD,), 0)})
    target = resolve_target(host, "/env/bin/python")
    assert target.info.version == "3.12.3" and target.info.minor == "3.12"


@pytest.mark.parametrize(
    ("host", "message"),
    [
        (FakeHost(), "no such file"),
        (FakeHost(dirs={"/env/bin/python": ()}), "a folder without a Python interpreter"),
        (
            FakeHost(files={"/env/bin/python": ""}, children={"python_info.py": ChildOutcome((), 0)}),
            "not a runnable Python interpreter (exited with code 0",
        ),
        (
            FakeHost(
                files={"/env/bin/python": ""},
                children={"python_info.py": ChildOutcome((), None, start_error="permission denied")},
            ),
            "permission denied",
        ),
        (
            FakeHost(
                files={"/env/bin/python": ""},
                children={"python_info.py": ChildOutcome(({"record": "python", "version": 3},), 0)},
            ),
            "unexpected answer",
        ),
    ],
)
def test_bad_interpreters_are_one_line_errors(host: FakeHost, message: str) -> None:
    with pytest.raises(TargetError, match=message.replace("(", r"\(")) as caught:
        resolve_target(host, "/env/bin/python")
    assert "\n" not in str(caught.value)


def _spec(name: str, collect, timeout: float = 5.0, slow: bool = False) -> ProbeSpec:  # type: ignore[no-untyped-def]
    return ProbeSpec(
        name=name, title=name, facts_type=str, collect=collect, describe=str, timeout=timeout, slow=slow
    )


def test_failing_hanging_and_inapplicable_probes_do_not_stop_the_others() -> None:
    release = threading.Event()

    def boom(ctx: ProbeContext) -> str:
        raise RuntimeError("kaput")

    def hang(ctx: ProbeContext) -> str:
        release.wait(30)
        return "late"

    def skip(ctx: ProbeContext) -> str:
        raise NotApplicable("not here")

    probes = [
        _spec("good", lambda ctx: "fine"),
        _spec("boom", boom),
        _spec("hang", hang, timeout=0.3, slow=True),
        _spec("skip", skip),
    ]
    started = time.perf_counter()
    results = {r.probe: r for r in run_probes(context(FakeHost()), probes)}
    release.set()
    assert time.perf_counter() - started < 5
    assert results["good"].status is ProbeStatus.OK and results["good"].facts == "fine"
    assert results["boom"].status is ProbeStatus.FAILED and "RuntimeError: kaput" in (
        results["boom"].error or ""
    )
    assert results["hang"].status is ProbeStatus.TIMEOUT
    assert results["skip"].status is ProbeStatus.NOT_APPLICABLE and results["skip"].error == "not here"


def _rule(check, needs=()) -> Rule:  # type: ignore[no-untyped-def]
    return Rule("ED998", "test-rule", Severity.ERROR, "torch", "s", needs, check, RuleDoc("w", "y", "f", "e"))


def test_a_crashing_rule_becomes_a_warning_finding() -> None:
    def broken(ctx: RuleContext):  # type: ignore[no-untyped-def]
        raise KeyError("oops")

    ctx = RuleContext.build(PlatformInfo("Linux", "6", "1", "x86_64"), Interpreter("/p", "r"), ())
    findings = evaluate(ctx, [_rule(broken)])
    assert len(findings) == 1 and findings[0].severity is Severity.WARNING
    assert "could not evaluate ED998" in findings[0].title


def test_rules_whose_facts_are_missing_are_skipped() -> None:
    calls: list[str] = []

    def check(ctx: RuleContext):  # type: ignore[no-untyped-def]
        calls.append("ran")
        yield Hit("t", "d")

    ctx = RuleContext.build(PlatformInfo("Linux", "6", "1", "x86_64"), Interpreter("/p", "r"), ())
    assert evaluate(ctx, [_rule(check, needs=(int,))]) == ()
    assert calls == []
    assert [f.code for f in evaluate(ctx, [_rule(check)])] == ["ED998"]


def test_exit_codes_and_strict() -> None:
    plat, interp = PlatformInfo("Linux", "6", "1", "x86_64"), Interpreter("/p", "r")

    def warn(ctx: RuleContext):  # type: ignore[no-untyped-def]
        yield Hit("t", "d")

    rule = Rule("ED997", "w", Severity.WARNING, "torch", "s", (), warn, RuleDoc("w", "y", "f", "e"))
    assert diagnose(plat, interp, (), rules=[rule]).exit_code == 0
    assert diagnose(plat, interp, (), rules=[rule], strict=True).exit_code == 1
    assert diagnose(plat, interp, (), rules=[]).status == "ok"


def test_severity_order_is_by_rank_not_by_name() -> None:
    assert Severity.OK < Severity.INFO < Severity.WARNING < Severity.ERROR
    assert max([Severity.INFO, Severity.ERROR, Severity.WARNING]) is Severity.ERROR
    assert Severity.ERROR >= Severity.WARNING and not Severity.INFO > Severity.WARNING


def test_an_error_beside_a_note_fails_the_run() -> None:
    plat, interp = PlatformInfo("Linux", "6", "1", "x86_64"), Interpreter("/p", "r")

    def hit(ctx: RuleContext):  # type: ignore[no-untyped-def]
        yield Hit("t", "d")

    note = Rule("ED996", "n", Severity.INFO, "torch", "s", (), hit, RuleDoc("w", "y", "f", "e"))
    error = Rule("ED995", "e", Severity.ERROR, "torch", "s", (), hit, RuleDoc("w", "y", "f", "e"))
    report = diagnose(plat, interp, (), rules=[note, error])
    assert report.worst is Severity.ERROR and report.exit_code == 1 and report.status == "error"
