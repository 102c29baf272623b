"""Speed of the CI pre-flight path: `python bench/ci_preflight.py [--runs N]`.

Wall-clock medians of whole commands (each a fresh process, as CI runs them) and of rendering every
fixture in every format in-process. The live rows import torch in a child process, so they are
dominated by that import; compare them with the bare import on the same machine.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = str(ROOT / "fixtures" / "linux-v100-cu118-below-project-expectations.json")
CONFIG = str(ROOT / "fixtures" / "linux-v100-cu118-below-project-expectations.envdoctor.toml")
PY = sys.executable
ENVDOCTOR = [PY, "-m", "envdoctor"]


def median_seconds(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def command(argv: list[str]) -> Callable[[], object]:
    return lambda: subprocess.run(argv, capture_output=True, cwd=ROOT, check=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    rows: list[tuple[str, float]] = [
        ("python -c pass", median_seconds(command([PY, "-c", "pass"]), runs)),
        ("python -c 'import envdoctor'", median_seconds(command([PY, "-c", "import envdoctor"]), runs)),
        ("envdoctor check --help", median_seconds(command([*ENVDOCTOR, "check", "--help"]), runs)),
    ]
    for fmt in ("console", "json", "markdown", "github", "junit"):
        argv = [*ENVDOCTOR, "check", "--from", FIXTURE, "--config", CONFIG, "-f", fmt]
        rows.append((f"check --from FIXTURE --config FILE -f {fmt}", median_seconds(command(argv), runs)))
    rows.append(
        ("report --from FIXTURE", median_seconds(command([*ENVDOCTOR, "report", "--from", FIXTURE]), runs))
    )
    rows += [
        ("python -c 'import torch' (the floor)", median_seconds(command([PY, "-c", "import torch"]), runs)),
        ("check (live)", median_seconds(command([*ENVDOCTOR, "check"]), runs)),
        (
            "check --require-gpu --require-cuda '>=12.1' -f junit (live)",
            median_seconds(
                command([*ENVDOCTOR, "check", "--require-gpu", "--require-cuda", ">=12.1", "-f", "junit"]),
                runs,
            ),
        ),
        (
            "check --skip torch (live)",
            median_seconds(command([*ENVDOCTOR, "check", "--skip", "torch"]), runs),
        ),
        ("report (live)", median_seconds(command([*ENVDOCTOR, "report"]), runs)),
    ]
    sys.path.insert(0, str(ROOT))
    from envdoctor.cli.options import ReportFormat, render
    from tests.fixture_support import fixture_names, fixture_report

    reports = [fixture_report(name) for name in fixture_names()]
    for fmt in ReportFormat:
        seconds = median_seconds(lambda fmt=fmt: [render(r, fmt) for r in reports], runs)
        rows.append((f"render {len(reports)} fixtures as {fmt.value} (in-process)", seconds))
    width = max(len(name) for name, _ in rows)
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
