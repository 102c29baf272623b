"""The command line: options -> engine -> renderer -> exit code. No diagnosis logic lives here.

The typer app and its entry point; each command lives in its own module of this package and is
registered here, in the order the help lists them. Exit codes: 0 healthy (warnings allowed unless
--strict), 1 problems found, 2 envdoctor could not run as asked (bad option, unreadable input, an
interpreter that does not run), 130 interrupted.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import typer

from envdoctor.cli import check as check_command
from envdoctor.cli import explain as explain_command
from envdoctor.cli import fix as fix_command
from envdoctor.cli import fleet as fleet_command
from envdoctor.cli import install as install_command
from envdoctor.cli import update as update_command
from envdoctor.cli import validate as validate_command
from envdoctor.cli import why as why_command
from envdoctor.cli.help import COMMAND_HELP, ROOT_HELP, VERSION_HELP
from envdoctor.cli.shared import EXIT_USAGE, fail
from envdoctor.version import __version__

# The help texts live in cli/help.py, which draws the root page without typer (see cli/launch.py).
app = typer.Typer(
    name="envdoctor",
    help=ROOT_HELP,
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)


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


app.command(help=COMMAND_HELP["check"])(check_command.check)
app.command(help=COMMAND_HELP["why"])(why_command.why)
app.command(help=COMMAND_HELP["snapshot"])(check_command.snapshot)
app.command("report", help=COMMAND_HELP["report"])(check_command.bug_report)
app.command("rules", help=COMMAND_HELP["rules"])(explain_command.list_rules)
app.command(help=COMMAND_HELP["explain"])(explain_command.explain)
app.command(help=COMMAND_HELP["validate"])(validate_command.validate)
app.command(help=COMMAND_HELP["install"])(install_command.install)
update_command.register(app, fail)
app.command("fix", help=COMMAND_HELP["fix"])(fix_command.fix)
fleet_command.register(app)


# Below these widths typer's rich help cuts option names ("--require-…"): click's own formatter
# wraps the help text instead and never cuts a name. The root page fits from cli_help.MIN_WIDTH.
COMMAND_HELP_MIN_WIDTH = 80


def _help_width() -> int:
    """The width typer's help is drawn for: TERMINAL_WIDTH, COLUMNS, else the terminal's."""
    import shutil

    from envdoctor.util.limits import small_int

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
    from envdoctor.cli.help import MIN_WIDTH

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
    from envdoctor.util.stream_text import protect_standard_streams

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
            from envdoctor.util.redact import one_line

            typer.echo(f"envdoctor: error: {one_line(exc.format_message())}{hint}", err=True)
            sys.exit(EXIT_USAGE)
        from envdoctor.util.lifecycle import internal_error

        sys.exit(internal_error(exc))
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    main()
