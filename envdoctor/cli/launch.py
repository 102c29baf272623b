"""The console entry point: quick commands answer without typer; a live `check` starts torch first.

`--help`, `explain`, `rules` and `install` print plain text, and importing typer and rich would
cost more than their whole start-up budget: cli_lean answers them when the command line is one it
can parse exactly as click would, and leaves everything else to the typer app in cli.py.

Importing torch in the examined interpreter is the floor of a check (about a second); the CLI
framework, the probes and the rules take a few hundred milliseconds more to import. Starting the
torch child first lets all of that hide behind it. The probe later adopts the running child when
it asks for exactly the same interpreter and arguments; otherwise the child is killed at exit.
"""

from __future__ import annotations

import os
import sys

# Options that change which interpreter is examined or how the torch child runs: with any of them
# the early start is skipped and the probe starts its own child as usual.
_NOT_EARLY = ("--from", "--python", "--timeout", "--no-smoke", "--smoke-size", "--only", "--skip", "--config")


def _early_torch_child(argv: list[str]) -> None:
    if not argv or argv[0] != "check":
        return
    if any(a in ("-h", "--help") or a.split("=", 1)[0] in _NOT_EARLY for a in argv[1:]):
        return
    from envdoctor.host.live import LiveHost, start_early
    from envdoctor.probes.base import CheckOptions
    from envdoctor.probes.torch_build import child_args, child_timeout
    from envdoctor.target import choose_interpreter

    options = CheckOptions()
    interpreter = choose_interpreter(LiveHost(), None)
    start_early(interpreter.path, "torch_probe.py", child_args(options, child_timeout(options)))


def _quick(argv: list[str]) -> None:
    """Answer a quick command and exit, or return for the typer app to handle argv."""
    from envdoctor.cli.lean import answer
    from envdoctor.util.stream_text import for_stream

    try:
        answered = answer(argv)
        if answered is None:
            return
        out, err, code = answered
        sys.stdout.write(for_stream(out, sys.stdout))
        sys.stdout.flush()
        sys.stderr.write(err)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:  # a bug in the quick path: one line, never a traceback
        from envdoctor.util.lifecycle import internal_error

        sys.exit(internal_error(exc))
    sys.exit(code)


def main() -> None:
    from envdoctor.util import lifecycle
    from envdoctor.util.limits import small_int
    from envdoctor.util.stream_text import protect_standard_streams

    protect_standard_streams()  # a cp1252 or ASCII stdout still prints every command

    lifecycle.install()  # first: children are killed on every way out, a closed stdout is quiet
    # typer makes TERMINAL_WIDTH an int when it loads: "²" or "abc" there would crash --help.
    if os.environ.get("TERMINAL_WIDTH") and small_int(os.environ["TERMINAL_WIDTH"]) is None:
        del os.environ["TERMINAL_WIDTH"]
    try:
        argv = sys.argv[1:]
        if argv[:1] == ["check"]:
            _early_torch_child(argv)
        else:
            _quick(argv)
        from envdoctor.cli.root import main as cli_main

        cli_main()
    except KeyboardInterrupt:  # Ctrl-C (or SIGTERM/SIGHUP) before the CLI could catch it
        sys.exit(lifecycle.EXIT_INTERRUPTED)
    finally:
        lifecycle.closing()  # a signal during exit and clean-up still ends with 130, not a traceback


if __name__ == "__main__":
    main()
