"""The knowledge base: internal consistency of the data, and the typed queries over it."""

from __future__ import annotations

import re

import pytest
from packaging.version import Version

from envdoctor import knowledge
from envdoctor.knowledge import conda, load_table, mirrors
from envdoctor.knowledge.archs import arch_list
from envdoctor.knowledge.drivers import driver_support, native_cuda
from envdoctor.knowledge.provenance import references

TABLES = ("releases.json", "cuda_drivers.json", "archs.json", "gpus.json", "conda.json", "kernel_errors.json")
_VARIANT = re.compile(r"^(cpu|cu\d{3,4}|rocm\d+\.\d+(\.\d+)?)$")


@pytest.mark.parametrize("name", TABLES)
def test_every_table_names_its_source_and_date(name: str) -> None:
    table = load_table(name)
    assert references(table["source"])  # public references: tests/test_knowledge_provenance.py
    assert re.match(r"^\d{4}-\d{2}", table["as_of"])


def test_releases_sort_and_companions_sort_with_them() -> None:
    rows = knowledge.releases()
    versions = [r.version for r in rows]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    raw = [r["torch"] for r in load_table("releases.json")["releases"]]
    assert raw == [str(v) for v in versions], "releases.json is kept oldest first"
    visions = [Version(r.torchvision) for r in rows if r.torchvision]
    assert visions == sorted(visions)


def test_every_release_has_pythons_platforms_and_a_pypi_default() -> None:
    known_pythons = set(knowledge.python_versions())
    for row in knowledge.releases():
        assert row.python, f"{row.torch} has no Python list"
        assert list(row.python) == sorted(row.python, key=Version)
        assert row.builds("linux-x86_64") is not None and row.builds("windows-x86_64") is not None
        for platform, builds in row.platforms:
            assert builds.variants[0] == "cpu", (row.torch, platform)
            assert builds.pypi in builds.variants, (row.torch, platform)
            assert set(row.python_for(platform)) <= known_pythons
        assert row.builds("linux-x86_64").pypi == row.pypi_linux_x86_64_default  # type: ignore[union-attr]
        assert row.builds("windows-x86_64").pypi == "cpu"  # type: ignore[union-attr]


def test_every_variant_has_an_index_url_and_cuda_data() -> None:
    for row in knowledge.releases():
        for platform, builds in row.platforms:
            for variant in builds.variants:
                assert _VARIANT.match(variant), (row.torch, variant)
                url = mirrors.official_wheel_url(variant)
                assert url == f"https://download.pytorch.org/whl/{variant}"
                if variant.startswith("cu"):
                    cuda = knowledge.variant_cuda(variant)
                    assert cuda is not None and knowledge.driver_minimum(cuda, platform.split("-")[0])
                    assert arch_list(row, variant, platform) is not None, (row.torch, variant, platform)
        assert set(row.cuda_variants) == {
            v
            for v in row.builds("linux-x86_64").variants
            if v.startswith("cu")  # type: ignore[union-attr]
        }


def test_rocm_is_linux_x86_64_only_and_macos_is_cpu_only() -> None:
    for row in knowledge.releases():
        for platform, builds in row.platforms:
            if platform != "linux-x86_64":
                assert not any(v.startswith("rocm") for v in builds.variants), (row.torch, platform)
            if platform.startswith("macos"):
                assert builds.variants == ("cpu",)


def test_macos_x86_64_stops_at_2_2_and_aarch64_cuda_starts_at_2_4() -> None:
    with_intel_mac = [r.torch for r in knowledge.releases() if r.builds("macos-x86_64")]
    assert with_intel_mac[-1] == "2.2.2"
    first_arm_cuda = next(
        r
        for r in knowledge.releases()
        if len(r.builds("linux-aarch64").variants) > 1  # type: ignore[union-attr]
    )
    assert first_arm_cuda.torch == "2.4.0"


def test_pypi_defaults_follow_the_facts() -> None:
    expected = {"2.1.0": "cu121", "2.4.1": "cu121", "2.5.1": "cu124", "2.7.1": "cu126", "2.8.0": "cu128"}
    expected |= {"2.11.0": "cu130", "2.13.0": "cu130", "1.13.1": "cu117"}
    for version, variant in expected.items():
        assert knowledge.release(version).pypi_linux_x86_64_default == variant  # type: ignore[union-attr]


