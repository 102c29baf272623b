"""`check`, `snapshot` and `report`: the live probes (or a snapshot), judged and rendered."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Optional

import typer

from envdoctor.cli import shared
from envdoctor.cli.options import BugReportFormat, ReportFormat, check_options, emit, settings_for


@check_options
def check(
    fmt: ReportFormat = typer.Option(
        ReportFormat.console,
        "--format",
        "-f",
        metavar="FORMAT",
        help="Output format: console, json, markdown, github (workflow commands, plus the step "
        "summary), junit (a test report).",
        case_sensitive=False,
    ),
    python: Optional[str] = typer.Option(
        None,
        "--python",
        help="The interpreter to examine: a path, an environment folder (.venv) or a command on PATH "
        "(python3.12); default: $VIRTUAL_ENV, $CONDA_PREFIX, else the one envdoctor runs in, or, where "
        "that has no torch (pipx, uv tool), ./.venv, ./venv, the conda base or python3 on PATH.",
        metavar="PYTHON",
    ),
    from_snapshot: Optional[str] = typer.Option(
        None,
        "--from",
        help="Diagnose a snapshot written by `envdoctor snapshot` instead.",
        metavar="SNAPSHOT",
    ),
    timeout: float = typer.Option(
        60.0, "--timeout", help="Seconds the whole check may take.", metavar="SECONDS"
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show the facts behind each area."),
    output: Optional[str] = typer.Option(
        None, "--output", "-o", help="Write the report to FILE.", metavar="FILE"
    ),
    no_smoke: bool = typer.Option(
        False, "--no-smoke", help="Skip the smoke test (matmul, autograd, fp16/bf16, conv on each device)."
    ),
    smoke_size: Optional[int] = typer.Option(
        None,
        "--smoke-size",
        metavar="N",
        help="Smoke-test matrix size (default: 1024 on GPUs, reduced to fit free memory; 256 on the "
        "CPU, which uses at most 1024).",
    ),
    offline: bool = typer.Option(
        False,
        "--offline",
        help="Ask nothing of the network: fixes then use local sources or say they were not checked "
        "(also ENVDOCTOR_OFFLINE=1).",
    ),
    requested: Optional[dict[str, Any]] = None,  # the options check_options adds, keyed by option name
) -> None:
    from envdoctor.engine import judge, selected_probes

    shared.check_timeout(timeout)
    shared.check_smoke_size(smoke_size)
    settings = settings_for(requested or {}, shared.fail)
    if from_snapshot is not None:
        if python is not None:
            shared.fail("--from and --python cannot be combined: a snapshot already names its interpreter")
        if no_smoke or smoke_size is not None:
            shared.fail(
                "--from cannot be combined with --no-smoke or --smoke-size: the snapshot already holds one"
            )
        from envdoctor.snapshot import SnapshotError, load

        try:
            snap = load(from_snapshot)
        except SnapshotError as exc:
            shared.fail(str(exc))
        report = judge(snap.platform, snap.interpreter, snap.probes, settings, source=from_snapshot)
    else:
        from envdoctor.progress import Progress, wanted

        shown = wanted(sys.stderr, os.environ, console_format=fmt is ReportFormat.console)
        with Progress(sys.stderr) if shown else contextlib.nullcontext() as progress:
            inputs = shared.live_report_inputs(
                python,
                timeout,
                fmt,
                selected_probes(settings),
                smoke=not no_smoke,
                smoke_size=smoke_size,
                offline=offline,
                progress=progress,
            )  # the spinner is cleared here, before the report
        report = judge(*inputs, settings)
    emit(report, fmt, verbose, output, shared.write)
    raise typer.Exit(report.exit_code)


def snapshot(
    output: Optional[str] = typer.Option(
        None, "--output", "-o", help="File to write (default: stdout).", metavar="FILE"
    ),
    python: Optional[str] = typer.Option(
        None, "--python", help="The interpreter to examine.", metavar="PYTHON"
    ),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds the probes may take.", metavar="SECONDS"),
    description: str = typer.Option(
        "", "--description", help="A note stored in the snapshot.", metavar="TEXT"
    ),
    no_smoke: bool = typer.Option(False, "--no-smoke", help="Skip the smoke test."),
    smoke_size: Optional[int] = typer.Option(
        None, "--smoke-size", metavar="N", help="Smoke-test matrix size (see `check --help`)."
    ),
    offline: bool = typer.Option(False, "--offline", help=shared.OFFLINE_HELP),
) -> None:
    from envdoctor.snapshot import Snapshot, dumps

    shared.check_timeout(timeout)
    shared.check_smoke_size(smoke_size)
    platform, interpreter, probes = shared.live_report_inputs(
        python, timeout, smoke=not no_smoke, smoke_size=smoke_size, offline=offline, details=True
    )
    text = dumps(Snapshot(platform, interpreter, probes, description=description))
    shared.write(text, output)
    if output is not None:
        typer.echo(f"envdoctor: snapshot written to {output}", err=True)


def bug_report(
    fmt: BugReportFormat = typer.Option(
        BugReportFormat.markdown,
        "--format",
        "-f",
        metavar="FORMAT",
        help="markdown, or json for the snapshot.",
        case_sensitive=False,
    ),
    python: Optional[str] = typer.Option(
        None, "--python", help="The interpreter to examine.", metavar="PYTHON"
    ),
    from_snapshot: Optional[str] = typer.Option(
        None, "--from", help="Report on a snapshot instead.", metavar="SNAPSHOT"
    ),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds the probes may take.", metavar="SECONDS"),
    output: Optional[str] = typer.Option(
        None, "--output", "-o", help="Write the report to FILE.", metavar="FILE"
    ),
    offline: bool = typer.Option(False, "--offline", help=shared.OFFLINE_HELP),
) -> None:
    import os

    from envdoctor.bug_report import render_report
    from envdoctor.snapshot import Snapshot, SnapshotError, load

    shared.check_timeout(timeout)
    if from_snapshot is not None:
        if python is not None:
            shared.fail("--from and --python cannot be combined: a snapshot already names its interpreter")
        try:
            snap = load(from_snapshot)
        except SnapshotError as exc:
            shared.fail(str(exc))
    else:
        snap = Snapshot(*shared.live_report_inputs(python, timeout, fmt, offline=offline, details=True))
    shared.write(render_report(snap, fmt.value, os.environ, source=from_snapshot or "live"), output)
