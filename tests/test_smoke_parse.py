"""Parsing the smoke records into facts: finished runs, hangs, crashes, and the console block."""

from __future__ import annotations

from typing import Any

from envdoctor.host.base import ChildOutcome
from envdoctor.probes.torch_build import TorchFacts, facts_from_outcome
from envdoctor.probes.torch_smoke import SmokeFacts, describe_lines, smoke_from_records, verdict
from envdoctor.util.serde import from_data, to_data
from tests.smoke_support import load_scenario

TORCH = {"record": "torch", "installed": True, "version": "2.5.1+cu124", "cuda": "12.4", "devices": []}


def records(*steps: dict[str, Any], end: bool = True) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        dict(TORCH),
        {"record": "smoke", "phase": "start"},
        {"record": "smoke_device", "phase": "start", "device": "cuda:0", "kind": "cuda", "name": "GPU"},
    ]
    for step in steps:
        out.append({"record": "step_start", "device": "cuda:0", "step": step["step"], "timeout": 20.0})
        if step.get("status"):
            out.append({"record": "step", "device": "cuda:0", **step})
    if end:
        out.append({"record": "smoke", "phase": "end", "seconds": 1.5})
    return out


def parse(recs: list[dict[str, Any]], **outcome: Any) -> SmokeFacts:
    smoke = smoke_from_records(
        recs, ChildOutcome(records=tuple(recs), returncode=outcome.pop("rc", 0), **outcome)
    )
    assert smoke is not None
    return smoke


def test_a_finished_run() -> None:
    smoke = parse(
        records({"step": "init", "status": "ok", "seconds": 0.3, "size": 1024, "memory_free_bytes": 10})
    )
    assert smoke.completed and smoke.passed and smoke.stopped is None
    device = smoke.devices[0]
    assert device.size == 1024 and device.memory_free_before == 10 and device.gpu


def test_a_pending_step_after_the_parent_timeout_is_a_timeout() -> None:
    smoke = parse(
        records({"step": "init", "status": "ok"}, {"step": "matmul_fp32"}, end=False), timed_out=True
    )
    step = smoke.devices[0].steps[-1]
    assert (step.step, step.status, step.timeout) == ("matmul_fp32", "timeout", 20.0)
    assert not smoke.completed and smoke.stopped == "timeout" and not smoke.passed


def test_a_pending_step_after_the_watchdog_is_a_timeout() -> None:
    recs = records({"step": "autograd"}, end=False)
    smoke = parse(recs, rc=1, stderr_tail="Timeout (0:00:20)!\nThread 0x01 (most recent call first):\n")
    assert smoke.devices[0].steps[-1].status == "timeout"


def test_a_pending_step_after_a_signal_is_a_crash() -> None:
    recs = records({"step": "init", "status": "ok"}, {"step": "conv2d"}, end=False)
    smoke = parse(recs, rc=None, signal=11, stderr_tail="Segmentation fault\n")
    step = smoke.devices[0].steps[-1]
    assert step.status == "crashed" and step.error is not None
    assert "signal 11" in step.error.message and "Segmentation fault" in step.error.message
    assert smoke.stopped == "crashed"


def test_no_smoke_records_means_no_smoke_facts() -> None:
    recs = [dict(TORCH)]
    assert smoke_from_records(recs, ChildOutcome(records=tuple(recs), returncode=0)) is None


def test_errors_are_kept_verbatim_and_types_checked() -> None:
    message = "CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be ..."
    recs = records(
        {
            "step": "init",
            "status": "failed",
            "error": {"type": "RuntimeError", "message": message},
            "reps": "x",
        }
    )
    step = parse(recs).devices[0].steps[0]
    assert step.error is not None and step.error.message == message
    assert step.reps is None  # a malformed field becomes unknown, not a crash


def test_old_snapshots_without_smoke_still_load() -> None:
    facts = from_data(TorchFacts, {"installed": True, "version": "2.3.1+cu121", "cuda": "12.1"})
    assert facts.smoke is None and facts.cuda == "12.1"


def test_smoke_facts_round_trip_through_snapshots() -> None:
    torch_facts = facts_from_outcome(load_scenario("linux-a100-healthy").torch_child)
    again = from_data(TorchFacts, to_data(torch_facts))
    assert again == torch_facts and again.smoke is not None and again.smoke.passed


def test_console_block_has_device_marks_time_and_throughput() -> None:
    smoke = facts_from_outcome(load_scenario("linux-a100-healthy").torch_child).smoke
    lines = describe_lines(smoke)
    assert lines[0].startswith("Smoke test (")
    gpu = next(line for line in lines if "cuda:0" in line)
    assert "NVIDIA A100-SXM4-80GB (sm_80)" in gpu and "1024x1024" in gpu and "peak" in gpu
    matmul = [line for line in lines if "matmul fp32" in line][-1]
    assert matmul.strip().startswith("✓") and "ms/iter" in matmul and "TFLOP/s" in matmul
    assert verdict(smoke) == "smoke test passed on cpu, cuda:0"


def test_console_block_says_why_a_step_did_not_pass() -> None:
    smoke = facts_from_outcome(load_scenario("linux-rtx3090-gpu-out-of-memory").torch_child).smoke
    lines = describe_lines(smoke)
    assert any("reduced from 1024 to fit free memory" in line for line in lines)
    failed = [line for line in lines if "✗" in line]
    assert len(failed) == 1 and "failed: CUDA out of memory" in failed[0] and failed[0].endswith("...")
    assert sum("skipped: not run after matmul fp32 failed" in line for line in lines) == 4
    assert verdict(smoke) == "smoke test failed on cuda:0"
    hung = facts_from_outcome(load_scenario("linux-vgpu-a800-smoke-hang").torch_child).smoke
    assert verdict(hung) == "smoke test hung on cuda:0"
    assert any("stopped early (timeout)" in line for line in describe_lines(hung))


def test_skipped_smoke_is_said_once() -> None:
    smoke = facts_from_outcome(ChildOutcome(records=(TORCH,), returncode=0), smoke=False).smoke
    assert verdict(smoke) == "smoke test skipped (--no-smoke)" and describe_lines(smoke) == ()
