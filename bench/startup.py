"""Start-up of the quick commands next to bare Python and to importing typer and rich, in one run.

    python bench/startup.py [--rounds 21] [--baseline SRC]

Runs every command interleaved, round after round (bench/timing.py), so drifting machine load hits
them alike, and prints each one's median with its ratio to `python -c pass` (the floor) and to
`python -c "import typer, rich"` (what the quick commands no longer pay). Budget: 100 ms median
each. `rules` and `explain` read the rule catalogue from envdoctor's cache folder (a temporary one
here); the warm-up run fills it, as the first run after an install or an edit does. That first run
is shown too, with a cache folder that cannot be written: it imports every rule.

envdoctor's bytecode is compiled first, as `pip install` does (bench/timing.py says why). The
install rows pass --offline: this bench measures start-up, and bench/install_sources.py measures
what the reachability check adds (a DNS lookup alone can take longer than this whole budget).
`--baseline SRC` adds the
same commands run from another source tree (say `git worktree add /tmp/base main`), interleaved
with these, for a before/after in one run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile

from timing import compile_bytecode, envdoctor_package, interleaved

BUDGET_S = 0.100


def envdoctor() -> list[str]:
    """The console script next to this interpreter, as users run it; else `python -m envdoctor`."""
    script = os.path.join(os.path.dirname(sys.executable), "envdoctor")
    return [script] if os.path.isfile(script) else [sys.executable, "-m", "envdoctor"]


def commands(baseline: str | None) -> dict[str, list[str]]:
    ours = envdoctor_commands([])
    listed = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import typer, rich": [sys.executable, "-c", "import typer, rich"],
        **ours,
    }
    if baseline is not None:
        # PYTHONPATH comes before the editable install's finder: the console script runs SRC's code.
        before = envdoctor_commands(["env", f"PYTHONPATH={baseline}"])
        listed.update({f"{name} [baseline]": argv for name, argv in before.items()})
    return listed


def envdoctor_commands(prefix: list[str]) -> dict[str, list[str]]:
    run = [*prefix, *envdoctor()]
    # Another machine: a Python this interpreter is not (issue 23 §4), so no local source is read.
    other = "3.10" if sys.version_info[:2] != (3, 10) else "3.12"
    return {
        "envdoctor --help": [*run, "--help"],
        "install (described machine)": [
            *run,
            *("install", "--os", "linux", "--python", other, "--driver", "535.104.05", "--gpu", "sm_86"),
            *("--format", "json"),
        ],
        "install (this machine)": [*run, "install", "--offline"],
        "explain ED101": [*run, "explain", "ED101"],
        "rules": [*run, "rules"],
        # POSIX `env`: a cache folder that cannot exist, so every run rebuilds the catalogue.
        "explain ED101 (first run)": ["env", "ENVDOCTOR_CACHE_DIR=/dev/null/none", *run, "explain", "ED101"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--baseline", help="another envdoctor source tree, measured in the same run")
    args = parser.parse_args()
    baseline = os.path.abspath(args.baseline) if args.baseline else None
    compile_bytecode([envdoctor_package()] + ([os.path.join(baseline, "envdoctor")] if baseline else []))
    cache = tempfile.mkdtemp(prefix="envdoctor-bench-")
    os.environ["ENVDOCTOR_CACHE_DIR"] = cache  # the commands inherit it
    try:
        samples = interleaved(commands(baseline), args.rounds)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    floor, typer_rich = medians["python -c pass"], medians["import typer, rich"]
    width = max(len(name) for name in medians) + 2
    print(f"{args.rounds} interleaved rounds; budget {BUDGET_S * 1000:.0f} ms median")
    print(f"{'command':<{width}}{'median ms':>10}{'min ms':>9}{'x pass':>9}{'x typer+rich':>14}  budget")
    for name, median in medians.items():
        unbudgeted = name in ("python -c pass", "import typer, rich") or "first run" in name
        unbudgeted = unbudgeted or "[baseline]" in name
        verdict = "" if unbudgeted else "ok" if median <= BUDGET_S else "OVER"
        print(
            f"{name:<{width}}{median * 1000:>10.1f}{min(samples[name]) * 1000:>9.1f}"
            f"{median / floor:>9.2f}{median / typer_rich:>14.2f}  {verdict}"
        )


if __name__ == "__main__":
    main()
