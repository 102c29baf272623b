"""How much the smoke test adds to `envdoctor check`, against a bare `import torch`.

Runs each command in turn, interleaved round by round so machine load hits all of them alike, and
prints the median wall time of each and its ratio to the bare import; then what the torch child
itself measured (import vs smoke test), which machine noise disturbs far less:

    python bench/smoke_overhead.py [--rounds 9] [--python /path/to/python]

The target is `check` within ~1.15-1.3x of `python -c "import torch"` (design.md, "Time budget").
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from timing import interleaved, print_ratios

CHILD = Path(__file__).resolve().parent.parent / "envdoctor" / "child" / "torch_probe.py"


def commands(python: str) -> dict[str, list[str]]:
    envdoctor = [sys.executable, "-m", "envdoctor", "check", "--python", python]
    return {
        "import torch": [python, "-c", "import torch"],
        "import torch; 1024^2 matmul": [
            python,
            "-c",
            "import torch; a = torch.randn(1024, 1024); a @ a",
        ],
        "check --no-smoke": [*envdoctor, "--no-smoke"],
        "check (smoke, default size)": envdoctor,
    }


def child_seconds(python: str) -> tuple[float, float]:
    """(import seconds, smoke seconds) as the torch child reports them in its records."""
    out = subprocess.run(
        [python, str(CHILD), "--budget", "58"], capture_output=True, text=True, check=False
    ).stdout
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    torch = next(r for r in records if r.get("record") == "torch")
    end = next(r for r in records if r.get("record") == "smoke" and r.get("phase") == "end")
    return float(torch["import_seconds"]), float(end["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--python", default=sys.executable, help="the interpreter with torch")
    args = parser.parse_args()
    print_ratios(interleaved(commands(args.python), args.rounds), "import torch")
    print(f"({args.rounds} interleaved rounds)")
    inside = [child_seconds(args.python) for _ in range(args.rounds)]
    imported = statistics.median(i for i, _ in inside)
    smoke = statistics.median(s for _, s in inside)
    print(
        f"inside the torch child: import {imported * 1e3:.0f} ms, smoke test {smoke * 1e3:.0f} ms "
        f"(+{smoke / imported:.1%} of the import; medians of {args.rounds})"
    )


if __name__ == "__main__":
    main()
