"""The GPU path, end to end on recorded-style child outputs: FakeHost plays the torch and NVML
children back, and the real probes, smoke parser, rules and console renderer do the rest."""

from __future__ import annotations

import pytest

from envdoctor.model.findings import Severity
from envdoctor.probes import CheckOptions
from tests.fixture_support import console_text
from tests.smoke_support import child_args, codes, run, scenario_names

EXPECTED = {
    "linux-a100-healthy": [],
    "linux-rtx5090-cu124-no-sm120": ["ED301"],
    "linux-t4-busy-despite-is-available": ["ED302"],
    "linux-rtx3090-gpu-out-of-memory": ["ED303"],
    "linux-vgpu-a800-smoke-hang": ["ED304"],
}


def test_every_scenario_has_an_expectation() -> None:
    assert sorted(EXPECTED) == scenario_names()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_scenario_findings(name: str) -> None:
    report, host = run(name)
    assert codes(report) == EXPECTED[name]
    assert "--budget" in child_args(host)


def test_healthy_gpu_passes_every_step() -> None:
    report, _ = run("linux-a100-healthy")
    torch_area = next(a for a in report.areas if a.area == "torch")
    assert torch_area.severity is Severity.OK
    assert torch_area.verdict.endswith("smoke test passed on cpu, cuda:0")
    text = console_text(report)
    for step in ("init", "matmul fp32", "autograd", "matmul fp16", "matmul bf16", "conv2d"):
        assert sum(f"✓ {step}" in line for line in text.splitlines()) == 2  # cpu and cuda:0
    assert "cuDNN 90100" in text and "TFLOP/s" in text


def test_sm120_on_cu124_names_variant_minimum_torch_and_a_fix_that_has_the_kernels() -> None:
    report, _ = run("linux-rtx5090-cu124-no-sm120")
    (finding,) = report.findings
    assert finding.title == "torch 2.6.0+cu124 has no kernels for NVIDIA GeForce RTX 5090 (sm_120)"
    assert "sm_120 needs torch >= 2.7 with cu128 or newer" in finding.detail
    assert "torch itself warned" in finding.detail
    assert 'init on cuda:0, cuda:1 failed with "CUDA error: no kernel image is available' in finding.detail
    (fix,) = finding.fixes
    # Driver 570.124.06 runs CUDA 12.8 but not 13.x: the newest sm_120 build it runs is 2.11 cu128.
    assert fix.commands == (
        "/home/user/project/.venv/bin/python -m pip install torch==2.11.0 torchvision==0.26.0 "
        "--index-url https://download.pytorch.org/whl/cu128",
    )


def test_busy_gpus_make_one_finding_with_the_verbatim_error() -> None:
    report, _ = run("linux-t4-busy-despite-is-available")
    (finding,) = report.findings
    assert finding.severity is Severity.ERROR
    assert "cuda:0, cuda:1 (Tesla T4)" in finding.title and "is_available() is True" in finding.title
    assert "CUDA-capable device(s) is/are busy or unavailable\nCUDA kernel errors" in finding.detail
    assert "exclusive-process compute mode" in finding.detail
    commands = [c for fix in finding.fixes for c in fix.commands]
    assert "sudo nvidia-smi -c DEFAULT" in commands
    assert any("--query-compute-apps" in c for c in commands)


def test_out_of_memory_is_a_warning_naming_the_other_process() -> None:
    report, _ = run("linux-rtx3090-gpu-out-of-memory")
    (finding,) = report.findings
    assert finding.severity is Severity.WARNING and report.exit_code == 0
    assert "Process 4121 has 23.26 GiB memory in use" in finding.detail
    assert "at 256x256" in finding.title


def test_hang_names_the_step_and_its_limit() -> None:
    report, _ = run("linux-vgpu-a800-smoke-hang")
    (finding,) = report.findings
    assert finding.title == "init on cuda:0 (GRID A800D-40C) hung: it did not finish within 30 s"
    assert report.exit_code == 1
    assert "devices after this point were not tested" in console_text(report)


def test_options_reach_the_child() -> None:
    _, host = run("linux-a100-healthy", CheckOptions(smoke_size=4096, timeout=120))
    assert list(child_args(host)) == ["--budget", "118.0", "--smoke-size", "4096"]
    report, host = run("linux-a100-healthy", CheckOptions(smoke=False))
    assert list(child_args(host)) == ["--no-smoke"]
    torch_area = next(a for a in report.areas if a.area == "torch")
    assert torch_area.verdict.endswith("smoke test skipped (--no-smoke)") and torch_area.details == ()
