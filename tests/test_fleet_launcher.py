"""Which launcher started a rank, read from the variables each launcher documents."""

from __future__ import annotations

import pytest

from envdoctor.fleet.launcher import LauncherKind, LaunchError, detect, first_host

TORCHRUN = {
    "TORCHELASTIC_RUN_ID": "job7",
    "TORCHELASTIC_USE_AGENT_STORE": "True",
    "RANK": "5",
    "WORLD_SIZE": "16",
    "LOCAL_RANK": "1",
    "LOCAL_WORLD_SIZE": "4",
    "GROUP_RANK": "1",
    "MASTER_ADDR": "node01",
    "MASTER_PORT": "29500",
}


def test_torchrun() -> None:
    launch = detect(TORCHRUN)
    assert (launch.kind, launch.rank, launch.world_size, launch.local_rank, launch.node_rank) == (
        LauncherKind.TORCHRUN,
        5,
        16,
        1,
        1,
    )
    assert launch.agent_store and launch.run_id == "job7" and not launch.is_leader


def test_kubernetes_pytorchjob_env_variables() -> None:
    env = {"RANK": "0", "WORLD_SIZE": "4", "MASTER_ADDR": "job-master-0", "MASTER_PORT": "23456"}
    launch = detect(env)
    assert launch.kind is LauncherKind.ENV and launch.is_leader and not launch.agent_store
    assert (launch.master_addr, launch.master_port) == ("job-master-0", 23456)


def test_slurm_derives_master_from_the_allocation() -> None:
    env = {
        "SLURM_PROCID": "3",
        "SLURM_NTASKS": "4",
        "SLURM_LOCALID": "0",
        "SLURM_NODEID": "3",
        "SLURM_JOB_ID": "123456",
        "SLURM_STEP_ID": "0",
        "SLURM_JOB_NODELIST": "gpu[07-10],login1",
    }
    launch = detect(env)
    assert launch.kind is LauncherKind.SLURM and launch.node_rank == 3
    assert (launch.master_addr, launch.master_port) == ("gpu07", 15000 + 123456 % 10000)
    assert len(launch.notes) == 2 and launch.run_id == "slurm-123456.0"
    env["MASTER_ADDR"], env["MASTER_PORT"] = "10.0.0.7", "29400"
    assert (detect(env).master_addr, detect(env).master_port, detect(env).notes) == ("10.0.0.7", 29400, ())


def test_open_mpi_and_pmi() -> None:
    common = {"MASTER_ADDR": "h1", "MASTER_PORT": "29500"}
    ompi = detect(
        {
            **common,
            "OMPI_COMM_WORLD_RANK": "2",
            "OMPI_COMM_WORLD_SIZE": "8",
            "OMPI_COMM_WORLD_LOCAL_RANK": "2",
        }
    )
    assert (ompi.kind, ompi.rank, ompi.local_rank) == (LauncherKind.OPENMPI, 2, 2)
    pmi = detect({**common, "PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "0"})
    assert (pmi.kind, pmi.rank, pmi.world_size, pmi.is_leader) == (LauncherKind.PMI, 1, 2, True)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "no launcher found"),
        ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "1"}, "MASTER_ADDR is not set"),
        ({"RANK": "x", "WORLD_SIZE": "2"}, "RANK='x' is not a whole number"),
        (
            {"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"},
            "rank 2 does not fit a world of 2",
        ),
        ({"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "h", "MASTER_PORT": "70000"}, "is not a TCP port"),
        ({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"}, "MASTER_ADDR is not set"),
    ],
)
def test_bad_or_missing_variables_are_one_clear_line(env: dict[str, str], message: str) -> None:
    with pytest.raises(LaunchError, match=message.replace("(", r"\(")) as caught:
        detect(env)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("nodelist", "first"),
    [("gpu[03-05,9],login1", "gpu03"), ("node1", "node1"), ("a[1-2]-b[07-09]", "a1-b07"), ("x,y", "x")],
)
def test_first_host_of_a_slurm_host_list(nodelist: str, first: str) -> None:
    assert first_host(nodelist) == first
