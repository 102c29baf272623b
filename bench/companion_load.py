"""How much the companion load check (ED204) and the metadata scan (ED205) add to `envdoctor check`.

Runs, interleaved round by round so machine load hits all of them alike:
  - the torch child as `check` runs it (--no-smoke), and the same child with the companion check
    switched off: their difference is what the load check adds to `check`;
  - `import torch` and `import torch, torchvision` for scale (what a user's own import costs);
  - `envdoctor check --no-smoke` end to end.
Then what the child itself measured per companion, and the metadata scan timed in-process:

    python bench/companion_load.py --python /path/to/venv/bin/python [--rounds 9]

The interpreter must have torch and torchvision installed. Target: the load check adds < 0.2 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from timing import interleaved, print_ratios

CHILD_DIR = Path(__file__).resolve().parent.parent / "envdoctor" / "child"

# The child exactly as `check --no-smoke` starts it, through a wrapper that may switch the
# companion check off; both variants go through the same wrapper so only the check differs.
WRAPPER = (
    "import sys; sys.path.insert(0, sys.argv[1]); import torch_probe as c\n"
    "if sys.argv[2] == 'off': c.COMPANION_CHECKS = {}\n"
    "c.main(['--no-smoke']); sys.stdout.flush(); c.os._exit(0)"
)
# The child has imported importlib.metadata already (companions() reads versions with it).
SCAN = (
    "import sys, time; sys.path.insert(0, sys.argv[1]); import torch_probe as c\n"
    "import importlib.metadata; c.dist_version('torch')\n"
    "t = time.perf_counter(); found = c.distributions(); t = time.perf_counter() - t\n"
    "import importlib.metadata as m; n = sum(1 for _ in m.distributions())\n"
    "print(t, n, len(found or ()))"
)


def commands(python: str) -> dict[str, list[str]]:
    return {
        "import torch": [python, "-c", "import torch"],
        "import torch, torchvision": [python, "-c", "import torch, torchvision"],
        "child, companion check off": [python, "-c", WRAPPER, str(CHILD_DIR), "off"],
        "child, companion check on": [python, "-c", WRAPPER, str(CHILD_DIR), "on"],
        "check --no-smoke": [sys.executable, "-m", "envdoctor", "check", "--python", python, "--no-smoke"],
    }


def child_companion_seconds(python: str) -> dict[str, float]:
    """Each companion's check as the child timed it (and whether it loaded)."""
    out = subprocess.run(
        [python, "-c", WRAPPER, str(CHILD_DIR), "on"], capture_output=True, text=True, check=False
    ).stdout
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {
        f"{r['name']} ({r.get('status')})": float(r.get("seconds") or 0.0)
        for r in records
        if r.get("record") == "companion"
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="an interpreter with torch and torchvision")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    samples = interleaved(commands(args.python), args.rounds)
    print_ratios(samples, "import torch")
    added = statistics.median(samples["child, companion check on"]) - statistics.median(
        samples["child, companion check off"]
    )
    print(f"({args.rounds} interleaved rounds) the companion check adds {added * 1e3:+.0f} ms (medians)")
    inside = [child_companion_seconds(args.python) for _ in range(args.rounds)]
    for name in inside[0]:
        values = [run[name] for run in inside if name in run]
        print(f"inside the child: {name} {statistics.median(values) * 1e3:.0f} ms (median of {len(values)})")
    scans = [
        subprocess.run(
            [args.python, "-c", SCAN, str(CHILD_DIR)], capture_output=True, text=True, check=True
        ).stdout.split()
        for _ in range(args.rounds)
    ]
    seconds = statistics.median(float(s[0]) for s in scans)
    total, kept = scans[0][1], scans[0][2]
    print(f"metadata scan: {seconds * 1e3:.1f} ms for {total} distributions ({kept} kept; median)")


if __name__ == "__main__":
    main()
