"""The command line: options -> engine -> renderer -> exit code. No diagnosis logic lives here.

Exit codes: 0 healthy (warnings allowed unless --strict), 1 problems found, 2 envdoctor could not
run as asked (bad option, unreadable input, an interpreter that does not run).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from enum import Enum
from typing import TYPE_CHECKING, Any, NoReturn, Optional

import typer

from envdoctor import __version__
from envdoctor import cli_fix as _cli_fix
from envdoctor.cli_check import BugReportFormat, ReportFormat, check_options, emit, settings_for
from envdoctor.cli_help import COMMAND_HELP, ROOT_HELP, VERSION_HELP
from envdoctor.cli_update import register as register_update

if TYPE_CHECKING:
    from envdoctor.model import Interpreter, PlatformInfo, ProbeResult
    from envdoctor.probes.base import ProbeSpec
    from envdoctor.progress import Progress

EXIT_USAGE = 2

# The help texts live in cli_help.py, which draws the root page without typer (see launch.py).
app = typer.Typer(
    name="envdoctor",
    help=ROOT_HELP,
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)


class OutputFormat(str, Enum):
    console = "console"
    json = "json"


def fail(message: str) -> NoReturn:
    """One line on stderr and exit 2: envdoctor could not do what was asked."""
    from envdoctor.redact import one_line

    typer.echo(f"envdoctor: error: {one_line(message)}", err=True)
    raise typer.Exit(EXIT_USAGE)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"envdoctor {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help=VERSION_HELP
    ),
) -> None:
    """Tells whether PyTorch will really work on this machine, why not, and how to fix it."""


def _check_timeout(timeout: float) -> None:
    if not 1 <= timeout <= 3600:
        fail(f"--timeout {timeout:g}: expected seconds between 1 and 3600")


SMOKE_SIZES = (16, 16384)  # the child's own limits (child/torch_probe.py MIN_SIZE, MAX_SIZE)


def _check_smoke_size(size: int | None) -> None:
    low, high = SMOKE_SIZES
    if size is not None and not low <= size <= high:
        fail(f"--smoke-size {size}: expected a matrix size between {low} and {high}")


def _warm_renderer(fmt: Enum) -> None:
    """Import the renderer and the rules while the probes run, so they cost nothing after."""
    import importlib

    from envdoctor.render.registry import warm

    warm(fmt.value)
    importlib.import_module("envdoctor.rules")


OFFLINE_HELP = "Ask nothing of the network: no check that an index answers (also ENVDOCTOR_OFFLINE=1)."


def _live_report_inputs(
    python: str | None,
    timeout: float,
    fmt: Enum = OutputFormat.json,
    probes: Sequence[ProbeSpec[Any]] | None = None,
    smoke: bool = True,
    smoke_size: int | None = None,
    offline: bool = False,
    details: bool = False,
    progress: Progress | None = None,
) -> tuple[PlatformInfo, Interpreter, tuple[ProbeResult, ...]]:
    from envdoctor import lifecycle
    from envdoctor.engine import run_probes
    from envdoctor.host.live import LiveHost
    from envdoctor.probes import PROBES, CheckOptions, ProbeContext
    from envdoctor.target import TargetError, start_target, through_shim

    host = LiveHost()
    deadline = lifecycle.deadline(timeout)  # every limit below derives from --timeout
    try:
        target = start_target(host, python, lifecycle.question_timeout(deadline))
    except TargetError as exc:
        fail(str(exc))
    deadline = lifecycle.probes_until(deadline)
    options = CheckOptions(
        smoke=smoke,
        smoke_size=smoke_size,
        timeout=timeout,
        offline=offline,
        details=details,
        deadline=deadline,
    )
    ctx = ProbeContext(host=host, target=target, options=options)
    chosen = PROBES if probes is None else probes
    if not details:  # what only a bug report needs is not collected for a check
        chosen = tuple(p for p in chosen if not p.on_request)
    watch = progress.watch if progress is not None else None
    results = run_probes(ctx, chosen, while_waiting=lambda: _warm_renderer(fmt), watch=watch)
    try:
        target.info  # noqa: B018 - an interpreter that did not answer is exit 2, not a finding
    except TargetError as exc:
        fail(str(exc))
    return host.platform(), through_shim(target.interpreter, target.info), results


def _write(text: str, output: str | None) -> None:
    if output is None:
        from envdoctor.stream_text import for_stream

        sys.stdout.write(for_stream(text, sys.stdout))
        sys.stdout.flush()
        return
    from envdoctor.limits import open_output

    try:
        with open_output(output) as handle:  # a FIFO nobody reads is an error, not a hang
            handle.write(text)
    except OSError as exc:
        fail(f"--output {output}: cannot be written ({exc.strerror or exc})")


@app.command(help=COMMAND_HELP["check"])
@check_options
def check(
    fmt: ReportFormat = typer.Option(
        ReportFormat.console,
        "--format",
        "-f",
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
    ),
    from_snapshot: Optional[str] = typer.Option(
        None, "--from", help="Diagnose a snapshot written by `envdoctor snapshot` instead."
    ),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds the whole check may take."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show the facts behind each area."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Write the report to FILE."),
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

    _check_timeout(timeout)
    _check_smoke_size(smoke_size)
    settings = settings_for(requested or {}, fail)
    if from_snapshot is not None:
        if python is not None:
            fail("--from and --python cannot be combined: a snapshot already names its interpreter")
        if no_smoke or smoke_size is not None:
            fail("--from cannot be combined with --no-smoke or --smoke-size: the snapshot already holds one")
        from envdoctor.snapshot import SnapshotError, load

        try:
            snap = load(from_snapshot)
        except SnapshotError as exc:
            fail(str(exc))
        report = judge(snap.platform, snap.interpreter, snap.probes, settings, source=from_snapshot)
    else:
        from envdoctor.progress import Progress, wanted

        shown = wanted(sys.stderr, os.environ, console_format=fmt is ReportFormat.console)
        with Progress(sys.stderr) if shown else contextlib.nullcontext() as progress:
            inputs = _live_report_inputs(
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
    emit(report, fmt, verbose, output, _write)
    raise typer.Exit(report.exit_code)


@app.command(help=COMMAND_HELP["snapshot"])
def snapshot(
    output: Optional[str] = typer.Option(None, "--output", "-o", help="File to write (default: stdout)."),
    python: Optional[str] = typer.Option(None, "--python", help="The interpreter to examine."),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds the probes may take."),
    description: str = typer.Option("", "--description", help="A note stored in the snapshot."),
    no_smoke: bool = typer.Option(False, "--no-smoke", help="Skip the smoke test."),
    smoke_size: Optional[int] = typer.Option(
        None, "--smoke-size", metavar="N", help="Smoke-test matrix size (see `check --help`)."
    ),
    offline: bool = typer.Option(False, "--offline", help=OFFLINE_HELP),
) -> None:
    from envdoctor.snapshot import Snapshot, dumps

    _check_timeout(timeout)
    _check_smoke_size(smoke_size)
    platform, interpreter, probes = _live_report_inputs(
        python, timeout, smoke=not no_smoke, smoke_size=smoke_size, offline=offline, details=True
    )
    text = dumps(Snapshot(platform, interpreter, probes, description=description))
    _write(text, output)
    if output is not None:
        typer.echo(f"envdoctor: snapshot written to {output}", err=True)


@app.command("report", help=COMMAND_HELP["report"])
def bug_report(
    fmt: BugReportFormat = typer.Option(
        BugReportFormat.markdown,
        "--format",
        "-f",
        help="markdown, or json for the snapshot.",
        case_sensitive=False,
    ),
    python: Optional[str] = typer.Option(None, "--python", help="The interpreter to examine."),
    from_snapshot: Optional[str] = typer.Option(None, "--from", help="Report on a snapshot instead."),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds the probes may take."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Write the report to FILE."),
    offline: bool = typer.Option(False, "--offline", help=OFFLINE_HELP),
) -> None:
    import os

    from envdoctor.bug_report import render_report
    from envdoctor.snapshot import Snapshot, SnapshotError, load

    _check_timeout(timeout)
    if from_snapshot is not None:
        if python is not None:
            fail("--from and --python cannot be combined: a snapshot already names its interpreter")
        try:
            snap = load(from_snapshot)
        except SnapshotError as exc:
            fail(str(exc))
    else:
        snap = Snapshot(*_live_report_inputs(python, timeout, fmt, offline=offline, details=True))
    _write(render_report(snap, fmt.value, os.environ, source=from_snapshot or "live"), output)


# rules, explain and install: their bodies are cli_lean's, which also answers them without typer.
@app.command("rules", help=COMMAND_HELP["rules"])
def list_rules(
    fmt: OutputFormat = typer.Option(OutputFormat.console, "--format", "-f", case_sensitive=False),
) -> None:
    from envdoctor.cli_lean import list_rules as body

    _write(body(fmt.value), None)


@app.command(help=COMMAND_HELP["explain"])
def explain(code: str = typer.Argument(..., help="A rule code such as ED101, or its name.")) -> None:
    from envdoctor.cli_lean import CommandError
    from envdoctor.cli_lean import explain as body

    try:
        text = body(code)
    except CommandError as exc:
        fail(str(exc))
    _write(text, None)


class Manager(str, Enum):
    pip = "pip"
    uv = "uv"
    conda = "conda"


@app.command(help=COMMAND_HELP["install"])
def install(
    torch: Optional[str] = typer.Option(
        None, "--torch", help="A release (2.5.1) or series (2.5); default: the newest that fits."
    ),
    cuda: Optional[str] = typer.Option(
        None, "--cuda", help="auto, cpu, a CUDA version (12.4), a variant (cu126) or rocmX.Y; default: auto."
    ),
    os_name: Optional[str] = typer.Option(
        None, "--os", help="linux, windows or macos; default: this machine's."
    ),
    arch: Optional[str] = typer.Option(
        None, "--arch", help="x86_64 or aarch64/arm64; default: this machine's."
    ),
    python: Optional[str] = typer.Option(
        None,
        "--python",
        help="A Python version (3.11) or the interpreter to install into; default: as `check`.",
    ),
    driver: Optional[str] = typer.Option(
        None, "--driver", help="An NVIDIA driver version (535.104.05), to plan for another machine."
    ),
    gpu: list[str] = typer.Option(
        [],
        "--gpu",
        help="A GPU name (RTX 3090, RX 7900 XTX, Arc A770), compute capability (sm_86, 8.6), gfx "
        "target (gfx1100) or xpu; repeat for several.",
    ),
    manager: Optional[Manager] = typer.Option(
        None, "--manager", "-m", help="pip (default), uv or conda.", case_sensitive=False
    ),
    mirror: Optional[str] = typer.Option(
        None,
        "--mirror",
        help="tuna, aliyun, sjtu, nju, ... or an index URL; default: pip's configured index.",
    ),
    fmt: OutputFormat = typer.Option(
        OutputFormat.console, "--format", "-f", help="Output format.", case_sensitive=False
    ),
    offline: bool = typer.Option(
        False, "--offline", help="Ask nothing of the network (no check that an index answers)."
    ),
) -> None:
    from envdoctor.cli_lean import CommandError
    from envdoctor.cli_lean import install as body

    options = {
        "torch": torch,
        "cuda": cuda,
        "os_name": os_name,
        "arch": arch,
        "python": python,
        "driver": driver,
        "gpu": gpu,
        "manager": manager.value if manager else None,
        "mirror": mirror,
        "offline": offline,
    }
    try:
        text, code = body(options, fmt.value)
    except CommandError as exc:
        fail(str(exc))
    _write(text, None)
    raise typer.Exit(code)


register_update(app, fail)
# fix: its options and body live in cli_fix.py; registered here, after install, as the help lists it.
app.command("fix", help=COMMAND_HELP["fix"])(_cli_fix.fix)

# `fleet` (many snapshots) and `cluster` (a launched job) live in their own module.
from envdoctor import cli_fleet  # noqa: E402

cli_fleet.register(app)


# Below these widths typer's rich help cuts option names ("--require-…"): click's own formatter
# wraps the help text instead and never cuts a name. The root page fits from cli_help.MIN_WIDTH.
COMMAND_HELP_MIN_WIDTH = 80


def _help_width() -> int:
    """The width typer's help is drawn for: TERMINAL_WIDTH, COLUMNS, else the terminal's."""
    import shutil

    from envdoctor.limits import small_int

    for name in ("TERMINAL_WIDTH", "COLUMNS"):
        value = small_int(os.environ.get(name, ""))
        if value:
            return value
    return shutil.get_terminal_size().columns


# The click command, built from the app once per process with each (sub)command's own markup mode:
# a program or test that calls main() again reuses it (typer builds it in about 13 ms here).
_BUILT: list[tuple[Any, dict[Any, Any]]] = []


def _command() -> Any:
    """The click command of the app; on a narrow terminal with plain help where rich's would cut."""
    from envdoctor.cli_help import MIN_WIDTH

    if not _BUILT:
        built = typer.main.get_command(app)
        subs = getattr(built, "commands", {}).values()
        _BUILT.append((built, {sub: getattr(sub, "rich_markup_mode", None) for sub in (built, *subs)}))
    command, markup = _BUILT[0]
    width = _help_width()
    for sub, mode in markup.items():
        narrow = width < (MIN_WIDTH if sub is command else COMMAND_HELP_MIN_WIDTH)
        sub.rich_markup_mode = None if narrow else mode
    return command


def main() -> None:
    """Entry point: usage errors become one line and exit 2, never a traceback."""
    from envdoctor.stream_text import protect_standard_streams

    protect_standard_streams()
    try:
        rc = _command()(standalone_mode=False)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:
        # Click's exceptions (typer vendors click in newer releases, so match by shape, not class).
        if type(exc).__name__ == "NoArgsIsHelpError":  # the help was already printed
            sys.exit(0)
        if type(exc).__name__ == "Abort":
            sys.exit(130)
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            ctx = getattr(exc, "ctx", None)
            hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
            from envdoctor.redact import one_line

            typer.echo(f"envdoctor: error: {one_line(exc.format_message())}{hint}", err=True)
            sys.exit(EXIT_USAGE)
        from envdoctor.lifecycle import internal_error

        sys.exit(internal_error(exc))
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    main()
