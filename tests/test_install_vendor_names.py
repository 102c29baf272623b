"""`install --gpu` with AMD and Intel marketing names (issue 11, item 8): "RX 7900 XTX" plans as
--gpu gfx1100 does and "Arc A770" as --gpu xpu, from the name tables in rocm.json and xpu.json; an
AMD name envdoctor does not know plans the newest ROCm build with the target unknown and a note,
never exit 2."""

from __future__ import annotations

import pytest

from envdoctor.install.request import VendorGpuOption, parse_gpu_option
from envdoctor.install.session import Given, run
from envdoctor.knowledge import gpu_vendors
from envdoctor.knowledge.gpus import GpuSpec
from tests.install_support import text
from tests.machine_sources import this_machine


@pytest.mark.parametrize(
    ("name", "gfx"),
    [
        ("RX 7900 XTX", "gfx1100"),
        ("AMD Radeon RX 7900 XTX", "gfx1100"),
        ("7900 XTX", "gfx1100"),
        ("Radeon PRO W7900", "gfx1100"),
        ("Radeon RX 6700 XT", "gfx1031"),
        ("Instinct MI300X", "gfx942"),
        ("AMD Radeon 780M", "gfx1103"),
        ("Radeon RX 9070 XT", "gfx1201"),
    ],
)
def test_amd_names_read_as_their_gfx_target(name: str, gfx: str) -> None:
    assert parse_gpu_option(name) == VendorGpuOption(name, gfx)


@pytest.mark.parametrize(
    "name", ["Arc A770", "Intel Arc A770 Graphics", "Arc B580", "Arc Pro A40", "Arc 140V"]
)
def test_intel_names_read_as_the_xpu_build(name: str) -> None:
    found = parse_gpu_option(name)
    assert isinstance(found, VendorGpuOption) and found.xpu and found.shown == f"{name} (xpu)"


def test_an_nvidia_model_keeps_its_name() -> None:
    """NVIDIA's A40 is no Arc Pro A40: a bare model NVIDIA has is NVIDIA's; vendor words decide."""
    assert isinstance(parse_gpu_option("A40"), GpuSpec)
    assert isinstance(parse_gpu_option("NVIDIA A40"), GpuSpec)


def test_every_name_in_the_tables_reads_as_its_own_target() -> None:
    """The tables are consistent: no name means two targets, and parse_gpu_option reads each one."""
    targets = gpu_vendors._rocm()["targets"]
    assert isinstance(targets, dict)
    keys: dict[str, str] = {}
    for gfx, row in targets.items():
        assert gpu_vendors.is_gfx(gfx) and row["shown"]
        for name in row["names"]:
            assert keys.setdefault(gpu_vendors.name_key(name), gfx) == gfx, name
            assert parse_gpu_option(name) == VendorGpuOption(name, gfx), name
    intel = [n for family in gpu_vendors.xpu_families() for n in family.names]
    assert len({gpu_vendors.name_key(n) for n in intel}) == len(intel)
    for name in intel:
        assert gpu_vendors.name_key(name), name  # a name that says more than "Intel Arc"
        found = parse_gpu_option(name)
        assert isinstance(found, VendorGpuOption) and found.xpu, name
    assert gpu_vendors.amd_name_provenance().source and gpu_vendors.xpu_name_provenance().source


@pytest.mark.parametrize(("name", "same_as"), [("RX 7900 XTX", "gfx1100"), ("Arc A770", "xpu")])
def test_a_name_plans_as_its_target_does(name: str, same_as: str) -> None:
    by_name = run(Given(gpus=(name,)), this_machine().host)
    by_target = run(Given(gpus=(same_as,)), this_machine().host)
    assert by_name.plan.variant == by_target.plan.variant
    assert by_name.plan.variant == ("xpu" if same_as == "xpu" else "rocm7.2")
    assert by_name.plan.reason == by_target.plan.reason
    assert [text(c) for c in by_name.plan.commands] == [text(c) for c in by_target.plan.commands]
    inputs = {i.name: i.value for i in by_name.inputs}
    assert inputs["AMD/Intel GPUs"] == f"{name} ({same_as})"


def test_an_unknown_amd_name_plans_the_newest_rocm_build_with_a_note() -> None:
    session = run(Given(gpus=("Radeon RX 9999",)), this_machine().host)
    assert session.plan.possible and session.plan.variant == "rocm7.2"
    assert session.plan.reason.startswith("AMD GPU of unknown gfx target -> the newest ROCm build, rocm7.2")
    first = session.plan.warnings[0]
    assert first.startswith("--gpu Radeon RX 9999: an AMD GPU envdoctor has no gfx target for")
    assert "--gpu gfx1100" in first
    assert any("is not checked" in w for w in session.plan.warnings)
    assert {i.name: i.value for i in session.inputs}[
        "AMD/Intel GPUs"
    ] == "Radeon RX 9999 (gfx target unknown)"
