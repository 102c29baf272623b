"""Which of a report's fixes `envdoctor fix` may run, and which it can only show. Pure.

A fix is run only when it is marked as an install fix (FixKind.INSTALL: built from the planner or
from exact pins) and every command in it is a package-manager command for the examined interpreter:
`<python> -m pip install|uninstall ...` or `uv pip install|uninstall --python <python> ...`.
Anything else (drivers, system packages, settings, reboots) is shown as a step for the user.
"""

from __future__ import annotations

from dataclasses import dataclass

from envdoctor.model.findings import Finding, Fix, FixKind, Report, Severity
from envdoctor.shell import split

_PIP_ACTIONS = ("install", "uninstall")


@dataclass(frozen=True)
class Step:
    """One install fix to run: the findings it answers, its sentence, and its commands."""

    codes: tuple[str, ...]
    summary: str
    commands: tuple[str, ...]
    argvs: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class ManualStep:
    """A finding envdoctor fix cannot act on, and the fixes it prints for the user."""

    code: str
    title: str
    fixes: tuple[Fix, ...]


@dataclass(frozen=True)
class Selection:
    steps: tuple[Step, ...]
    manual: tuple[ManualStep, ...]


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


def select(report: Report) -> Selection:
    """The first runnable install fix of every warning or error (a finding's fixes are ways out,
    the preferred first), each command set once; the other findings' fixes as manual steps."""
    python, os_name = report.interpreter.path, report.platform.os
    steps: list[Step] = []
    manual: list[ManualStep] = []
    for finding in report.findings:
        if finding.severity < Severity.WARNING:
            continue
        chosen = _first_runnable(finding, python, os_name)
        if chosen is None:
            manual.append(ManualStep(finding.code, finding.title, finding.fixes))
            continue
        fix, argvs = chosen
        same = next((i for i, s in enumerate(steps) if s.commands == fix.commands), None)
        if same is not None:
            steps[same] = Step((*steps[same].codes, finding.code), steps[same].summary, fix.commands, argvs)
        else:
            steps.append(Step((finding.code,), fix.summary, fix.commands, argvs))
    return Selection(tuple(steps), tuple(manual))


def _first_runnable(
    finding: Finding, python: str, os_name: str
) -> tuple[Fix, tuple[tuple[str, ...], ...]] | None:
    for fix in finding.fixes:
        argvs = _runnable(fix, python, os_name)
        if argvs is not None:
            return fix, argvs
    return None
