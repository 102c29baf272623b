"""The quick commands without typer or rich: the root `--help`, `explain`, `rules` and `install`.

Importing typer and rich takes most of the start-up budget of these commands, which print plain
text. The launcher asks `answer` first; it handles a command line only when it is complete and
valid by the same rules click applies, and returns None otherwise (a typo, `--help` of a command,
a missing value, shell completion...), so that typer answers with its own words. The command
bodies live here too, and cli.py's typer commands call the same ones: one implementation each.
tests/test_cli_lean.py holds the options here equal to typer's and both paths' output equal.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

EXIT_USAGE = 2


class CommandError(Exception):
    """envdoctor could not do what was asked: one line on stderr, exit 2."""


# --- command bodies (shared with cli.py) ------------------------------------------------------------


def explain(code: str, environ: Mapping[str, str] = os.environ) -> str:
    from envdoctor import rule_catalogue

    entries = _with_plugins(rule_catalogue.load(environ), environ)
    entry = rule_catalogue.find(entries, code)
    if entry is None:
        close = rule_catalogue.suggest(entries, code)
        hint = f"did you mean {close}? " if close else ""
        raise CommandError(f"unknown rule {code!r}; {hint}expected a code like ED101 (see `envdoctor rules`)")
    return rule_catalogue.explain_text(entry, _width(environ))


def _with_plugins(entries: Sequence[Any], environ: Mapping[str, str]) -> tuple[Any, ...]:
    """envdoctor's rules, then the plugins' (by code); a clash between plugins is one line."""
    from envdoctor import rule_catalogue

    if not rule_catalogue.plugins_declared(environ):
        return tuple(entries)  # the common case: nothing more to import
    from envdoctor.settings import SettingsError

    try:
        extra = rule_catalogue.plugin_entries(environ)
    except SettingsError as exc:  # PluginError
        raise CommandError(str(exc)) from None
    return (*entries, *sorted(extra))


def _width(environ: Mapping[str, str]) -> int:
    """The terminal's width (or COLUMNS), else the classic 80: `rules` and `explain` always fit."""
    from envdoctor.util.textwidth import DEFAULT_WIDTH, terminal_width

    return terminal_width(environ) or DEFAULT_WIDTH


def list_rules(fmt: str, environ: Mapping[str, str] = os.environ) -> str:
    from envdoctor import rule_catalogue

    entries = _with_plugins(rule_catalogue.load(environ), environ)
    if fmt == "json":
        return rule_catalogue.rules_json(entries)
    return rule_catalogue.rules_text(entries, _width(environ))


def install(options: Mapping[str, Any], fmt: str) -> tuple[str, int]:
    """The plan's text and exit code: 0 a command was found, 1 no build fits."""
    from envdoctor.host.live import LiveHost, discard_early, start_early

    if _asks_this_machines_gpus(options):
        # The NVML query is a child process (a Python start and pynvml, ~0.1 s): started now, it
        # runs while the planner is imported, and the NVML probe adopts it (same interpreter,
        # script and arguments; an unadopted one is killed at exit).
        start_early(sys.executable, "nvml_probe.py", ())
    from envdoctor.install.session import Given, RequestError, run
    from envdoctor.render.install_report import render_json, render_text

    given = Given(
        torch=options.get("torch"),
        cuda=options.get("cuda"),
        os=options.get("os_name"),
        arch=options.get("arch"),
        python=options.get("python"),
        driver=options.get("driver"),
        gpus=tuple(options.get("gpu") or ()),
        manager=options.get("manager"),
        mirror=options.get("mirror"),
        offline=bool(options.get("offline")),
    )
    try:
        session = run(given, LiveHost())
    except RequestError as exc:
        raise CommandError(str(exc)) from None
    finally:
        # A request refused before the probe ran leaves the early child unadopted: a later install
        # in this process (a program, a test) must start its own, not take this one's stale clock.
        discard_early()
    render = render_json if fmt == "json" else render_text
    return render(session.plan, session.inputs, session.target.os), 0 if session.plan.possible else 1


def _asks_this_machines_gpus(options: Mapping[str, Any]) -> bool:
    """The plan surely queries this machine's NVIDIA driver (session.build's `want_gpu`): no
    --driver, and no --os, --arch or --cuda that could make it another machine or a non-CUDA
    build. macOS has no NVIDIA driver: the probe does not start the child there."""
    if sys.platform == "darwin":
        return False
    return not any(options.get(name) for name in ("driver", "os_name", "arch", "cuda"))


# --- the options these commands take, as typer declares them in cli.py ------------------------------


class Opt:
    """One option: its parameter name, its flags, its choices (case-insensitive); it takes one value,
    or none when it is a switch (`is_flag`: present means True)."""

    __slots__ = ("choices", "dest", "flags", "is_flag", "multiple")

    def __init__(
        self,
        dest: str,
        flags: tuple[str, ...],
        choices: tuple[str, ...] = (),
        multiple: bool = False,
        is_flag: bool = False,
    ) -> None:
        self.dest = dest
        self.flags = flags
        self.choices = choices
        self.multiple = multiple
        self.is_flag = is_flag


