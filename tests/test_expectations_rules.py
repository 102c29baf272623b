"""ED7xx on recorded machines: unmet expectations are errors with what was found and a fix; met
expectations say nothing; --ignore, --only/--skip and --strict change the verdict as documented."""

from __future__ import annotations

import dataclasses

import pytest

from envdoctor.engine import judge
from envdoctor.model.findings import Report, Severity
from envdoctor.probes.torch_build import TorchDevice
from envdoctor.settings import Expectations, Settings
from envdoctor.snapshot import Snapshot, load
from tests.fixture_support import FIXTURES

HEALTHY = "linux-rtx4090-driver535-cu121-healthy"  # RTX 4090 (8.9, 23.99 GiB), torch 2.3.1+cu121
V100 = "linux-v100-cu118-below-project-expectations"


def snapshot(name: str) -> Snapshot:
    return load(str(FIXTURES / f"{name}.json"))


def run(
    name: str, expect: Expectations | None = None, snap: Snapshot | None = None, **settings: object
) -> Report:
    snap = snap or snapshot(name)
    chosen = Settings(expectations=expect or Expectations(), **settings)  # type: ignore[arg-type]
    return judge(snap.platform, snap.interpreter, snap.probes, chosen, source=name)


def codes(report: Report) -> list[str]:
    return [f.code for f in report.findings]


def with_torch(snap: Snapshot, **changes: object) -> Snapshot:
    probes = tuple(
        dataclasses.replace(p, facts=dataclasses.replace(p.facts, **changes)) if p.probe == "torch" else p
        for p in snap.probes
    )
    return dataclasses.replace(snap, probes=probes)


def test_met_expectations_add_nothing_and_the_area_says_so() -> None:
    expect = Expectations(
        gpu=True,
        min_gpus=1,
        cuda=">=12.1",
        torch=">=2.3,<2.4",
        capability=">=8.0",
        min_gpu_memory="24GiB",  # the board reports 23.99 GiB: within the 2% tolerance
    )
    report = run(HEALTHY, expect)
    assert not [c for c in codes(report) if c.startswith("ED7")]
    assert report.exit_code == 0
    area = report.areas[-1]
    assert (area.area, area.severity) == ("expectations", Severity.OK)
    assert area.verdict.startswith("all 6 met")


def test_memory_tolerance_has_a_limit() -> None:
    report = run(HEALTHY, Expectations(min_gpu_memory="24.6GiB"))  # 23.99 GiB is 2.5% short
    (finding,) = report.findings
    assert finding.code == "ED706"
    assert "23.99 GiB" in finding.title


def test_no_expectations_no_area_line_and_no_ed7xx_checked() -> None:
    report = run(HEALTHY)
    assert [a.area for a in report.areas] == ["system", "python", "nvml", "torch"]
    assert not [c for c in report.checked if c.startswith("ED7")]
    assert "ED101" in report.checked


def test_every_unmet_expectation_is_an_error_with_found_and_fix() -> None:
    expect = Expectations(
        min_gpus=2, cuda=">=12.1", torch=">=2.4,<2.6", capability=">=8.0", min_gpu_memory="40GiB", smoke=True
    )
    report = run(V100, expect)
    assert codes(report) == ["ED702", "ED703", "ED704", "ED705", "ED706", "ED707"]
    assert all(f.severity is Severity.ERROR and f.fixes for f in report.findings)
    by_code = {f.code: f for f in report.findings}
    assert by_code["ED703"].title == (
        "expectation require-cuda = >=12.1 not met: torch 2.1.2+cu118 was built with CUDA 11.8"
    )
    assert "Tesla V100-SXM2-32GB is 7.0" in by_code["ED705"].title
    assert "32.00 GiB" in by_code["ED706"].title
    assert "the smoke test did not run" in by_code["ED707"].title
    # The install fix meets both version expectations on this driver (525: CUDA 12.x through
    # minor-version compatibility), pinned; the planner picks the index (cu124 is PyPI's 2.5.1).
    (command,) = by_code["ED703"].fixes[0].commands
    assert command.startswith("/home/user/project/.venv/bin/python -m pip install torch==2.5.1 ")
    why = "driver 525.105.17 runs cu124 through minor-version compatibility (>= 525.60.13)"
    assert by_code["ED703"].fixes[0].summary.endswith(f"{why} -> torch 2.5.1 (cu124)")
    # The same command never twice in one report: ED704's fix points at ED703's.
    assert by_code["ED704"].fixes[0].commands == ()
    assert (
        by_code["ED704"]
        .fixes[0]
        .summary.endswith(f"{why} -> torch 2.5.1 (cu124) (its command is shown under ED703 above)")
    )
    assert report.exit_code == 1


