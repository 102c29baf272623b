"""`envdoctor fix` from start to end: check, show, confirm, record, run, check again, restore.

Everything that runs a program goes through the Host (pip through `stream`, the state through a
child); the checks come in as a callable, so that the CLI runs the real engine and tests may too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from envdoctor.fix import changes
from envdoctor.fix.offline import offline_environment
from envdoctor.fix.restore import RestorePlan, restore_plan
from envdoctor.fix.selection import Selection, Step, runnable_notes, select
from envdoctor.fix.state import EnvState, StateError, read_state, save_state
from envdoctor.host.base import CommandResult, Host
from envdoctor.model.findings import Report, Severity
from envdoctor.shell import join
from envdoctor.util import lifecycle
from envdoctor.util.records import record

FIXED, NOT_FIXED, USAGE, INTERRUPTED = 0, 1, 2, 130
COMMAND_TIMEOUT = 1800.0  # a CUDA torch is 2-3 GB: generous, yet never a hang


class Console(Protocol):
    def say(self, text: str) -> None:
        """Write text as is (lines end in "\\n"); pip's output passes through here too."""
        ...

    def confirm(self, question: str) -> bool: ...


@record
class FixRequest:
    yes: bool = False
    dry_run: bool = False
    interactive: bool = False  # stdin and stdout are a terminal: a question can be answered
    command_timeout: float = COMMAND_TIMEOUT
    state_dir: str | None = None  # where the recorded state goes (envdoctor's cache folder)
    offline: bool = False  # pip, and the build environments it makes, read local sources only
    notes: bool = False  # the install fixes of info-level findings (notes) run too


def usage_error(request: FixRequest) -> str | None:
    """Why the request cannot run as given (exit 2), before anything is examined."""
    if request.dry_run or request.yes or request.interactive:
        return None
    return (
        "not a terminal, so there is no one to confirm: add --yes to apply the fixes, "
        "or --dry-run to see them"
    )


def verdict(report: Report) -> str:
    codes = [f.code for f in report.findings if f.severity >= Severity.WARNING]
    return f"{report.status}" + (f" ({', '.join(codes)})" if codes else "")


def worse(before: Report, after: Report) -> str | None:
    """Why the after-check is worse than the before-check; None when it is not."""
    if after.worst > before.worst:
        return f"the verdict went from {before.status} to {after.status}"
    old = {f.code for f in before.findings if f.severity is Severity.ERROR}
    new = sorted({f.code for f in after.findings if f.severity is Severity.ERROR} - old)
    return f"new errors: {', '.join(new)}" if new else None


def describe_plan(selection: Selection, planned: Sequence[changes.Change]) -> str:
    lines = ["Commands envdoctor fix will run, in this order:"]
    for step in selection.steps:
        lines.append(f"  [{', '.join(step.codes)}] {step.summary}")
        lines.extend(f"    {command}" for command in step.commands)
        for other in step.routes[1:]:
            silent = (
                f" (it names {', '.join(other.unreachable)}, which did not answer)"
                if other.unreachable
                else ""
            )
            lines.append(f"    if that fails{silent}: {other.summary}")
            lines.extend(f"      {command}" for command in other.commands)
    lines.append("Package changes:")
    lines.extend(f"  {c.words}" for c in planned)
    if not planned:
        lines.append("  none to the recorded packages (the commands find them as asked)")
    lines.append("  (pip may also add or upgrade what these require)")
    return "\n".join(lines) + "\n" + describe_manual(selection)


def describe_manual(selection: Selection) -> str:
    if not selection.manual:
        return ""
    lines = [
        "Not run by envdoctor fix (drivers, system packages, settings and downloads on another machine "
        "need you, sudo or a reboot):"
    ]
    for step in selection.manual:
        lines.append(f"  [{step.code}] {step.title}")
        for fix in step.fixes:
            lines.append(f"    {fix.summary}")
            lines.extend(f"      {c}" for c in fix.commands)
    return "\n".join(lines) + "\n"


