"""`envdoctor fix`'s command line: options -> envdoctor.fix's runner -> exit code.

Exit codes: 0 fixed (or nothing to fix), 1 not fixed (the output says why), 2 bad usage, 130
interrupted (the output says what state the environment is in).
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Optional

import typer

if TYPE_CHECKING:
    from envdoctor.model.findings import Report


class _TerminalConsole:
    def say(self, text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    def confirm(self, question: str) -> bool:
        sys.stdout.write(f"{question} [y/N] ")
        sys.stdout.flush()
        answer = sys.stdin.readline()
        return answer.strip().lower() in ("y", "yes")


def _interactive() -> bool:
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


def fix(
    python: Optional[str] = typer.Option(
        None, "--python", help="The interpreter to repair (default: as `check` chooses).", metavar="PYTHON"
    ),
    yes: bool = typer.Option(
        False, "--yes", "-y", help="Apply without asking (CI; needed without a terminal)."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the commands and package changes only."),
    notes: bool = typer.Option(
        False, "--notes", help="Also run the install fixes of notes (info-level findings), which fix skips."
    ),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds each check may take.", metavar="SECONDS"),
    command_timeout: float = typer.Option(
        1800.0, "--command-timeout", help="Seconds each install command may take.", metavar="SECONDS"
    ),
    no_smoke: bool = typer.Option(False, "--no-smoke", help="Skip the smoke test in both checks."),
    offline: bool = typer.Option(
        False,
        "--offline",
        help="Both checks ask nothing of the network, so the fix comes from local sources or says "
        "where to download the wheel (also ENVDOCTOR_OFFLINE=1).",
    ),
) -> None:
    from envdoctor.cli import shared
    from envdoctor.cli.options import settings_for
    from envdoctor.cli.shared import fail
    from envdoctor.engine import judge, selected_probes
    from envdoctor.fix.runner import FixRequest, FixRun, usage_error
    from envdoctor.host.live import LiveHost
    from envdoctor.probes.sources import offline_wanted

    shared.check_timeout(timeout)
    if not 10 <= command_timeout <= 86400:
        fail(f"--command-timeout {command_timeout:g}: expected seconds between 10 and 86400")
    settings = settings_for({}, fail)

    def check() -> Report:
        inputs = shared.live_report_inputs(
            python, timeout, probes=selected_probes(settings), smoke=not no_smoke, offline=offline
        )
        return judge(*inputs, settings)

    request = FixRequest(
        yes=yes,
        dry_run=dry_run,
        interactive=_interactive(),
        command_timeout=command_timeout,
        offline=offline_wanted(LiveHost(), offline),
        notes=notes,
    )
    problem = usage_error(request)
    if problem is not None:  # before the check: nothing would be applied anyway
        fail(problem)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    code = FixRun(LiveHost(), check, request, _TerminalConsole(), stamp)()
    raise typer.Exit(code)