def test_gpu_required_on_a_ci_runner_points_at_a_gpu_machine() -> None:
    report = run("ci-runner-no-gpu-project-requires-gpu", Expectations(gpu=True, min_gpus=2, smoke=True))
    (finding,) = [f for f in report.findings if f.code.startswith("ED7")]  # ED701 covers the rest
    assert finding.code == "ED701"
    assert "there is no NVIDIA GPU or driver" in finding.title
    assert "require-gpu, min-gpus, require-smoke" in finding.detail
    assert finding.fixes[0].commands == ("srun --gres=gpu:1 envdoctor check --require-gpu",)
    assert report.areas[-1].verdict == "3 of 3 not met (require-gpu, min-gpus, require-smoke)"


def test_gpu_required_with_a_cpu_build_on_a_gpu_machine_offers_the_cuda_build() -> None:
    snap = with_torch(
        snapshot(HEALTHY),
        version="2.3.1+cpu",
        dist_version="2.3.1+cpu",
        cuda=None,
        cuda_available=False,
        devices=(),
    )
    report = run(HEALTHY, Expectations(gpu=True), snap=snap)
    finding = next(f for f in report.findings if f.code == "ED701")
    assert "CPU-only build" in finding.title
    # ED201 (same severity, lower code) shows the install command first; ED701 points at it.
    cpu_only = next(f for f in report.findings if f.code == "ED201")
    assert "--index-url https://download.pytorch.org/whl/cu12" in cpu_only.fixes[0].commands[0]
    assert finding.fixes[0].summary.endswith("(its command is shown under ED201 above)")


def test_hidden_devices_fix_for_min_gpus() -> None:
    snap = snapshot(HEALTHY)
    nvml = next(p for p in snap.probes if p.probe == "nvml")
    two = dataclasses.replace(
        nvml.facts, gpus=(*nvml.facts.gpus, dataclasses.replace(nvml.facts.gpus[0], index=1))
    )
    snap = dataclasses.replace(
        snap, probes=tuple(dataclasses.replace(p, facts=two) if p.probe == "nvml" else p for p in snap.probes)
    )
    report = run(HEALTHY, Expectations(min_gpus=2), snap=with_torch(snap, cuda_visible_devices="1"))
    (finding,) = report.findings
    assert finding.code == "ED702"
    assert "CUDA_VISIBLE_DEVICES='1'" in finding.detail
    assert finding.fixes[0].commands == ("export CUDA_VISIBLE_DEVICES=0,1",)


def test_unknown_device_details_count_as_unmet() -> None:
    snap = with_torch(snapshot(HEALTHY), devices=(TorchDevice(index=0),))
    report = run(HEALTHY, Expectations(capability=">=8.0", min_gpu_memory="8GiB"), snap=snap)
    assert codes(report) == ["ED705", "ED706"]
    assert "unknown capability" in report.findings[0].title


def test_versions_when_torch_is_missing_or_broken() -> None:
    report = run("linux-rtx3090-no-torch", Expectations(torch=">=2.4", cuda=">=12.1", gpu=True))
    titles = {f.code: f.title for f in report.findings}
    assert titles["ED704"].endswith("torch is not installed")
    assert "torch is not installed" in titles["ED703"]
    assert "torch is not installed" in titles["ED701"]
    report = run("linux-torch-import-segfault", Expectations(torch=">=2.4"))
    assert "crashed or hung" in next(f.title for f in report.findings if f.code == "ED704")


