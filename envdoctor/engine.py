"""Runs the probes concurrently, each time-bounded, then the rules; builds the Report.

A probe that raises or outlives its timeout becomes a ProbeResult saying so; the others still
report. Slow probes (the torch child) start first so the rest hide behind them.
"""

from __future__ import annotations

import functools
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from envdoctor.model.findings import (
    AreaVerdict,
    Finding,
    Interpreter,
    PlatformInfo,
    PluginFacts,
    PluginInfo,
    ProbeResult,
    ProbeStatus,
    Report,
    Severity,
)
from envdoctor.probes import PROBES, NotApplicable, ProbeContext, ProbeSpec
from envdoctor.util import threads
from envdoctor.version import __version__

if TYPE_CHECKING:
    # Rules load while the probes run (see run_probes' while_waiting), not before they start.
    from envdoctor.model.findings import Expectations
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
    watch: Callable[[Mapping[str, tuple[str, threading.Thread]]], object] | None = None,
) -> tuple[ProbeResult, ...]:
    """Run every probe, each bounded by its timeout. `while_waiting` runs once all have started:
    work the caller needs anyway (importing the renderer) then hides behind the torch import."""
    started = time.perf_counter()
    slots: dict[str, _Slot] = {}
    workers: dict[str, threading.Thread] = {}
    for probe in sorted(probes, key=lambda p: not p.slow):
        slot = slots[probe.name] = _Slot()
        # Daemon threads: a probe stuck in native code cannot keep envdoctor from exiting.
        thread = threads.start(functools.partial(_run_one, probe, ctx, slot), f"probe-{probe.name}")
        workers[probe.name] = thread
    if watch is not None:  # progress on a terminal: which probes still run (envdoctor/progress.py)
        watch({p.name: (p.title, workers[p.name]) for p in probes})
    if while_waiting is not None:
        while_waiting()
    results = []
    for probe in probes:
        limit = min(probe.timeout, ctx.options.timeout)
        remaining = started + limit - time.perf_counter()
        if ctx.options.deadline is not None:  # the whole run's budget, counted from its start
            remaining = min(remaining, ctx.options.deadline - time.monotonic())
        workers[probe.name].join(max(0.0, remaining))
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
                    title=f"envdoctor could not evaluate {rule.code} ({rule.name})"
                    + (f", a rule of the plugin {rule.origin}" if rule.origin else ""),
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
    return without_repeated_commands(fold(tuple(findings), rules))


def fold(findings: tuple[Finding, ...], rules: Sequence[Rule]) -> tuple[Finding, ...]:
    """One root cause, one finding: a finding whose rule names a present finding's rule among its
    causes (Rule.consequence_of) is folded under the root of that chain and loses its fixes, so
    the report never offers the cure of a symptom beside the cure of its cause.

    The findings keep their order and severities (the exit code and JSON consumers see them all);
    only `folded_under` and the fixes change.
    """
    causes = {rule.code: rule.consequence_of for rule in rules}
    present = {finding.code for finding in findings}

    def root(code: str, seen: frozenset[str]) -> str:
        for cause in causes.get(code, ()):
            if cause in present and cause not in seen:
                return root(cause, seen | {code})
        return code

    tops = {finding.code: root(finding.code, frozenset()) for finding in findings}
    # A root must stand on its own; in a cycle of declarations (a registry test forbids them) no
    # code does, and then nothing in it is folded rather than everything hidden.
    standing = {code for code, top in tops.items() if top == code}
    folded = []
    for finding in findings:
        top = tops[finding.code]
        if top != finding.code and top in standing:
            finding = replace(finding, folded_under=top, fixes=())
        folded.append(finding)
    return tuple(folded)


def without_repeated_commands(findings: tuple[Finding, ...]) -> tuple[Finding, ...]:
    """The same command never twice in one report: in reading order (findings by severity, fixes in
    order), a command already shown is left out of later fixes, and the fix says where it is."""
    shown: dict[str, str] = {}  # command -> the code of the finding that shows it first
    cleaned = []
    for finding in findings:
        fixes = []
        for fix in finding.fixes:
            kept = tuple(c for c in fix.commands if c not in shown)
            repeated = [c for c in fix.commands if c in shown]
            for command in kept:
                shown[command] = finding.code
            if not repeated:
                fixes.append(fix)
                continue
            where = sorted({shown[c] for c in repeated})
            place = (
                "in the fix above"
                if where == [finding.code]
                else "under " + ", ".join(w for w in where) + " above"
            )
            count = "its command is" if len(repeated) == 1 else f"{len(repeated)} of its commands are"
            if kept:
                count = "1 more command is" if len(repeated) == 1 else f"{len(repeated)} more commands are"
            fixes.append(replace(fix, summary=f"{fix.summary} ({count} shown {place})", commands=kept))
        cleaned.append(replace(finding, fixes=tuple(fixes)) if fixes != list(finding.fixes) else finding)
    return tuple(cleaned)


