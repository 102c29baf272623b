"""`envdoctor cluster` for real, on loopback: torchrun jobs and ranks started as srun or a pod would
start them, with ranks that differ, hang, crash or never start. CPU torch, gloo, bounded in time.

These are the slow tests of the fleet (seconds each: every rank imports torch), so the runs are early
jobs (tests/early.py) that work in the background while the rest of the suite runs; the rules'
details are tested on typed facts in test_fleet_rules.py.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli_support import run_cli
from tests.early import Job
from tests.fleet_support import (
    LIGHT,
    NO_NETWORK,
    NUMPY_BLOCKER,
    QUICK,
    TORCHRUN,
    Proc,
    base_env,
    envdoctor_cluster,
    free_port,
    job_timeout,
    start,
    wait_all,
)

# Decided without importing torch (an import at collection cost every pytest-xdist worker seconds):
# torch.distributed is a folder of the torch package.
_TORCH = importlib.util.find_spec("torch")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        _TORCH is None
        or _TORCH.origin is None
        or not (Path(_TORCH.origin).parent / "distributed" / "__init__.py").is_file(),
        reason="the distributed check needs torch",
    ),
]
HAVE_NUMPY = importlib.util.find_spec("numpy") is not None


def torchrun(*args: str, node: int | None = None, nodes: int = 1, port: int, per_node: int = 1) -> list[str]:
    argv = [TORCHRUN, "--nnodes", str(nodes), "--nproc-per-node", str(per_node)]
    if node is not None:
        argv += ["--node-rank", str(node)]
    argv += ["--master-addr", "127.0.0.1", "--master-port", str(port), "-m", "envdoctor", "cluster", *args]
    return argv


def findings(report: dict[str, Any], code: str) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["code"] == code]


# --- the runs: early jobs (tests/early.py), launched in the background while other tests run ------


def _healthy() -> Proc:
    argv = torchrun("--timeout", "90", "--format", "json", *QUICK, *NO_NETWORK, port=free_port(), per_node=2)
    (job,) = wait_all([start(argv, base_env())], limit=150)
    return job


def _two_nodes() -> tuple[Proc, Proc]:
    """Two torchrun "nodes" on loopback; node 1 sets NCCL_P2P_DISABLE=1; NumPy cannot be imported in
    any process (a meta-path blocker on PYTHONPATH)."""
    with tempfile.TemporaryDirectory() as blocker:
        (Path(blocker) / "sitecustomize.py").write_text(NUMPY_BLOCKER, encoding="utf-8")
        port = free_port()
        jobs = []
        for node in (0, 1):
            extra = {"PYTHONPATH": blocker} | ({"NCCL_P2P_DISABLE": "1"} if node else {})
            # LIGHT: the nodes' own checks need no torch child here (the healthy job runs one); the
            # environment and NumPy are each rank's own facts.
            argv = torchrun(
                "--timeout", "90", "--format", "json", *QUICK, *LIGHT, node=node, nodes=2, port=port
            )
            jobs.append(start(argv, base_env(extra)))
        first, second = wait_all(jobs, limit=150)
    return first, second


def _hang(timeout: float) -> list[subprocess.Popen[str]]:
    """Two ranks as a pod would start them; rank 1 stops after joining the process group."""
    port = free_port()
    argv = envdoctor_cluster("--timeout", str(timeout), "--format", "json", *LIGHT, *QUICK)
    return [
        start(
            argv,
            base_env(
                {
                    "RANK": str(rank),
                    "WORLD_SIZE": "2",
                    "MASTER_ADDR": "127.0.0.1",
                    "MASTER_PORT": str(port),
                    "ENVDOCTOR_TEST_HANG": "1@group",
                }
            ),
        )
        for rank in (0, 1)
    ]


def _broken_ranks(timeout: float, nowhere: int) -> list[subprocess.Popen[str]]:
    """Four ranks as srun would start them: rank 1 crashes after its check, rank 2 never starts, and
    rank 3 is given a MASTER_PORT where nobody listens."""
    port = free_port()

    def slurm(rank: int, master_port: int) -> dict[str, str]:
        return base_env(
            {
                "SLURM_PROCID": str(rank),
                "SLURM_NTASKS": "4",
                "SLURM_LOCALID": "0",
                "SLURM_NODEID": str(rank),
                "SLURM_JOB_ID": "4242",
                "SLURM_JOB_NODELIST": "127.0.0.1",
                "MASTER_PORT": str(master_port),
                "ENVDOCTOR_TEST_CRASH": "1@checked",
            }
        )

    argv = envdoctor_cluster("--timeout", str(timeout), "--format", "json", *LIGHT, *QUICK)
    return [start(argv, slurm(0, port)), start(argv, slurm(1, port)), start(argv, slurm(3, nowhere))]


@dataclass(frozen=True)
class Misbehaving:
    """The two jobs whose rank 0 waits out its --timeout for a rank that misbehaves, run at once: each
    mostly waits, so together they take the time of one, and one start-up yardstick sizes both."""

    timeout: float
    hang: list[Proc]  # rank 0, rank 1 (hung)
    nowhere: int  # the MASTER_PORT where nobody listens
    broken: list[Proc]  # rank 0, rank 1 (crashed), rank 3 (cut off)


def _misbehaving() -> Misbehaving:
    timeout, nowhere = job_timeout(5), free_port()  # five ranks share the CPUs
    groups = [_hang(timeout), _broken_ranks(timeout, nowhere)]
    # Each group is waited for from its own start: a rank's seconds are its own, not the other job's.
    with ThreadPoolExecutor(max_workers=2) as pool:
        hang, broken = pool.map(lambda procs: wait_all(procs, limit=timeout + 15), groups)
    return Misbehaving(timeout, hang, nowhere, broken)


HEALTHY = Job("envdoctor cluster: torchrun, 2 ranks", _healthy)
TWO_NODES = Job("envdoctor cluster: 2 torchrun nodes, one differs, no NumPy", _two_nodes)
MISBEHAVING = Job("envdoctor cluster: a hung rank; crashed, unstarted and cut-off ranks", _misbehaving)


# --- the tests -------------------------------------------------------------------------------------


@pytest.mark.early(HEALTHY)
def test_torchrun_two_ranks_healthy() -> None:
    job = HEALTHY.result()
    assert job.code == 0, job.out + job.err[-3000:]
    report = job.report()
    assert report["status"] == "ok" and report["world_size"] == 2
    assert [f["code"] for f in report["findings"]] == ([] if HAVE_NUMPY else ["ED830"])
    assert report["rendezvous"]["role"] == "agent" and report["rendezvous"]["launcher"] == "torchrun"
    collective = report["collective"]
    assert (collective["attempted"], collective["backend"], collective["skipped_reason"]) == (
        True,
        "gloo",
        None,
    )
    for rank in report["ranks"]:
        assert rank["state"] == "finished" and rank["stage"] == "done"
        assert rank["result"]["correct"] is True and rank["result"]["busbw"] > 0
    (group,) = report["groups"]
    assert group["status"] == "ok" and group["stack"]["torch"].startswith("2.")  # the node's own check ran


@pytest.mark.early(TWO_NODES)
def test_two_nodes_one_differs_and_no_numpy_anywhere() -> None:
    first, second = TWO_NODES.result()
    assert (first.code, second.code, second.out) == (0, 0, ""), first.out + first.err[-3000:]
    report = first.report()
    nodes = sorted(r["info"]["node"] for r in report["ranks"])
    (skew,) = findings(report, "ED823")
    assert skew["title"] == f"NCCL_P2P_DISABLE differs across nodes: NCCL_P2P_DISABLE=1 on {nodes[1]}"
    (numpy,) = findings(report, "ED830")
    assert numpy["title"].startswith("NumPy cannot be imported on 2 ranks")
    assert "No module named 'numpy'" in numpy["detail"]
    assert all(r["result"]["correct"] is True for r in report["ranks"])  # it worked without NumPy
    assert report["nodes"] == 2 and report["exit_code"] == 0


@pytest.mark.early(MISBEHAVING)
def test_a_hung_rank_is_named_within_the_timeout() -> None:
    run = MISBEHAVING.result()
    timeout, (rank0, rank1) = run.timeout, run.hang
    assert rank0.seconds < timeout + 2.0, rank0.err[-2000:]
    assert (rank0.code, rank1.code) == (1, 1), rank0.err[-2000:] + rank1.err[-2000:]
    report = rank0.report()
    (hung,) = findings(report, "ED813")
    assert hung["title"].endswith(": rank 1 (" + report["ranks"][1]["info"]["node"] + ") never entered it")
    assert "never entered the all-reduce: it last joined the process group" in hung["detail"]
    assert findings(report, "ED815")  # how to see more next time


@pytest.mark.early(MISBEHAVING)
def test_crashed_unstarted_and_cut_off_ranks_are_named() -> None:
    """Rank 0 still reports within --timeout, naming each; the cut-off rank says why in its own log."""
    run = MISBEHAVING.result()
    timeout, nowhere, (rank0, rank1, rank3) = run.timeout, run.nowhere, run.broken
    assert rank0.seconds < timeout + 2.0 and rank0.code == 1, rank0.err[-2000:]
    assert rank1.code == 70, rank1.err[-2000:]  # the test hook's exit
    report = rank0.report()
    assert report["rendezvous"]["launcher"] == "slurm" and report["rendezvous"]["role"] == "server"
    titles = [f["title"] for f in findings(report, "ED811")]
    assert "2 ranks never joined the job: rank 2, rank 3" in titles, (titles, rank0.err, rank1.err)
    assert any(t.startswith("1 rank died after joining: rank 1 (") for t in titles), (titles, rank0.err)
    states = {r["rank"]: (r["state"], r["stage"]) for r in report["ranks"]}
    assert states[1] == ("died", "checked") and states[2] == ("never_arrived", None)
    assert report["collective"]["attempted"] is False
    assert rank3.code == 1
    (cut_off,) = findings(rank3.report(), "ED810")
    assert (
        cut_off["title"] == f"this rank could not reach the rendezvous store at 127.0.0.1:{nowhere} (slurm)"
    )


def test_cluster_outside_a_launcher_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "RANK",
        "WORLD_SIZE",
        "SLURM_PROCID",
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
        "TORCHELASTIC_RUN_ID",
    ):
        monkeypatch.delenv(name, raising=False)
    result = run_cli(capsys, monkeypatch, "cluster")
    assert result.code == 2 and result.err.count("\n") == 1 and "no launcher found" in result.err
    result = run_cli(capsys, monkeypatch, "cluster", "--timeout", "1")
    assert result.code == 2 and "--timeout 1: expected seconds between 5 and 3600" in result.err


def test_fleet_json_is_the_same_schema_offline_and_live() -> None:
    """Both commands write "envdoctor.fleet/1"; the live one adds ranks, rendezvous and collective."""
    from envdoctor.fleet.render import report_to_data
    from tests.fleet_scenarios import SCENARIOS, report

    live = report_to_data(report(SCENARIOS["ED813"]))
    offline = report_to_data(report(SCENARIOS["ED801"]))
    assert live["schema"] == offline["schema"] == "envdoctor.fleet/1"
    assert set(live) - set(offline) == {"world_size", "ranks", "rendezvous", "collective"}
    assert json.loads(json.dumps(live)) == live


def test_help_of_the_fleet_commands_does_not_import_torch() -> None:
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from envdoctor.cli.root import main\n"
        "for command in ('cluster', 'fleet'):\n"
        "    sys.argv = ['envdoctor', command, '--help']\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit:\n"
        "        pass\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "torchrun --nnodes N" in done.stdout and "SNAPSHOT..." in done.stdout
