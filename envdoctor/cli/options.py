"""`check`'s expectation, policy and CI-format plumbing, kept out of cli.py.

`check_options` adds the --require-*, --config, --strict, --ignore, --only and --skip options to a
typer command and hands them over as one `requested` mapping; `settings_for` turns that (with the
config file) into validated Settings or one clear line and exit 2; `emit` renders in any format.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Callable, Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any, List, Optional

import typer

from envdoctor.ci import is_ci

if TYPE_CHECKING:
    from envdoctor.model.findings import Report
    from envdoctor.settings import Settings


class ReportFormat(str, Enum):
    """check's --format choices: the formats of envdoctor/render/registry.py's table."""

    console = "console"
    json = "json"
    markdown = "markdown"
    github = "github"
    junit = "junit"


class BugReportFormat(str, Enum):
    markdown = "markdown"
    json = "json"


_REQUIRE = "Expectations (also from envdoctor.toml or [tool.envdoctor])"

# (parameter, annotation, option): the key is the option name without "--".
_OPTIONS: tuple[tuple[str, Any, Any], ...] = (
    (
        "config",
        Optional[str],
        typer.Option(
            None,
            "--config",
            help="Read settings from this TOML file (default: ./envdoctor.toml, else the "
            "tool.envdoctor table of ./pyproject.toml). Command-line options win.",
            rich_help_panel=_REQUIRE,
            metavar="FILE",
        ),
    ),
    (
        "require_gpu",
        Optional[bool],
        typer.Option(
            None,
            "--require-gpu/--no-require-gpu",
            help="Fail unless torch can use a GPU.",
            rich_help_panel=_REQUIRE,
        ),
    ),
    (
        "min_gpus",
        Optional[str],
        typer.Option(
            None,
            "--min-gpus",
            metavar="N",
            help="Fail unless torch sees at least N GPUs.",
            rich_help_panel=_REQUIRE,
        ),
    ),
    (
        "require_cuda",
        Optional[str],
        typer.Option(
            None,
            "--require-cuda",
            metavar="SPEC",
            help='torch\'s CUDA version, e.g. ">=12.1".',
            rich_help_panel=_REQUIRE,
        ),
    ),
    (
        "require_torch",
        Optional[str],
        typer.Option(
            None,
            "--require-torch",
            metavar="SPEC",
            help='torch\'s version, e.g. ">=2.4,<2.6".',
            rich_help_panel=_REQUIRE,
        ),
    ),
    (
        "require_capability",
        Optional[str],
        typer.Option(
            None,
            "--require-capability",
            metavar="SPEC",
            help='Every GPU\'s compute capability, e.g. ">=8.0".',
            rich_help_panel=_REQUIRE,
        ),
    ),
    (
        "min_gpu_memory",
        Optional[str],
        typer.Option(
            None,
            "--min-gpu-memory",
            metavar="SIZE",
            help="Every GPU's memory, e.g. 24GiB.",
            rich_help_panel=_REQUIRE,
        ),
    ),
    (
        "require_smoke",
        Optional[bool],
        typer.Option(
            None,
            "--require-smoke/--no-require-smoke",
            help="Fail unless the GPU smoke test passed.",
            rich_help_panel=_REQUIRE,
        ),
    ),
    (
        "strict",
        Optional[bool],
        typer.Option(None, "--strict/--no-strict", help="Treat warnings as failures (exit 1)."),
    ),
    (
        "ignore",
        Optional[List[str]],
        typer.Option(None, "--ignore", metavar="CODES", help="Silence rules: ED203,ED210 (repeatable)."),
    ),
    (
        "only",
        Optional[List[str]],
        typer.Option(None, "--only", metavar="PROBES", help="Run only these probes: nvml,torch."),
    ),
    (
        "skip",
        Optional[List[str]],
        typer.Option(None, "--skip", metavar="PROBES", help="Do not run these probes."),
    ),
    (
        "plugins",
        Optional[bool],
        typer.Option(
            None,
            "--plugins/--no-plugins",
            help="Run the rules and probes of installed plugin packages (default; "
            "ENVDOCTOR_NO_PLUGINS=1 also turns them off).",
        ),
    ),
)


def check_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add the options above to `func`'s signature; it receives them as `requested`, keyed by key."""
    signature = inspect.signature(func)
    own = [p for p in signature.parameters.values() if p.name != "requested"]
    extra = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)
        for name, annotation, option in _OPTIONS
    ]

    @functools.wraps(func)
    def wrapper(**kwargs: Any) -> Any:
        requested = {name.replace("_", "-"): kwargs.pop(name) for name, _, _ in _OPTIONS}
        return func(**kwargs, requested=requested)

    wrapper.__signature__ = signature.replace(parameters=[*own, *extra])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {
        **{k: v for k, v in func.__annotations__.items() if k != "requested"},
        **{name: annotation for name, annotation, _ in _OPTIONS},
    }
    return wrapper


def settings_for(requested: Mapping[str, Any], fail: Callable[[str], Any]) -> Settings:
    """Validated settings from the options and the config file; `fail` (one line, exit 2) otherwise."""
    from envdoctor.engine import registry_names
    from envdoctor.settings import SettingsError, resolve

    options = {k: v for k, v in requested.items() if k != "config"}
    for key in ("ignore", "only", "skip"):  # repeated options: one comma-separated list
        if options.get(key) is not None:
            options[key] = ",".join(options[key])
    try:
        cwd = os.getcwd()
    except OSError:  # the working folder was deleted: it holds no config file any more
        cwd = os.curdir
    try:
        names = registry_names(plugins=requested.get("plugins") is not False)
        return resolve(options, cwd=cwd, names=names, config=requested.get("config"))
    except SettingsError as exc:
        return fail(str(exc))  # type: ignore[no-any-return]


def render(report: Report, fmt: ReportFormat, verbose: bool = False) -> str:
    """The report as text in any format; the console format without colour codes."""
    from envdoctor.render.registry import render as render_format

    return render_format(report, fmt.value, verbose)


def emit(
    report: Report,
    fmt: ReportFormat,
    verbose: bool,
    output: str | None,
    write: Callable[[str, str | None], None],
    env: Mapping[str, str] = os.environ,
) -> None:
    """Render `report` to stdout or `output`; the github format also fills $GITHUB_STEP_SUMMARY."""
    if fmt is ReportFormat.console and output is None and not is_ci(env):
        from envdoctor.render.console import make_console, render_console, wraps

        console = make_console()
        render_console(report, console, verbose, wrap=wraps(console, env))
    else:  # files, other formats, and CI logs: plain text, no colour codes, nothing animated
        write(render(report, fmt, verbose), output)
    summary = env.get("GITHUB_STEP_SUMMARY")
    if fmt is ReportFormat.github and summary:
        append_step_summary(report, summary)


def append_step_summary(report: Report, path: str) -> None:
    """Append the Markdown report to GitHub's job summary; a failure to do so costs a warning only."""
    from envdoctor.render.markdown import render_markdown
    from envdoctor.util.limits import open_output

    try:
        with open_output(path, append=True) as handle:
            handle.write(render_markdown(report) + "\n")
    except OSError as exc:
        from envdoctor.util.redact import one_line

        sys.stderr.write(
            "envdoctor: warning: "
            + one_line(f"cannot append to $GITHUB_STEP_SUMMARY {path} ({exc.strerror or exc})")
            + "\n"
        )
