"""Compute capabilities: parsing, the GPU-name table, and which builds serve which GPUs."""

from __future__ import annotations

import pytest

from envdoctor import knowledge
from envdoctor.knowledge.archs import (
    Capability,
    arch_list,
    coverage,
    cubin_runs_on,
    parse_capability,
    ptx_runs_on,
)
from envdoctor.knowledge.gpus import is_tegra, lookup_gpu, parse_gpu


@pytest.mark.parametrize(
    ("text", "expected"),
    [("8.6", (8, 6)), ("sm_86", (8, 6)), ("sm_120", (12, 0)), ("120", (12, 0)), ("12.1", (12, 1))],
)
def test_parse_capability(text: str, expected: Capability) -> None:
    assert parse_capability(text) == expected


@pytest.mark.parametrize("text", ["", "sm_", "8.66", "1234", "RTX 3090", "8.x"])
def test_parse_capability_rejects(text: str) -> None:
    assert parse_capability(text) is None


@pytest.mark.parametrize(
    ("name", "capability"),
    [
        ("NVIDIA GeForce RTX 3090", (8, 6)),
        ("NVIDIA A10", (8, 6)),
        ("NVIDIA A100-SXM4-80GB", (8, 0)),
        ("Tesla T4", (7, 5)),
        ("NVIDIA GeForce GTX 1080 Ti", (6, 1)),
        ("NVIDIA H100 80GB HBM3", (9, 0)),
        ("NVIDIA RTX 6000 Ada Generation", (8, 9)),
        ("Quadro RTX 6000", (7, 5)),
        ("NVIDIA L40S", (8, 9)),
        ("NVIDIA GeForce RTX 5090", (12, 0)),
        ("NVIDIA GB10", (12, 1)),
        ("Tesla K80", (3, 7)),
    ],
)
def test_gpu_names(name: str, capability: Capability) -> None:
    model = lookup_gpu(name)
    assert model is not None and model.capability == capability


def test_gpu_table_names_are_unique() -> None:
    seen: dict[str, str] = {}
    for entry in knowledge.load_table("gpus.json")["gpus"]:
        for name in entry["names"]:
            assert name.lower() not in seen, (
                f"{name} listed for {seen[name.lower()]} and {entry['capability']}"
            )
            seen[name.lower()] = entry["capability"]


def test_unknown_gpu_is_none() -> None:
    assert lookup_gpu("Radeon RX 7900") is None
    assert parse_gpu("foo") is None
    assert parse_gpu("sm_89").capability == (8, 9)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("cubin", "gpu", "runs"),
    [
        ((8, 6), (8, 9), True),  # Ada runs the sm_86 cubins
        ((8, 0), (8, 6), True),
        ((8, 6), (8, 0), False),  # never an older minor
        ((9, 0), (12, 0), False),  # never another major
        ((12, 0), (12, 1), True),  # DGX Spark runs the sm_120 cubins
        ((10, 0), (10, 3), True),
        ((8, 0), (8, 7), False),  # Jetson Orin does not run the dGPU sm_80 cubins
        ((8, 7), (8, 7), True),
        ((8, 7), (8, 9), False),  # nor do Tegra cubins run anywhere else
        ((5, 0), (5, 3), False),
        ((6, 0), (6, 2), False),
        ((7, 0), (7, 2), False),
        ((10, 0), (10, 1), False),
        ((10, 1), (11, 0), True),  # 101 was renamed 110 in CUDA 13
    ],
)
def test_cubin_rules(cubin: Capability, gpu: Capability, runs: bool) -> None:
    assert cubin_runs_on(cubin, gpu) is runs


def test_ptx_runs_on_equal_or_newer_gpus_tegra_included() -> None:
    assert ptx_runs_on((12, 0), (12, 1))
    assert ptx_runs_on((9, 0), (12, 0))
    assert ptx_runs_on((8, 0), (8, 7))
    assert not ptx_runs_on((12, 0), (10, 0))


def test_ptx_serves_newer_gpus_on_linux_only() -> None:
    release = knowledge.release("2.9.0")
    assert release is not None
    linux = arch_list(release, "cu130", "linux-x86_64")
    windows = arch_list(release, "cu130", "windows-x86_64")
    assert linux is not None and windows is not None
    assert coverage(linux, (13, 0)).kind == "ptx"
    assert coverage(windows, (13, 0)).kind == "none"  # "+PTX available on linux builds only"
    assert coverage(linux, (12, 0)).kind == "cubin"


@pytest.mark.parametrize(
    ("torch", "variant", "gpu", "kind"),
    [
        ("2.6.0", "cu126", (12, 0), "none"),  # RTX 50xx needs torch >= 2.7 with cu128+
        ("2.7.0", "cu128", (12, 0), "cubin"),
        ("2.7.0", "cu128", (6, 1), "none"),  # Pascal left cu128 in 2.7
        ("2.8.0", "cu126", (6, 1), "cubin"),
        ("2.8.0", "cu128", (7, 0), "cubin"),  # Volta came back to cu128 in 2.8 ...
        ("2.11.0", "cu128", (7, 0), "none"),  # ... and left again in 2.11
        ("2.7.1", "cu118", (3, 7), "cubin"),  # Kepler: cu118 up to 2.7
        ("2.0.0", "cu117", (9, 0), "none"),  # sm_90 first in cu118
    ],
)
def test_arch_lists_follow_the_facts(torch: str, variant: str, gpu: Capability, kind: str) -> None:
    release = knowledge.release(torch)
    assert release is not None
    found = arch_list(release, variant, "linux-x86_64")
    assert found is not None
    assert coverage(found, gpu).kind == kind


def test_aarch64_lists_drop_older_gpus_and_add_thor() -> None:
    release = knowledge.release("2.10.0")
    assert release is not None
    found = arch_list(release, "cu130", "linux-aarch64")
    assert found is not None
    assert coverage(found, (11, 0)).kind == "cubin"
    assert coverage(found, (7, 5)).kind == "none"  # Turing is not in the aarch64 builds


def test_tegra() -> None:
    assert is_tegra((8, 7)) and not is_tegra((8, 6))