_FORMATS = ("console", "json")
OPTIONS: dict[str, tuple[Opt, ...]] = {
    "rules": (Opt("fmt", ("--format", "-f"), _FORMATS),),
    "install": (
        Opt("torch", ("--torch",)),
        Opt("cuda", ("--cuda",)),
        Opt("os_name", ("--os",)),
        Opt("arch", ("--arch",)),
        Opt("python", ("--python",)),
        Opt("driver", ("--driver",)),
        Opt("gpu", ("--gpu",), multiple=True),
        Opt("manager", ("--manager", "-m"), ("pip", "uv", "conda")),
        Opt("mirror", ("--mirror",)),
        Opt("fmt", ("--format", "-f"), _FORMATS),
        Opt("offline", ("--offline",), is_flag=True),
    ),
}


def parse(args: Sequence[str], options: Sequence[Opt]) -> dict[str, Any] | None:
    """The values of `args`, or None for anything this parser leaves to click.

    It takes `--name VALUE`, `--name=VALUE`, `-x VALUE` and `-xVALUE`; the last of a repeated
    option wins unless it is `multiple`; a choice is matched case-insensitively and stored as
    declared. A value that starts with "-", a positional argument, an unknown option or a bad
    choice is left to click, which accepts or explains it in its own words.
    """
    by_flag = {flag: opt for opt in options for flag in opt.flags}
    values: dict[str, Any] = {}
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        value: str | None = None
        if arg.startswith("--") and "=" in arg:
            arg, value = arg.split("=", 1)
        elif len(arg) > 2 and arg[0] == "-" and arg[1] != "-":
            arg, value = arg[:2], arg[2:]
        opt = by_flag.get(arg)
        if opt is None:
            return None
        if opt.is_flag:
            if value is not None:  # --offline=yes: click's to refuse
                return None
            values[opt.dest] = True
            continue
        if value is None:
            if not rest:
                return None
            value = rest.pop(0)
        if value.startswith("-"):
            return None
        if opt.choices:
            matched = [c for c in opt.choices if c.lower() == value.lower()]
            if not matched:
                return None
            value = matched[0]
        if opt.multiple:
            values.setdefault(opt.dest, []).append(value)
        else:
            values[opt.dest] = value
    return values


# --- the dispatcher -----------------------------------------------------------------------------


def _utf8_stdout() -> bool:
    # click re-encodes output for a stream it calls misconfigured (ASCII); typer keeps those cases.
    import codecs

    encoding = getattr(sys.stdout, "encoding", None)
    try:
        return encoding is not None and codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


def _completing(environ: Mapping[str, str]) -> bool:
    """Shell completion (click's _PROG_COMPLETE variable) is click's to answer."""
    return any(name.startswith("_") and name.endswith("_COMPLETE") for name in environ)


def _help(args: Sequence[str], environ: Mapping[str, str]) -> str | None:
    from envdoctor.cli import help as cli_help

    try:
        isatty = sys.stdout.isatty()
    except ValueError:  # a closed stream: rich calls it no terminal, but leave such cases to typer
        return None
    console = cli_help.decide(environ, isatty, cli_help.terminal_width())
    if console is None:
        return None
    main = sys.modules.get("__main__")
    text = cli_help.page(cli_help.program_name(sys.argv[0], getattr(main, "__package__", None)), console)
    # Without arguments click prints the page as an error's message: without the last blank line.
    return text if args else text[:-1]


def answer(argv: Sequence[str], environ: Mapping[str, str] = os.environ) -> tuple[str, str, int] | None:
    """(stdout, stderr, exit code) for a command line this module handles, else None."""
    if _completing(environ) or not _utf8_stdout():
        return None
    if list(argv) == ["--version"]:
        from envdoctor.version import __version__

        return f"envdoctor {__version__}\n", "", 0
    if not argv or list(argv) == ["--help"]:
        page = _help(argv, environ)
        return None if page is None else (page, "", 0)
    command, args = argv[0], argv[1:]
    try:
        if command == "explain":
            if len(args) != 1 or args[0].startswith("-"):
                return None
            return explain(args[0], environ), "", 0
        if command == "rules":
            values = parse(args, OPTIONS["rules"])
            return None if values is None else (list_rules(values.get("fmt", "console"), environ), "", 0)
        if command == "install":
            values = parse(args, OPTIONS["install"])
            if values is None:
                return None
            text, code = install(values, values.get("fmt", "console"))
            return text, "", code
    except CommandError as exc:
        from envdoctor.util.redact import one_line  # as cli.fail: one line, credentials masked

        return "", f"envdoctor: error: {one_line(str(exc))}\n", EXIT_USAGE
    return None
