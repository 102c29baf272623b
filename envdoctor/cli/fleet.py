"""`envdoctor fleet` (many snapshots) and `envdoctor cluster` (a live job under its launcher).

Kept apart from cli.py, which registers them with `register(app)`. Nothing heavy is imported until a
command runs; torch only inside `cluster`, on the ranks.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from typing import Any, List, NoReturn, Optional

import typer

from envdoctor.cli.options import ReportFormat, check_options, settings_for

EXIT_USAGE = 2
_FORMAT_HELP = "console, json, markdown, github (workflow commands, plus the step summary), junit."


class Backend(str, Enum):
    auto = "auto"
    nccl = "nccl"
    gloo = "gloo"


def _fail(message: str) -> NoReturn:
    typer.echo(f"envdoctor: error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)


def _write(text: str, output: str | None) -> None:
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        _fail(f"--output {output}: cannot be written ({exc.strerror or exc})")


def emit(report: Any, fmt: ReportFormat, verbose: bool, output: str | None) -> None:
    """Render a FleetReport like `check` renders its report: colour on a terminal, plain otherwise;
    the github format also appends the Markdown report to $GITHUB_STEP_SUMMARY."""
    from envdoctor.ci import is_ci
    from envdoctor.fleet import render

    if fmt is ReportFormat.console and output is None and not is_ci(os.environ) and sys.stdout.isatty():
        from envdoctor.render.console import make_console

        render.render_console(report, make_console(), verbose)
    else:
        _write(render.render(report, fmt.value, verbose), output)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if fmt is ReportFormat.github and summary:
        try:
            with open(summary, "a", encoding="utf-8") as handle:
                handle.write(render.render_markdown(report) + "\n")
        except OSError as exc:
            typer.echo(
                f"envdoctor: warning: cannot append to $GITHUB_STEP_SUMMARY ({exc.strerror or exc})", err=True
            )


_FORMAT = typer.Option(
    ReportFormat.console, "--format", "-f", metavar="FORMAT", help=_FORMAT_HELP, case_sensitive=False
)
_OUTPUT = typer.Option(None, "--output", "-o", help="Write the report to FILE.", metavar="FILE")
_VERBOSE = typer.Option(False, "--verbose", "-v", help="Show each finding's evidence.")


@check_options
def fleet(
    paths: List[str] = typer.Argument(..., metavar="SNAPSHOT...", help="Snapshot files, or folders of them."),
    fmt: ReportFormat = _FORMAT,
    output: Optional[str] = _OUTPUT,
    verbose: bool = _VERBOSE,
    progress: Optional[bool] = typer.Option(
        None,
        "--progress/--no-progress",
        help="A progress bar on stderr (default: on a terminal, for 500+ files).",
    ),
    requested: Optional[dict[str, Any]] = None,
) -> None:
    """Many snapshots -> one fleet report (help text: cli_help.COMMAND_HELP["fleet"])."""
    from envdoctor.fleet.offline import InputError, count_entries, diagnose_files, iter_entries
    from envdoctor.fleet.report import build_report

    settings = settings_for(requested or {}, _fail)
    try:
        # Counting first costs a folder walk; it is done only when a bar may be shown.
        total = count_entries(paths) if progress or (progress is None and sys.stderr.isatty()) else 0
        if progress or (progress is None and total >= 500):
            from rich.progress import Progress

            with Progress(transient=True, console=_stderr_console()) as bar:
                task = bar.add_task("diagnosing snapshots", total=total or None)
                facts = diagnose_files(
                    iter_entries(paths), settings, lambda done: bar.update(task, completed=done)
                )
        else:
            facts = diagnose_files(iter_entries(paths), settings)
    except InputError as exc:
        _fail(str(exc))
    files = facts.node_count + len(facts.unreadable)
    if not facts.groups:
        _fail(f"none of the {files:,} files is a usable snapshot (first: {facts.unreadable[0].path})")
    source = f"fleet of {files:,} snapshot files"
    report = build_report(facts, settings, source)
    emit(report, fmt, verbose, output)
    raise typer.Exit(report.exit_code)


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(file=sys.stderr)


@check_options
def cluster(
    fmt: ReportFormat = _FORMAT,
    output: Optional[str] = _OUTPUT,
    verbose: bool = _VERBOSE,
    timeout: float = typer.Option(
        120.0,
        "--timeout",
        help="Seconds until rank 0 prints the report, whatever the other ranks do.",
        metavar="SECONDS",
    ),
    backend: Backend = typer.Option(
        Backend.auto,
        "--backend",
        help="auto: nccl when every rank has a CUDA device, else gloo.",
        case_sensitive=False,
        metavar="BACKEND",
    ),
    no_smoke: bool = typer.Option(False, "--no-smoke", help="Skip each node's smoke test."),
    smoke_size: Optional[int] = typer.Option(
        None, "--smoke-size", metavar="N", help="Smoke-test matrix size."
    ),
    bandwidth_seconds: float = typer.Option(
        1.0, "--bandwidth-seconds", metavar="S", help="About how long the bandwidth loop runs (0 to skip it)."
    ),
    bandwidth_mib: Optional[int] = typer.Option(
        None,
        "--bandwidth-mib",
        metavar="MIB",
        help="All-reduce message size (default: 64 on GPUs, 8 on CPUs).",
    ),
    requested: Optional[dict[str, Any]] = None,
) -> None:
    """One rank of a launched job (help text: cli_help.COMMAND_HELP["cluster"])."""
    from envdoctor.fleet.distributed import ClusterOptions, finish, run_cluster
    from envdoctor.fleet.launcher import LaunchError, detect

    if not 5 <= timeout <= 3600:
        _fail(f"--timeout {timeout:g}: expected seconds between 5 and 3600")
    if not 0 <= bandwidth_seconds <= 60:
        _fail(f"--bandwidth-seconds {bandwidth_seconds:g}: expected between 0 and 60")
    if bandwidth_mib is not None and not 1 <= bandwidth_mib <= 4096:
        _fail(f"--bandwidth-mib {bandwidth_mib}: expected between 1 and 4096")
    if smoke_size is not None and not 16 <= smoke_size <= 16384:
        _fail(f"--smoke-size {smoke_size}: expected a matrix size between 16 and 16384")
    settings = settings_for(requested or {}, _fail)
    try:
        launch = detect(os.environ)
    except LaunchError as exc:
        _fail(str(exc))
    options = ClusterOptions(
        timeout=timeout,
        backend=backend.value,
        smoke=not no_smoke,
        smoke_size=smoke_size,
        bandwidth_seconds=bandwidth_seconds,
        bandwidth_mib=bandwidth_mib,
        settings=settings,
    )
    # Only rank 0 writes --output; a rank that reports alone (it could not reach the others) prints
    # to its own log instead of overwriting rank 0's file on a shared filesystem.
    target = output if launch.rank == 0 else None
    code = run_cluster(launch, options, lambda report: emit(report, fmt, verbose, target))
    # Threads may still sit in a collective that will never finish: leave without waiting for them.
    finish(code)


def register(app: typer.Typer) -> None:
    """Add the commands to `app`, after the others (the root help page lists them in that order)."""
    from envdoctor.cli.help import COMMAND_HELP

    app.command("fleet", help=COMMAND_HELP["fleet"])(fleet)
    app.command("cluster", help=COMMAND_HELP["cluster"])(cluster)
