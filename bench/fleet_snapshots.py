"""Speed and memory of `envdoctor fleet`: `python bench/fleet_snapshots.py [--nodes 10000] [--runs 3]`.

Writes a generated fleet (tests/fleet_corpus.py: the fixtures with each node's own measurements and a
few odd nodes) to a temporary folder, then measures in fresh processes, for 2,000 and --nodes files:
  floor  read every file and json.loads it: what any reader of the files pays
  fleet  offline.diagnose_files (imports done): the snapshots/s figure
  cli    `envdoctor fleet DIR --format json`, the whole command as a user runs it
and the worst case, where no two nodes share facts (each file diagnosed in full). Peak RSS is per
process (interpreter and imports included): flat in the number of snapshots means the same figure
for 2,000 and 10,000. Medians of --runs; ratios are to the floor of the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fleet_corpus import FIXTURES, write_corpus  # noqa: E402

_CHILD = """
import json, resource, sys, time
from itertools import islice
mode, folder, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
from envdoctor.fleet.offline import diagnose_files, iter_entries
from envdoctor.settings import Settings
entries = islice(iter_entries([folder]), limit)
files = 0
started = time.perf_counter()
if mode == "floor":
    for entry in entries:
        files += 1
        with open(entry.path, "rb") as handle:
            try:
                json.loads(handle.read())
            except ValueError:
                pass
else:
    facts = diagnose_files(entries, Settings())
    files = facts.node_count + len(facts.unreadable)
seconds = time.perf_counter() - started
print(json.dumps({"files": files, "seconds": seconds,
                  "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def child(mode: str, folder: Path, limit: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, str(folder), str(limit)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=900,
    ).stdout
    result: dict[str, float] = json.loads(out)
    return result


def cli_seconds(folder: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "envdoctor", "fleet", str(folder), "--format", "json"],
        capture_output=True,
        check=False,
        cwd=ROOT,
        timeout=900,
    )
    return time.perf_counter() - started


def unique_fleet(folder: Path, count: int) -> None:
    """`count` snapshots that differ in a fact (the interpreter's path): nothing can be shared."""
    text = (FIXTURES / "linux-a100-healthy.json").read_text(encoding="utf-8")
    folder.mkdir(parents=True)
    for number in range(count):
        (folder / f"n{number}.json").write_text(
            text.replace("/home/user/project/.venv", f"/home/user/project{number}/.venv"), encoding="utf-8"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "snaps"
        started = time.perf_counter()
        write_corpus(folder, args.nodes)
        print(
            f"generated {args.nodes:,} snapshots (+2 unusable files) in {time.perf_counter() - started:.1f} s"
        )
        unique = Path(tmp) / "unique"
        unique_fleet(unique, 300)
        sizes = sorted({min(2_000, args.nodes), args.nodes})
        head = f"{'files':>8}  {'floor/s':>9}  {'fleet/s':>9}  {'fleet÷floor':>11}  {'peak RSS fleet':>14}"
        print(f"{head}  {'floor RSS':>9}")
        for size in sizes:
            floors, fleets = [], []
            for _ in range(args.runs):  # interleaved, so load changes hit both alike
                floors.append(child("floor", folder, size))
                fleets.append(child("fleet", folder, size))
            floor_rate = statistics.median(r["files"] / r["seconds"] for r in floors)
            fleet_rate = statistics.median(r["files"] / r["seconds"] for r in fleets)
            rss = statistics.median(r["rss_mib"] for r in fleets)
            floor_rss = statistics.median(r["rss_mib"] for r in floors)
            print(
                f"{size:>8,}  {floor_rate:>9,.0f}  {fleet_rate:>9,.0f}  {fleet_rate / floor_rate:>11.2f}  "
                f"{rss:>11.1f} MiB  {floor_rss:>5.1f} MiB"
            )
        worst = statistics.median(child("fleet", unique, 300)["seconds"] for _ in range(args.runs))
        print(f"worst case, no two nodes alike: {300 / worst:,.0f} snapshots/s (each diagnosed in full)")
        whole = statistics.median(cli_seconds(folder) for _ in range(args.runs))
        print(
            f"`envdoctor fleet DIR --format json` on {args.nodes + 2:,} files: {whole:.2f} s "
            f"({args.nodes / whole:,.0f} snapshots/s, start-up and rendering included)"
        )


if __name__ == "__main__":
    main()
