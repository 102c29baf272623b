"""Which of a report's fixes `envdoctor fix` may run, and which it can only show. Pure.

A fix is run only when it is marked as an install fix (FixKind.INSTALL: built from the planner or
from exact pins) and every command in it is a package-manager command for the examined interpreter:
`<python> -m pip install|uninstall ...` or `uv pip install|uninstall --python <python> ...`.
Anything else (drivers, system packages, settings, reboots) is shown as a step for the user.

A finding's runnable fixes are its routes, in the planner's order; one that names a host the
report marks unreachable comes after those that do not (it is run only if they fail), so `fix`
never starts with a route that cannot answer while another can.
"""

from __future__ import annotations

from envdoctor.model.findings import Finding, Fix, FixKind, Report, Severity
from envdoctor.shell import split
from envdoctor.util.records import record

_PIP_ACTIONS = ("install", "uninstall")


@record
class Route:
    """One way to apply a step: its sentence, its commands as text and as argument lists."""

    summary: str
    commands: tuple[str, ...]
    argvs: tuple[tuple[str, ...], ...]
    unreachable: tuple[str, ...] = ()  # hosts it names that the report marks unreachable


@record
class Step:
    """One install fix to run: the findings it answers, and its routes, the first tried first."""

    codes: tuple[str, ...]
    routes: tuple[Route, ...]

    @property
    def summary(self) -> str:
        return self.routes[0].summary

    @property
    def commands(self) -> tuple[str, ...]:
        return self.routes[0].commands

    @property
    def argvs(self) -> tuple[tuple[str, ...], ...]:
        return self.routes[0].argvs


@record
class ManualStep:
    """A finding envdoctor fix cannot act on, and the fixes it prints for the user."""

    code: str
    title: str
    fixes: tuple[Fix, ...]


@record
class Selection:
    steps: tuple[Step, ...]
    manual: tuple[ManualStep, ...]


def runnable_notes(report: Report) -> tuple[str, ...]:
    """The codes of info-level findings with a fix `fix --notes` would run."""
    python, os_name = report.interpreter.path, report.platform.os
    return tuple(
        f.code
        for f in report.findings
        if f.severity is Severity.INFO and any(_runnable(fix, python, os_name) for fix in f.fixes)
    )


def runs_in(argv: tuple[str, ...], python: str) -> bool:
    """Whether `argv` is a pip or uv install/uninstall command for the interpreter `python`."""
    if len(argv) > 3 and argv[:3] == (python, "-m", "pip") and argv[3] in _PIP_ACTIONS:
        return True
    is_uv = len(argv) > 2 and argv[0].replace("\\", "/").rsplit("/", 1)[-1] in ("uv", "uv.exe")
    if is_uv and argv[1] == "pip" and argv[2] in _PIP_ACTIONS:
        return any(a == "--python" and b == python for a, b in zip(argv, argv[1:]))
    return False


def _runnable(fix: Fix, python: str, os_name: str) -> tuple[tuple[str, ...], ...] | None:
    if fix.kind is not FixKind.INSTALL or not fix.commands:
        return None
    try:
        argvs = tuple(split(command, os_name) for command in fix.commands)
    except ValueError:
        return None
    return argvs if all(runs_in(argv, python) for argv in argvs) else None


def unreachable_hosts(report: Report) -> frozenset[str]:
    """The hosts of the indexes the sources probe asked and got no answer from."""
    from urllib.parse import urlsplit

    from envdoctor.model.sources import ReachStatus, SourcesFacts

    facts = next((p.facts for p in report.probes if isinstance(p.facts, SourcesFacts)), None)
    if facts is None:
        return frozenset()
    found = set()
    for check in facts.reach:
        if check.status is ReachStatus.UNREACHABLE:
            try:
                found.add((urlsplit(check.url).hostname or "").lower())
            except ValueError:
                continue
    return frozenset(found - {""})


def _hosts_named(argvs: tuple[tuple[str, ...], ...], unreachable: frozenset[str]) -> tuple[str, ...]:
    from urllib.parse import urlsplit

    named = []
    for argv in argvs:
        for arg in argv:
            if arg.startswith(("http://", "https://")):
                try:
                    host = (urlsplit(arg).hostname or "").lower()
                except ValueError:
                    continue
                if host in unreachable:
                    named.append(host)
    return tuple(dict.fromkeys(named))


def select(report: Report, notes: bool = False) -> Selection:
    """The runnable install fixes of every warning or error (and, with `notes`, of info-level
    findings too; a finding's fixes are ways out, the preferred first), each set of commands once;
    the other findings' fixes as manual steps."""
    python, os_name = report.interpreter.path, report.platform.os
    silent = unreachable_hosts(report)
    steps: list[Step] = []
    manual: list[ManualStep] = []
    for finding in report.findings:
        if finding.severity < (Severity.INFO if notes else Severity.WARNING):
            continue
        routes = _routes(finding, python, os_name, silent)
        if not routes:
            manual.append(ManualStep(finding.code, finding.title, finding.fixes))
            continue
        same = next((i for i, s in enumerate(steps) if s.commands == routes[0].commands), None)
        if same is not None:
            steps[same] = Step((*steps[same].codes, finding.code), steps[same].routes)
        else:
            steps.append(Step((finding.code,), routes))
    return Selection(tuple(steps), tuple(manual))


def _routes(finding: Finding, python: str, os_name: str, silent: frozenset[str]) -> tuple[Route, ...]:
    found = []
    for fix in finding.fixes:
        argvs = _runnable(fix, python, os_name)
        if argvs is not None:
            found.append(Route(fix.summary, fix.commands, argvs, _hosts_named(argvs, silent)))
    # Routes whose hosts answered (or were not asked) first; the planner's order otherwise kept.
    return tuple(sorted(found, key=lambda route: bool(route.unreachable)))
