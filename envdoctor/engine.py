"""Runs the probes concurrently, each time-bounded, then the rules; builds the Report.

A probe that raises or outlives its timeout becomes a ProbeResult saying so; the others still
report. Slow probes (the torch child) start first so the rest hide behind them.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envdoctor import __version__
from envdoctor.model import (
    AreaVerdict,
    Finding,
    Interpreter,
    PlatformInfo,
    ProbeResult,
    ProbeStatus,
    Report,
    Severity,
)
from envdoctor.probes import PROBES, NotApplicable, ProbeContext, ProbeSpec

if TYPE_CHECKING:
    # Rules load while the probes run (see run_probes' while_waiting), not before they start.
    from envdoctor.model import Expectations
    from envdoctor.rules import Rule, RuleContext
    from envdoctor.settings import Names, Settings


@dataclass
class _Slot:
    result: ProbeResult | None = None


def _run_one(probe: ProbeSpec[Any], ctx: ProbeContext, slot: _Slot) -> None:
    started = time.perf_counter()
    try:
        facts = probe.collect(ctx)
        slot.result = ProbeResult(probe.name, ProbeStatus.OK, time.perf_counter() - started, facts)
    except NotApplicable as reason:
        slot.result = ProbeResult(
            probe.name, ProbeStatus.NOT_APPLICABLE, time.perf_counter() - started, error=str(reason)
        )
    except Exception as exc:  # a probe bug must not take the report down
        where = traceback.extract_tb(exc.__traceback__)[-1]
        slot.result = ProbeResult(
            probe.name,
            ProbeStatus.FAILED,
            time.perf_counter() - started,
            error=f"{type(exc).__name__}: {exc} (at {where.name}:{where.lineno})",
        )


def run_probes(
    ctx: ProbeContext,
    probes: Sequence[ProbeSpec[Any]] = PROBES,
    while_waiting: Callable[[], object] | None = None,
) -> tuple[ProbeResult, ...]:
    """Run every probe, each bounded by its timeout. `while_waiting` runs once all have started:
    work the caller needs anyway (importing the renderer) then hides behind the torch import."""
    started = time.perf_counter()
    slots: dict[str, _Slot] = {}
    threads: dict[str, threading.Thread] = {}
    for probe in sorted(probes, key=lambda p: not p.slow):
        slot = slots[probe.name] = _Slot()
        # Daemon threads: a probe stuck in native code cannot keep envdoctor from exiting.
        thread = threading.Thread(
            target=_run_one, args=(probe, ctx, slot), name=f"probe-{probe.name}", daemon=True
        )
        thread.start()
        threads[probe.name] = thread
    if while_waiting is not None:
        while_waiting()
    results = []
    for probe in probes:
        limit = min(probe.timeout, ctx.options.timeout)
        remaining = started + limit - time.perf_counter()
        threads[probe.name].join(max(0.0, remaining))
        result = slots[probe.name].result
        if result is None:
            result = ProbeResult(
                probe.name,
                ProbeStatus.TIMEOUT,
                time.perf_counter() - started,
                error=f"no answer within {limit:.0f} s",
            )
        results.append(result)
    return tuple(results)


def evaluate(ctx: RuleContext, rules: Sequence[Rule] | None = None) -> tuple[Finding, ...]:
    if rules is None:
        from envdoctor.rules import RULES

        rules = RULES
    findings: list[Finding] = []
    for rule in rules:
        if not ctx.can_run(rule):
            continue
        try:
            hits = list(rule.check(ctx))
        except Exception as exc:  # a rule bug is reported, never raised
            findings.append(
                Finding(
                    code=rule.code,
                    name=rule.name,
                    severity=Severity.WARNING,
                    title=f"envdoctor could not evaluate {rule.code} ({rule.name})",
                    detail=f"{type(exc).__name__}: {exc}",
                    area=rule.area,
                )
            )
            continue
        findings.extend(
            Finding(
                code=rule.code,
                name=rule.name,
                severity=rule.severity,
                title=hit.title,
                detail=hit.detail,
                area=rule.area,
                evidence=hit.evidence,
                fixes=hit.fixes,
            )
            for hit in hits
        )
    findings.sort(key=lambda f: (-f.severity.rank, f.code))
    return tuple(findings)


def area_verdicts(
    probes: tuple[ProbeResult, ...], findings: tuple[Finding, ...], specs: Sequence[ProbeSpec[Any]] = PROBES
) -> tuple[AreaVerdict, ...]:
    by_name = {p.name: p for p in specs}
    verdicts = []
    for result in probes:
        spec = by_name.get(result.probe)
        if spec is None:
            continue
        worst = max((f.severity for f in findings if f.area == result.probe), default=Severity.OK)
        details: tuple[str, ...] = ()
        if result.status is ProbeStatus.OK:
            try:
                verdict = spec.describe_any(result.facts)
                details = spec.details_any(result.facts)
            except Exception as exc:  # describing must never cost the report
                verdict = f"(could not describe: {type(exc).__name__})"
        elif result.status is ProbeStatus.NOT_APPLICABLE:
            verdict = f"not applicable: {result.error}"
        else:
            worst = max(worst, Severity.WARNING)
            verdict = f"{result.status.value}: {result.error}"
        verdicts.append(AreaVerdict(result.probe, spec.title, worst, verdict, details))
    return tuple(verdicts)


def diagnose(
    platform: PlatformInfo,
    interpreter: Interpreter,
    probes: tuple[ProbeResult, ...],
    *,
    strict: bool = False,
    source: str = "live",
    rules: Sequence[Rule] | None = None,
    expectations: Expectations | None = None,
    ignore: Sequence[str] = (),
) -> Report:
    from envdoctor.rules import RULES, RuleContext
    from envdoctor.rules.expectations import requirements as expectation_rules

    if rules is None:
        rules = RULES
    stated = expectations if expectations is not None and expectations.stated else None
    ctx = RuleContext.build(platform, interpreter, probes, inputs=(stated,) if stated else ())
    active = [rule for rule in rules if rule.code not in ignore]
    findings = evaluate(ctx, active)
    ignored = tuple(code for code in ignore if any(r.code == code for r in rules))
    areas = area_verdicts(probes, findings)
    if stated is not None:
        areas += (expectation_rules.area_verdict(stated, findings, ignored),)
    return Report(
        envdoctor_version=__version__,
        interpreter=interpreter,
        platform=platform,
        probes=probes,
        findings=findings,
        strict=strict,
        source=source,
        areas=areas,
        expectations=stated,
        ignored=ignored,
        checked=tuple(rule.code for rule in active if ctx.can_run(rule)),
    )


def registry_names() -> Names:
    """The probe names and rule codes settings may be asked about (--only, --skip, --ignore).

    Settings sit below the registries and get them from here; the rules load only if asked.
    """
    from envdoctor.settings import Names

    def rules() -> tuple[tuple[str, str], ...]:
        from envdoctor.rules import RULES

        return tuple((rule.code, rule.name) for rule in RULES)

    return Names(probes=tuple(p.name for p in PROBES), rules=rules)


def selected_probes(
    settings: Settings, specs: Sequence[ProbeSpec[Any]] = PROBES
) -> tuple[ProbeSpec[Any], ...]:
    """The probes --only/--skip keep, in registry order."""
    names = settings.probe_names(tuple(p.name for p in specs))
    return tuple(p for p in specs if p.name in names)


def judge(
    platform: PlatformInfo,
    interpreter: Interpreter,
    probes: tuple[ProbeResult, ...],
    settings: Settings,
    source: str = "live",
) -> Report:
    """diagnose() as `check` and envdoctor.require run it: settings decide probes, rules and strictness.

    A snapshot holds every probe's result; --only/--skip drop the others here too.
    """
    names = settings.probe_names(tuple(p.probe for p in probes))
    return diagnose(
        platform,
        interpreter,
        tuple(p for p in probes if p.probe in names),
        strict=settings.strict,
        source=source,
        expectations=settings.expectations,
        ignore=settings.ignore,
    )
