"""What the commands share: one-line failures, option checks, the live probes, writing output."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from enum import Enum
from typing import TYPE_CHECKING, Any, NoReturn

import typer

if TYPE_CHECKING:
    from envdoctor.model.findings import Interpreter, PlatformInfo, ProbeResult
    from envdoctor.probes.base import ProbeSpec
    from envdoctor.progress import Progress

EXIT_USAGE = 2


class OutputFormat(str, Enum):
    console = "console"
    json = "json"


def fail(message: str) -> NoReturn:
    """One line on stderr and exit 2: envdoctor could not do what was asked."""
    from envdoctor.util.redact import one_line

    typer.echo(f"envdoctor: error: {one_line(message)}", err=True)
    raise typer.Exit(EXIT_USAGE)


def check_timeout(timeout: float) -> None:
    if not 1 <= timeout <= 3600:
        fail(f"--timeout {timeout:g}: expected seconds between 1 and 3600")


SMOKE_SIZES = (16, 16384)  # the child's own limits (child/torch_probe.py MIN_SIZE, MAX_SIZE)


def check_smoke_size(size: int | None) -> None:
    low, high = SMOKE_SIZES
    if size is not None and not low <= size <= high:
        fail(f"--smoke-size {size}: expected a matrix size between {low} and {high}")


def warm_renderer(fmt: Enum) -> None:
    """Import the renderer and the rules while the probes run, so they cost nothing after."""
    import importlib

    from envdoctor.render.registry import warm

    warm(fmt.value)
    importlib.import_module("envdoctor.rules")


OFFLINE_HELP = "Ask nothing of the network: no check that an index answers (also ENVDOCTOR_OFFLINE=1)."


def live_report_inputs(
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
    from envdoctor.engine import run_probes
    from envdoctor.host.live import LiveHost
    from envdoctor.probes import PROBES, CheckOptions, ProbeContext
    from envdoctor.target import TargetError, start_target, through_shim
    from envdoctor.util import lifecycle

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
    results = run_probes(ctx, chosen, while_waiting=lambda: warm_renderer(fmt), watch=watch)
    try:
        target.info  # noqa: B018 - an interpreter that did not answer is exit 2, not a finding
    except TargetError as exc:
        fail(str(exc))
    return host.platform(), through_shim(target.interpreter, target.info), results


def write(text: str, output: str | None) -> None:
    if output is None:
        from envdoctor.util.stream_text import for_stream

        sys.stdout.write(for_stream(text, sys.stdout))
        sys.stdout.flush()
        return
    from envdoctor.util.limits import open_output

    try:
        with open_output(output) as handle:  # a FIFO nobody reads is an error, not a hang
            handle.write(text)
    except OSError as exc:
        fail(f"--output {output}: cannot be written ({exc.strerror or exc})")