def area_verdicts(
    probes: tuple[ProbeResult, ...], findings: tuple[Finding, ...], specs: Sequence[ProbeSpec[Any]] = PROBES
) -> tuple[AreaVerdict, ...]:
    by_name = {p.name: p for p in specs}
    verdicts = []
    for result in probes:
        spec = by_name.get(result.probe)
        if spec is None or spec.on_request:
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
    pasted: str | None = None,
    plugins: tuple[PluginInfo, ...] = (),
    specs: Sequence[ProbeSpec[Any]] = PROBES,
) -> Report:
    """`pasted`: an error text the user gave (`envdoctor why`), read with the errors the probes
    captured against the error signatures (rules read the matches as ErrorEvidence). `plugins`:
    the plugin packages found, whose rules `rules` holds and whose probes `specs` does."""
    from envdoctor.rules import RULES, RuleContext
    from envdoctor.rules.evidence import gather
    from envdoctor.rules.expectations import requirements as expectation_rules

    if rules is None:
        rules = RULES
    stated = expectations if expectations is not None and expectations.stated else None
    inputs: tuple[object, ...] = (gather(probes, pasted), PluginFacts(plugins)) + (
        (stated,) if stated else ()
    )
    ctx = RuleContext.build(platform, interpreter, probes, inputs=inputs)
    active = [rule for rule in rules if rule.code not in ignore]
    findings = evaluate(ctx, active)
    ignored = tuple(code for code in ignore if any(r.code == code for r in rules))
    areas = area_verdicts(probes, findings, specs)
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
        plugins=plugins,
    )


def registry_names(plugins: bool = True) -> Names:
    """The probe names and rule codes settings may be asked about (--only, --skip, --ignore),
    the plugins' among them; PluginError (a SettingsError) when plugins clash.

    Settings sit below the registries and get them from here; the rules load only if asked.
    """
    from envdoctor.plugin.loader import plugins as installed
    from envdoctor.settings import Names

    loaded = installed(plugins)

    def rules() -> tuple[tuple[str, str], ...]:
        from envdoctor.rules import RULES

        return tuple((rule.code, rule.name) for rule in (*RULES, *loaded.rules))

    return Names(probes=tuple(p.name for p in (*PROBES, *loaded.probes)), rules=rules)


def all_probes(settings: Settings) -> tuple[ProbeSpec[Any], ...]:
    """envdoctor's probes, then the plugins' (unless turned off)."""
    from envdoctor.plugin.loader import plugins

    return (*PROBES, *plugins(settings.plugins).probes)


def selected_probes(
    settings: Settings, specs: Sequence[ProbeSpec[Any]] | None = None
) -> tuple[ProbeSpec[Any], ...]:
    """The probes --only/--skip keep, in registry order (those run only on request never)."""
    specs = all_probes(settings) if specs is None else specs
    names = settings.probe_names(tuple(p.name for p in specs))
    return tuple(p for p in specs if p.name in names and not p.on_request)


def judge(
    platform: PlatformInfo,
    interpreter: Interpreter,
    probes: tuple[ProbeResult, ...],
    settings: Settings,
    source: str = "live",
    pasted: str | None = None,
) -> Report:
    """diagnose() as `check` and envdoctor.require run it: settings decide probes, rules and strictness.
    `pasted`: the error text `envdoctor why` explains.

    A snapshot holds every probe's result; --only/--skip drop the others here too.
    """
    from envdoctor.plugin.loader import plugins
    from envdoctor.rules import RULES

    names = settings.probe_names(tuple(p.probe for p in probes))
    loaded = plugins(settings.plugins)
    return diagnose(
        platform,
        interpreter,
        tuple(p for p in probes if p.probe in names),
        strict=settings.strict,
        source=source,
        rules=(*RULES, *loaded.rules),
        expectations=settings.expectations,
        ignore=settings.ignore,
        pasted=pasted,
        plugins=loaded.plugins,
        specs=(*PROBES, *loaded.probes),
    )
