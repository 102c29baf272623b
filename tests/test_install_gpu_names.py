"""`install --gpu` with names envdoctor cannot place (issue 10, item 5): an NVIDIA GPU of unknown
architecture is planned with the architecture unknown, another vendor's device is left out, each
with a note, never exit 2; and an NVIDIA GPU without --driver on a machine without one says the
driver is unknown instead of planning the CPU build."""

from __future__ import annotations

import pytest

from envdoctor.install.request import GpuNote, parse_gpu_option
from envdoctor.install.session import Given, run
from envdoctor.knowledge.gpus import GpuSpec
from tests.install_support import text
from tests.machine_sources import this_machine

ELSEWHERE = {"os": "windows", "python": "3.12"}


@pytest.mark.parametrize(
    ("value", "nvidia"),
    [
        ("GeForce", True),
        ("GeForce GTX 680", True),
        ("10de:2704", True),
        ("Voodoo 3", True),
        ("1002:744c", False),
        (
            "Intel UHD Graphics 620",
            False,
        ),  # AMD and Intel names torch builds serve: test_install_vendor_names
    ],
)
def test_unplaced_names_become_notes(value: str, nvidia: bool) -> None:
    found = parse_gpu_option(value)
    assert isinstance(found, GpuNote) and found.nvidia is nvidia
    assert found.note.startswith(f"--gpu {value}: ")


def test_known_names_and_capabilities_still_resolve() -> None:
    assert isinstance(parse_gpu_option("RTX 3090"), GpuSpec)
    assert isinstance(parse_gpu_option("sm_86"), GpuSpec)


def test_a_bare_geforce_is_planned_with_the_architecture_unknown() -> None:
    session = run(Given(gpus=("GeForce",), driver="560.94", **ELSEWHERE), this_machine().host)
    assert session.plan.possible and session.plan.variant == "cu126"
    assert session.plan.warnings[0].startswith("--gpu GeForce: not a model envdoctor knows")
    assert any("GPU architecture unknown" in w for w in session.plan.warnings)
    assert {i.name: i.value for i in session.inputs}["GPUs"] == "GeForce (architecture unknown)"


def test_an_amd_gpu_beside_an_nvidia_one_is_left_out() -> None:
    session = run(
        Given(gpus=("RTX 4090", "AMD Radeon RX 7900 XTX"), driver="581.15", **ELSEWHERE), this_machine().host
    )
    assert session.plan.variant == "cu130"
    assert "RTX 4090 (sm_89)" in session.plan.reason
    assert any("AMD Radeon RX 7900 XTX: an AMD GPU, left out of the plan" in w for w in session.plan.warnings)


def test_a_gpu_without_a_driver_here_says_the_driver_is_unknown() -> None:
    session = run(Given(gpus=("RTX 4090",)), this_machine().host)  # this machine: no NVIDIA driver
    inputs = {i.name: (i.value, i.origin) for i in session.inputs}
    assert inputs["NVIDIA driver"] == ("unknown", "not given; none found here")
    assert session.plan.variant == "cu130" and session.plan.reason.startswith(
        "NVIDIA driver unknown -> cu130"
    )
    assert any("cu130 needs a driver >= 580" in w and "--driver" in w for w in session.plan.warnings)
    # PyPI's Linux wheel is the cu130 build; the find-links folder's 2.13.0+cpu must not win over it
    assert text(session.plan.commands[-1]).endswith("install torch===2.13.0 torchvision==0.28.0")


def test_only_another_vendors_gpu_plans_the_cpu_build() -> None:
    session = run(Given(gpus=("Intel UHD Graphics 620",)), this_machine().host)
    assert session.plan.variant == "cpu"
    assert any("not an NVIDIA GPU" in w for w in session.plan.warnings)