def test_a_skipped_probe_cannot_confirm_an_expectation() -> None:
    report = run(HEALTHY, Expectations(gpu=True, cuda=">=12.1"), skip=("torch",))
    assert [p.probe for p in report.probes] == ["system", "python", "nvml"]
    titles = {f.code: f.title for f in report.findings}
    assert "the torch probe did not run (--only/--skip)" in titles["ED701"]
    assert "the torch probe did not run" in titles["ED703"]


def test_ignore_silences_a_rule_and_is_recorded() -> None:
    report = run(V100, Expectations(min_gpus=2, capability=">=8.0"), ignore=("ED702",))
    assert codes(report) == ["ED705"]
    assert report.ignored == ("ED702",)
    assert "ED702" not in report.checked
    assert "min-gpus" not in report.areas[-1].verdict  # ignored, not "not met"


@pytest.mark.parametrize(("strict", "exit_code"), [(False, 0), (True, 1)])
def test_strict_turns_warnings_into_failure(strict: bool, exit_code: int) -> None:
    report = run("linux-driver550-cu126-minor-compat", strict=strict)
    assert report.worst is Severity.WARNING
    assert report.exit_code == exit_code


def test_an_error_beside_a_note_still_fails() -> None:
    """Regression: max() over severities used to compare them as strings ("info" > "error")."""
    report = run("ci-runner-no-gpu-project-requires-gpu", Expectations(gpu=True))
    assert {f.severity for f in report.findings} == {Severity.ERROR, Severity.INFO}
    assert report.worst is Severity.ERROR
    assert report.exit_code == 1
    assert max([Severity.WARNING, Severity.ERROR, Severity.OK]) is Severity.ERROR
    assert Severity.ERROR >= Severity.WARNING > Severity.INFO >= Severity.INFO > Severity.OK


def test_prerelease_and_local_versions() -> None:
    snap = with_torch(
        snapshot(HEALTHY), version="2.6.0.dev20241201+cu121", dist_version="2.6.0.dev20241201+cu121"
    )
    # (the release torchvision 0.18.1 beside a nightly torch is ED202's business, not an expectation's)
    assert codes(run(HEALTHY, Expectations(torch=">=2.4"), snap=snap)) == ["ED202", "ED202"]
    assert codes(run(HEALTHY, Expectations(torch="<2.6"), snap=snap)) == ["ED202", "ED202", "ED704"]
    assert not run(HEALTHY, Expectations(torch="==2.3.1")).findings  # +cu121 is ignored by ==2.3.1


def test_require_smoke_is_met_by_a_passed_gpu_smoke_test() -> None:
    report = run("linux-a100-healthy", Expectations(smoke=True))
    assert "ED707" not in codes(report)


@pytest.mark.parametrize(
    ("name", "says"),
    [
        (
            "linux-t4-busy-despite-is-available",
            "0: Tesla T4 (sm_75): init failed; 1: Tesla T4 (sm_75): init failed",
        ),
        ("linux-rtx3090-gpu-out-of-memory", "0: NVIDIA GeForce RTX 3090 (sm_86): matmul fp32 failed"),
        ("linux-vgpu-a800-smoke-hang", "0: GRID A800D-40C (sm_80): init timeout"),
    ],
)
def test_require_smoke_is_unmet_when_a_gpu_step_fails(name: str, says: str) -> None:
    report = run(name, Expectations(smoke=True))
    (finding,) = [f for f in report.findings if f.code == "ED707"]
    assert finding.title.endswith(f"not met: {says}")
    assert any(code.startswith("ED30") for code in codes(report))


def test_require_smoke_with_the_smoke_test_skipped() -> None:
    snap = snapshot("linux-a100-healthy")
    torch = next(p.facts for p in snap.probes if p.probe == "torch")
    skipped = with_torch(snap, smoke=dataclasses.replace(torch.smoke, ran=False, skipped_reason="--no-smoke"))
    (finding,) = [f for f in run("", Expectations(smoke=True), snap=skipped).findings if f.code == "ED707"]
    assert "did not run (--no-smoke)" in finding.title
    assert finding.fixes[0].commands == ("envdoctor check --require-smoke",)
