"""The Python API behind envdoctor.require: the same probes, rules and settings as `check`."""

from __future__ import annotations

from typing import Any

from envdoctor.engine import judge, registry_names, run_probes, selected_probes
from envdoctor.errors import EnvironmentNotReady
from envdoctor.host.base import Host
from envdoctor.model.findings import Finding, Interpreter, Report, Severity
from envdoctor.probes import CheckOptions, ProbeContext
from envdoctor.settings import Settings, from_keywords
from envdoctor.target import Target, TargetError, resolve_target
from envdoctor.util.records import record


def check(
    settings: Settings, *, python: str | None = None, timeout: float = 60.0, host: Host | None = None
) -> Report:
    """Run the probes `settings` select on `host` (the live machine by default) and judge them."""
    if host is None:
        from envdoctor.host.live import LiveHost

        host = LiveHost()
    try:
        target = resolve_target(host, python or host.own_python)
    except TargetError as exc:
        reason = str(exc).removeprefix(f"--python {python}: ")  # the CLI's spelling of the key
        raise ValueError(f"envdoctor.require(python={python!r}): {reason}") from None
    if python is None:
        interpreter = Interpreter(target.interpreter.path, "the interpreter running this program")
        target = Target(interpreter, target.info)
    ctx = ProbeContext(host=host, target=target, options=CheckOptions(timeout=timeout))
    return judge(host.platform(), target.interpreter, run_probes(ctx, selected_probes(settings)), settings)


def failed_findings(report: Report) -> tuple[Finding, ...]:
    failing = {Severity.ERROR} | ({Severity.WARNING} if report.strict else set())
    # One root cause, one problem: findings folded under their cause are not listed again.
    return tuple(f for f in report.primary if f.severity in failing)


def message(report: Report, failed: tuple[Finding, ...]) -> str:
    count = f"{len(failed)} problem{'s' if len(failed) != 1 else ''}"
    lines = [f"this environment is not ready ({count}; `envdoctor check` shows the full report):"]
    for finding in failed:
        lines.append(f"  - {finding.code} {finding.title}")
        for fix in finding.fixes[:1]:
            lines.append(f"      fix: {fix.summary}")
            lines += [f"        $ {command}" for command in fix.commands]
    return "\n".join(lines)


def require(
    *, python: str | None = None, timeout: float = 60.0, host: Host | None = None, **keywords: Any
) -> Report:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 1 <= timeout <= 3600:
        raise ValueError(f"envdoctor.require(timeout={timeout!r}): expected seconds between 1 and 3600")
    settings = from_keywords(keywords, registry_names())
    report = check(settings, python=python, timeout=float(timeout), host=host)
    failed = failed_findings(report)
    if report.exit_code != 0:
        raise EnvironmentNotReady(message(report, failed), report, failed)
    return report


@record
class CheckResult:
    """What `envdoctor.check()` returns: the report, shown as the report wherever it lands (a
    terminal as `check` prints it, a Jupyter notebook as Markdown or HTML)."""

    report: Report

    @property
    def exit_code(self) -> int:
        return self.report.exit_code

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.report.findings

    @property
    def ok(self) -> bool:
        return self.report.exit_code == 0

    def __str__(self) -> str:
        from envdoctor.render.registry import render

        return render(self.report, "console")

    def _repr_markdown_(self) -> str:
        from envdoctor.render.markdown import render_markdown

        return render_markdown(self.report)

    def _repr_html_(self) -> str:
        """The console report with its colours, as rich exports it for notebooks."""
        import io

        from rich.console import Console

        from envdoctor.render.console import render_console

        console = Console(
            record=True, width=110, force_terminal=True, color_system="truecolor", file=io.StringIO()
        )
        render_console(self.report, console)
        return console.export_html(inline_styles=True, code_format=_PRE)


_PRE = '<pre style="font-family: monospace">{code}</pre>'


def check_environment(*, python: str | None = None, timeout: float = 60.0, **keywords: Any) -> CheckResult:
    """envdoctor.check(): `check` from Python, with the same keywords as require, never raising for
    problems found (the result says them)."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 1 <= timeout <= 3600:
        raise ValueError(f"envdoctor.check(timeout={timeout!r}): expected seconds between 1 and 3600")
    settings = from_keywords(keywords, registry_names())
    return CheckResult(check(settings, python=python, timeout=float(timeout)))