def test_command_forms_cover_every_release() -> None:
    for row in knowledge.releases():
        form = knowledge.pip_form(row)
        assert form.index_option == ("--extra-index-url" if row.version < Version("2.0") else "--index-url")
        packages = knowledge.command_packages(row)
        assert ("torchaudio" in packages) == (row.version < Version("2.8"))


def test_conda_channel_stops_at_2_5_1() -> None:
    assert conda.last_release() == mirrors.conda_channel_last_torch("pytorch") == "2.5.1"
    on_channel = [r.torch for r in knowledge.releases() if conda.on_pytorch_channel(r, "linux-x86_64")]
    assert on_channel[0] == "1.12.0" and on_channel[-1] == "2.5.1"
    assert not conda.on_pytorch_channel(knowledge.release("2.6.0"), "linux-x86_64")  # type: ignore[arg-type]
    assert not conda.on_pytorch_channel(knowledge.release("2.3.1"), "macos-x86_64")  # type: ignore[arg-type]


def test_unknown_versions_answer_none_not_a_crash() -> None:
    assert knowledge.release("9.9.0") is None
    assert knowledge.resolve_release("9.9") is None
    assert knowledge.resolve_release("not a version") is None
    assert knowledge.driver_minimum("99.0", "linux") is None
    assert driver_support("cu990", "580.65.06", "linux").kind == "unknown"
    assert arch_list(knowledge.release("2.13.0"), "cu990", "linux-x86_64") is None  # type: ignore[arg-type]


def test_series_resolves_to_the_newest_patch() -> None:
    assert knowledge.resolve_release("2.5").torch == "2.5.1"  # type: ignore[union-attr]
    assert knowledge.resolve_release("2.5.0").torch == "2.5.0"  # type: ignore[union-attr]
    assert knowledge.resolve_release("2.7.1+cu118").torch == "2.7.1"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("os_name", "machine", "key"),
    [
        ("linux", "x86_64", "linux-x86_64"),
        ("windows", "AMD64", "windows-x86_64"),
        ("linux", "arm64", "linux-aarch64"),
        ("macos", "arm64", "macos-arm64"),
        ("macos", "x86_64", "macos-x86_64"),
    ],
)
def test_platform_keys(os_name: str, machine: str, key: str) -> None:
    assert knowledge.platform_key(os_name, machine) == key


@pytest.mark.parametrize(
    ("driver", "os_name", "cuda"),
    [
        ("535.104.05", "linux", "12.2"),
        ("525.60.13", "linux", "12.0"),
        ("525.60.12", "linux", "11.8"),
        ("470.182.03", "linux", "11.4"),
        ("580.65.06", "linux", "13.0"),
        ("560.94", "windows", "12.6"),
        # Windows 13.x: NVIDIA prints N/A; each toolkit belongs to a driver branch (13.1: R590, 13.2: R595)
        ("581.15", "windows", "13.0"),
        ("590.10", "windows", "13.1"),
        ("595.02", "windows", "13.2"),
        ("450.51.05", "linux", "11.0"),  # 11.0 GA, not the 450.36.06 of its RC
        ("450.36.06", "linux", "10.2"),
        ("451.48", "windows", "11.0"),
        ("400.1", "linux", None),
    ],
)
def test_native_cuda_of_a_driver(driver: str, os_name: str, cuda: str | None) -> None:
    assert native_cuda(driver, os_name) == cuda


def test_usable_variants_newest_first_with_minor_version_compatibility() -> None:
    from envdoctor.knowledge.drivers import usable_variants

    found = usable_variants("535.104.05", "linux", ("cpu", "cu118", "cu121", "cu124", "cu130"))
    assert [(s.variant, s.kind) for s in found] == [
        ("cu124", "compat"),
        ("cu121", "native"),
        ("cu118", "native"),
    ]
    assert usable_variants(None, "linux", ("cu118",)) == ()