@dataclass
class FixRun:
    """One `envdoctor fix`: the collaborators, and what has happened so far."""

    host: Host
    check: Callable[[], Report]
    request: FixRequest
    out: Console
    stamp: str  # names the state file: "20261130T134501Z"

    def __call__(self) -> int:
        problem = usage_error(self.request)
        if problem is not None:
            self.out.say(f"envdoctor: error: {problem}\n")
            return USAGE
        before = self.check()
        self.out.say(f"Examined {before.interpreter.path} ({before.interpreter.reason}): {verdict(before)}\n")
        selection = select(before, self.request.notes)
        if not selection.steps:
            return self._nothing_to_run(before, selection)
        python = before.interpreter.path
        try:
            recorded = read_state(self.host, python)
        except StateError as exc:
            self.out.say(f"Not fixed: {exc}; envdoctor changes nothing it cannot put back.\n")
            return NOT_FIXED
        argvs = [argv for step in selection.steps for argv in step.argvs]
        self.out.say(describe_plan(selection, changes.planned(recorded, argvs)))
        if self.request.dry_run:
            self.out.say("Dry run: nothing was changed.\n")
            return NOT_FIXED if before.exit_code else FIXED
        if not self.request.yes and not self.out.confirm("Run these commands?"):
            self.out.say("Not fixed: nothing was changed (not confirmed).\n")
            return NOT_FIXED
        try:
            where = save_state(self._state_dir(), recorded, self.stamp)
        except StateError as exc:
            self.out.say(f"Not fixed: {exc}; envdoctor changes nothing it cannot put back.\n")
            return NOT_FIXED
        self.out.say(f"Recorded the installed packages in {where}\n")
        try:
            with lifecycle.interruptible():  # a signal: report what changed, then exit 130
                return self._apply(before, selection, recorded, where)
        except KeyboardInterrupt:
            if not lifecycle.interruption_said():  # the signal handler said it on stderr already
                self.out.say("\nInterrupted.\n")
            self._report_state(recorded, where)
            return INTERRUPTED

    def _state_dir(self) -> str:
        if self.request.state_dir:
            return self.request.state_dir
        from envdoctor.paths import cache_dir

        folder = cache_dir(self.host.env)
        if folder is None:
            raise StateError("there is no cache folder (no home folder); set ENVDOCTOR_CACHE_DIR")
        return os.path.join(folder, "fix")

    def _nothing_to_run(self, before: Report, selection: Selection) -> int:
        notes = () if self.request.notes else runnable_notes(before)
        if notes:
            shown = ", ".join(notes)
            self.out.say(
                f"No warning or error has a fix to run; fix skips notes (info-level findings), and {shown} "
                "has one: `envdoctor fix --notes` includes it.\n"
            )
        if before.exit_code == 0 and not selection.manual:
            self.out.say("" if notes else "Nothing to fix.\n")
            return FIXED
        self.out.say(describe_manual(selection))
        if before.exit_code == 0:
            self.out.say("Nothing envdoctor fix can run; the verdict allows working as it is.\n")
            return FIXED
        self.out.say("Not fixed: no finding has a fix envdoctor can run; the steps above are yours.\n")
        return NOT_FIXED

    def _apply(self, before: Report, selection: Selection, recorded: EnvState, where: str) -> int:
        env = offline_environment(before) if self.request.offline else None
        if env is not None:
            self.out.say("Offline: pip and its build environments read local sources only.\n")
        for step in selection.steps:
            failed = self._apply_step(step, before.interpreter.path, env)
            if failed is not None:
                return self._restore(recorded, where, f"a command failed ({failed})")
        after = self.check()
        self.out.say(f"Before: {verdict(before)}\nAfter:  {verdict(after)}\n")
        reason = worse(before, after)
        if reason is not None:
            return self._restore(recorded, where, f"the check after is worse: {reason}")
        if after.exit_code == 0:
            self.out.say(describe_manual(select(after)))
            self.out.say("Fixed.\n")
            return FIXED
        left = select(after)
        self.out.say(describe_manual(left))
        codes = ", ".join(f.code for f in after.findings if f.severity is Severity.ERROR) or after.status
        self.out.say(f"Not fixed: {codes} remain; the changes are kept (the check is not worse).\n")
        return NOT_FIXED

    def _apply_step(self, step: Step, python: str, env: dict[str, str] | None) -> str | None:
        """Each route of the step in turn until one succeeds; None then, else the last failure."""
        failure = None
        for number, route in enumerate(step.routes):
            failure = None
            for argv in route.argvs:
                result = self._run(argv, env)
                if not result.ok:
                    failure = f"{_failure(argv, result)}, run with {python}"
                    break
            if failure is None:
                return None
            following = step.routes[number + 1] if number + 1 < len(step.routes) else None
            nxt = f"; trying the next route: {following.summary}" if following else "; no other route"
            self.out.say(f"Failed: {failure}{nxt}\n")
        return failure

    def _run(self, argv: Sequence[str], env: dict[str, str] | None = None) -> CommandResult:
        self.out.say(f"$ {join(argv, self.host.platform().os)}\n")
        return self.host.stream(argv, self.request.command_timeout, self.out.say, env)

    def _restore(self, recorded: EnvState, where: str, why: str) -> int:
        now = self._read_now(recorded, where)
        if now is None:
            return NOT_FIXED
        plan = restore_plan(recorded, now, (recorded.python, "-m", "pip"))
        if not plan.needed:
            self.out.say(f"Not fixed: {why}. Nothing had changed yet: the environment is as before.\n")
            return NOT_FIXED
        self.out.say(f"Restoring the recorded packages ({why}):\n")
        for argv in plan.commands:
            if not self._run(argv).ok:
                break
        again = self._read_now(recorded, where)
        if again is not None and not restore_plan(recorded, again, (recorded.python, "-m", "pip")).needed:
            self.out.say(f"Not fixed: {why}. Restored: the packages are as recorded in {where}.\n")
            return NOT_FIXED
        self.out.say(f"Not fixed: {why}. The restore did not complete.\n")
        if again is not None:
            self._say_state(recorded, again, where)
        return NOT_FIXED

    def _read_now(self, recorded: EnvState, where: str) -> EnvState | None:
        try:
            return read_state(self.host, recorded.python)
        except StateError as exc:
            self.out.say(f"Cannot read the packages now ({exc}); the recorded ones are in {where}.\n")
            return None

    def _report_state(self, recorded: EnvState, where: str) -> None:
        now = self._read_now(recorded, where)
        if now is not None:
            self._say_state(recorded, now, where)

    def _say_state(self, recorded: EnvState, now: EnvState, where: str) -> None:
        moved = changes.diff(recorded, now)
        if not moved:
            self.out.say("The packages are as recorded: nothing changed.\n")
            return
        self.out.say("The environment now differs from the record:\n")
        self.out.say("".join(f"  {c.words}\n" for c in moved))
        plan: RestorePlan = restore_plan(recorded, now, (recorded.python, "-m", "pip"))
        os_name = self.host.platform().os
        self.out.say(f"To put back what is recorded in {where}, run:\n")
        self.out.say("".join(f"  {join(argv, os_name)}\n" for argv in plan.commands))
        self.out.say("".join(f"  ({line})\n" for line in plan.cannot))


def _failure(argv: Sequence[str], result: CommandResult) -> str:
    name = " ".join(argv[1:4]) if len(argv) > 3 else " ".join(argv)
    if result.start_error:
        return f"{name}: could not start ({result.start_error})"
    if result.timed_out:
        return f"{name}: stopped after its time limit"
    return f"{name}: exit status {result.returncode}"


__all__ = ["FIXED", "INTERRUPTED", "NOT_FIXED", "USAGE", "Console", "FixRequest", "FixRun", "Step"]
