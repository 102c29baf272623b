"""The console entry point: for a live `check`, the torch child starts before anything else loads.

Importing torch in the examined interpreter is the floor of a check (about a second); the CLI
framework, the probes and the rules take a few hundred milliseconds more to import. Starting the
torch child first lets all of that hide behind it. The probe later adopts the running child when
it asks for exactly the same interpreter and arguments; otherwise the child is killed at exit.
"""

from __future__ import annotations

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


def main() -> None:
    from envdoctor import lifecycle

    lifecycle.install()  # first: children are killed on every way out, a closed stdout is quiet
    _early_torch_child(sys.argv[1:])
    from envdoctor.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
