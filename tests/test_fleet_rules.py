"""The fleet rules (ED8xx) on typed facts: each fires on its situation, names the odd ones out, and
stays quiet on a healthy fleet; the boundaries the scenarios alone do not pin down."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.fleet.facts import CollectiveResult, GpuModel, NodeGroup, RankState, Stage
from envdoctor.rules import RULES
from envdoctor.rules.fleet import RULES as FLEET_RULES
from envdoctor.rules.fleet.nccl import gloo_ifname_missing, nccl_ifname_matches
from envdoctor.settings import Settings
from tests.fleet_scenarios import (
    GB,
    HEALTHY,
    NO_TORCH,
    OK,
    SCENARIOS,
    STACK,
    codes,
    job,
    nodes,
    offline,
    rank,
    report,
)


def test_every_fleet_rule_is_registered_once_in_its_area() -> None:
    fleet = [r for r in RULES if r.area == "fleet"]
    assert fleet == sorted(FLEET_RULES, key=lambda r: r.code)
    assert all(r.code.startswith("ED8") for r in fleet)
    assert sorted(SCENARIOS) == [r.code for r in fleet]


@pytest.mark.parametrize("code", sorted(SCENARIOS))
def test_rule_fires_on_its_scenario(code: str) -> None:
    found = report(SCENARIOS[code])
    hits = [f for f in found.findings if f.code == code]
    assert hits, f"{code} did not fire"
    rule = next(r for r in FLEET_RULES if r.code == code)
    assert all(f.severity is rule.severity and f.area == "fleet" for f in hits)
    assert found.exit_code == (1 if found.worst.value == "error" else 0)


@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_healthy_fleet_has_no_findings(name: str) -> None:
    found = report(HEALTHY[name])
    assert found.findings == () and found.exit_code == 0 and found.status == "ok"


def test_skew_names_the_minority_and_the_majority_value() -> None:
    (torch, cuda) = report(SCENARIOS["ED801"]).findings
    assert torch.title == "torch differs across nodes: 2.6.0+cu126 on 2 nodes (gpu060, gpu061)"
    assert "Most nodes (60 of 62): 2.5.1+cu124" in torch.detail
    assert torch.fixes[0].commands == ("envdoctor install --torch 2.5.1 --cuda cu124",)
    assert cuda.title.startswith("CUDA (torch's build) differs across nodes: 12.6 on 2 nodes")


def test_a_node_without_torch_fails_its_check_but_is_no_torch_version() -> None:
    assert codes(NO_TORCH) == ["ED804"]


def test_gpu_count_skew_names_the_node_that_lost_a_gpu() -> None:
    (finding,) = report(SCENARIOS["ED803"]).findings
    assert "7 × NVIDIA H100 80GB HBM3 on 1 node (gpu999)" in finding.title
    assert "Most nodes (999 of 1,000): 8 × NVIDIA H100 80GB HBM3" in finding.detail


def test_no_gpu_anywhere_is_no_gpu_skew() -> None:
    cpu = replace(STACK, gpus=(), driver=None)
    assert codes(offline(NodeGroup(cpu, OK, nodes("cpu", 3)))) == []
    mixed = offline(NodeGroup(cpu, OK, nodes("cpu", 3)), NodeGroup(STACK, OK, ("gpu000",)))
    assert "ED803" in codes(mixed)


def test_failing_nodes_are_grouped_by_their_top_finding() -> None:
    (finding,) = report(SCENARIOS["ED804"]).findings
    assert finding.title.startswith("3 nodes fail their own check (gpu005, gpu006, gpu007): ED101")


def test_collective_hang_names_the_rank_that_never_entered() -> None:
    (hung, _) = report(SCENARIOS["ED813"]).findings
    assert hung.title == "the all-reduce did not finish within 12.0 s: rank 1 (gpu001) never entered it"
    assert "it last joined the process group" in hung.detail
    assert "rank 0 (gpu000) entered the all-reduce and never finished: timed out" in hung.detail


def test_dead_ranks_are_named_once_not_as_a_hang_too() -> None:
    dead = job(
        rank(0, "gpu000", result=CollectiveResult("nccl", error="Connection reset by peer")),
        rank(1, "gpu001", state=RankState.DIED, stage=Stage.GROUP),
    )
    found = codes(dead)
    assert "ED811" in found and "ED813" not in found


def test_everyone_entered_and_nobody_finished_is_a_hang_of_all() -> None:
    stuck = CollectiveResult("nccl", error="did not finish")
    facts = job(
        rank(0, "gpu000", result=stuck, stage=Stage.ALLREDUCE),
        rank(1, "gpu001", state=RankState.HUNG, stage=Stage.ALLREDUCE),
    )
    (hung, advice) = report(facts).findings
    assert hung.code == "ED813" and "rank 0 (gpu000), rank 1 (gpu001) never finished it" in hung.title
    assert advice.code == "ED815" and "NCCL_DEBUG=INFO" in advice.fixes[0].commands[0]


def test_debug_advice_is_quiet_when_nccl_debug_is_already_set() -> None:
    stuck = CollectiveResult("nccl", error="did not finish")
    facts = job(
        rank(0, "gpu000", result=stuck, env={"NCCL_DEBUG": "INFO"}),
        rank(1, "gpu001", state=RankState.HUNG, stage=Stage.GROUP, env={"NCCL_DEBUG": "INFO"}),
    )
    assert codes(facts) == ["ED813"]


@pytest.mark.parametrize(("slowest", "flagged"), [(89.0, True), (90.0, False)])
def test_slow_node_is_below_half_the_median(slowest: float, flagged: bool) -> None:
    fast = CollectiveResult("nccl", correct=True, busbw=180 * GB)
    slow = CollectiveResult("nccl", correct=True, busbw=slowest * GB)
    facts = job(rank(0, "a", result=fast), rank(1, "b", result=fast), rank(2, "c", result=slow))
    assert ("ED814" in codes(facts)) is flagged


def test_one_node_alone_is_never_slow() -> None:
    slow = CollectiveResult("nccl", correct=True, busbw=1.0)
    assert codes(job(rank(0, "a", result=slow), rank(1, "a", result=slow))) == []


@pytest.mark.parametrize(
    ("spec", "interfaces", "chosen"),
    [
        ("eth", ("eth0", "eth1", "lo"), ("eth0", "eth1")),
        ("=eth0", ("eth0", "eth01"), ("eth0",)),
        ("eth1", ("eth0", "lo"), ()),
        ("^docker,lo", ("docker0", "lo", "ens5"), ("ens5",)),
        ("^=eth0", ("eth0",), ()),
        ("ib,eth", ("ib0", "lo"), ("ib0",)),
    ],
)
def test_nccl_socket_ifname_as_nccl_reads_it(
    spec: str, interfaces: tuple[str, ...], chosen: tuple[str, ...]
) -> None:
    assert nccl_ifname_matches(spec, interfaces) == chosen


def test_gloo_socket_ifname_names_exact_interfaces() -> None:
    assert gloo_ifname_missing("eth0,ib0", ("eth0", "lo")) == ("ib0",)
    assert gloo_ifname_missing("lo", ("lo",)) == ()


def test_missing_interface_is_named_per_node_and_variable() -> None:
    facts = job(
        rank(0, "a", env={"GLOO_SOCKET_IFNAME": "eth9"}), rank(1, "b", env={"GLOO_SOCKET_IFNAME": "eth9"})
    )
    found = [f for f in report(facts).findings if f.code == "ED820"]
    assert [f.title for f in found] == [
        "GLOO_SOCKET_IFNAME=eth9 on a matches none of its network interfaces",
        "GLOO_SOCKET_IFNAME=eth9 on b matches none of its network interfaces",
    ]


def test_transport_traps_only_where_they_bite() -> None:
    one_gpu = job(rank(0, "a", env={"NCCL_P2P_DISABLE": "1"}, gpu_count=1))
    assert "ED821" not in codes(one_gpu)
    no_ib = job(rank(0, "a", env={"NCCL_IB_DISABLE": "1"}), rank(1, "b", env={"NCCL_IB_DISABLE": "1"}))
    assert "ED822" not in codes(no_ib)


def test_settings_skew_on_a_tie_names_the_node_that_sets_something() -> None:
    facts = job(rank(0, "a"), rank(1, "b", env={"NCCL_P2P_DISABLE": "1"}, gpu_count=1))
    (finding,) = report(facts).findings
    assert finding.title == "NCCL_P2P_DISABLE differs across nodes: NCCL_P2P_DISABLE=1 on b"


def test_ignore_and_strict_work_as_for_check() -> None:
    facts = SCENARIOS["ED823"]
    assert report(facts).exit_code == 0
    assert report(facts, Settings(strict=True)).exit_code == 1
    silenced = report(facts, Settings(ignore=("ED823",)))
    assert silenced.findings == () and silenced.ignored == ("ED823",)


def test_gpu_models_differ_too() -> None:
    other = replace(STACK, gpus=(GpuModel("NVIDIA A100-SXM4-80GB", 8),))
    facts = offline(NodeGroup(STACK, OK, nodes("h", 4)), NodeGroup(other, OK, nodes("a", 4)))
    assert "ED803" in codes(facts)


def test_ranks_stuck_alive_are_named_when_no_all_reduce_ran() -> None:
    from envdoctor.fleet.facts import RankOutcome

    facts = job(
        rank(0, "gpu000"),
        RankOutcome(1, RankState.NEVER_ARRIVED),
        rank(2, "gpu001", state=RankState.HUNG, stage=Stage.STARTED),
        attempted=False,
    )
    titles = [(f.code, f.title) for f in report(facts).findings]
    assert ("ED813", "1 rank alive but stuck: rank 2 (gpu001)") in titles
    assert ("ED811", "1 rank never joined the job: rank 1") in titles


def test_a_node_whose_check_crashed_still_reports() -> None:
    """The node's check runs in the background of its first rank; whatever it raises becomes the
    node's verdict, named by ED804, instead of taking the rank down."""
    from envdoctor.fleet.facts import NodeCheck, Severity
    from envdoctor.fleet.rank_info import NodeCheck as NodeCheckRun
    from envdoctor.host.fake import FakeHost
    from envdoctor.probes import CheckOptions

    class Exploding(FakeHost):
        def python_json(self, *args: object, **kwargs: object) -> object:  # type: ignore[override]
            raise RuntimeError("the interpreter vanished")

    run = NodeCheckRun(Exploding(), Settings(), CheckOptions(timeout=5))
    run.start()
    snapshot, error = run.result(10)
    assert snapshot is None and error == "RuntimeError: the interpreter vanished"
    crashed = NodeCheck(exit_code=1, worst=Severity.ERROR, error=error)
    (finding,) = report(
        offline(NodeGroup(STACK, OK, nodes("gpu", 3)), NodeGroup(None, crashed, ("gpu9",)))
    ).findings
    assert finding.code == "ED804"
    assert finding.title == "1 node fails its own check (gpu9): its check could not run: " + error
