"""How long `envdoctor check` takes next to the floor (importing torch) and the incumbent
(`python -m torch.utils.collect_env`), measured side by side in one run.

    python bench/check_vs_torch.py [--rounds 7] [--python PATH]

Runs the commands interleaved, round after round, so drifting machine load hits them alike, and
prints the median of each with its ratio to a bare `import torch`. Targets: check <= 1.3x import
torch (design goal 1.15x of import + one 1024x1024 matmul), and faster than collect_env.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from timing import interleaved, print_ratios


def commands(python: str) -> dict[str, list[str]]:
    return {
        "import torch": [python, "-c", "import torch"],
        "import torch + matmul": [python, "-c", "import torch; a = torch.randn(1024, 1024); a @ a"],
        # As users run it: examining its own interpreter (or the active env). --python is only
        # added for another interpreter, and then the early start of the torch child is skipped.
        "envdoctor check": [
            *(sys.executable, "-m", "envdoctor", "check", "--format", "json"),
            *(() if python == sys.executable else ("--python", python)),
        ],
        "collect_env": [python, "-m", "torch.utils.collect_env"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--python", default=sys.executable, help="the interpreter with torch")
    args = parser.parse_args()
    samples = interleaved(commands(args.python), args.rounds)
    print_ratios(samples, "import torch")
    check = statistics.median(samples["envdoctor check"])
    matmul = statistics.median(samples["import torch + matmul"])
    collect = statistics.median(samples["collect_env"])
    print(f"\ncheck / (import torch + matmul) = {check / matmul:.2f} (goal <= 1.15)")
    print(f"check / collect_env = {check / collect:.2f} (goal < 1)")


if __name__ == "__main__":
    main()
