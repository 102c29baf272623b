"""The smoke test's child code: its arithmetic helpers, and real runs against this machine's torch.

The real runs start the actual child in this interpreter (CPU torch here): the CPU path must report
a real, passing smoke result, and a step that hangs must be stopped by the child's own watchdog.
"""

from __future__ import annotations

import ast
import importlib.util
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

from envdoctor.child import torch_probe as child
from envdoctor.host.base import ChildOutcome
from envdoctor.host.live import CHILD_DIR, parse_records
from envdoctor.probes.base import CheckOptions
from envdoctor.probes.torch_build import TorchFacts, child_args, facts_from_outcome
from tests.early import Job
from tests.real_torch import DEFAULT_ARGS, DEFAULT_RUN, NO_SMOKE, NO_SMOKE_RUN, real_torch_child

# Decided without importing torch: an import at collection cost every pytest-xdist worker seconds;
# the tests that use torch in this process ask for it (the `torch` fixture).
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]


@pytest.fixture(name="torch")
def torch_module() -> ModuleType:
    import torch

    return torch


ALL_STEPS = ["init", "matmul_fp32", "autograd", "matmul_fp16", "matmul_bf16", "conv2d"]


def run_child(*args: str, timeout: float = 60.0) -> tuple[TorchFacts, ChildOutcome]:
    """The real child in this interpreter (shared with the suite's other real runs of these arguments)."""
    outcome = real_torch_child(sys.executable, args, timeout)
    return facts_from_outcome(outcome, smoke="--no-smoke" not in args), outcome


@pytest.fixture(scope="module")
def default_run() -> tuple[TorchFacts, ChildOutcome]:
    return run_child(*DEFAULT_ARGS)


# -- real runs -------------------------------------------------------------------------------


@pytest.mark.early(DEFAULT_RUN)
def test_cpu_smoke_runs_for_real(default_run: tuple[TorchFacts, ChildOutcome]) -> None:
    facts, outcome = default_run
    assert outcome.returncode == 0, outcome.stderr_tail
    smoke = facts.smoke
    assert smoke is not None and smoke.ran and smoke.completed and smoke.passed
    cpu = smoke.device("cpu")
    assert cpu is not None and cpu.size == child.CPU_SIZE
    assert cpu.threads == 1 and cpu.threads_available is not None and cpu.threads_available >= 1
    assert [s.step for s in cpu.steps] == ALL_STEPS
    for step in cpu.steps:
        assert step.status == "ok", step
        assert step.seconds is not None and step.seconds > 0
        if step.step == "init":
            continue
        assert step.max_error is not None and step.tolerance is not None
        assert step.max_error <= step.tolerance
        assert step.throughput is not None and step.throughput > 1e6  # at least a MFLOP/s
    assert cpu.step("matmul_fp16").size == child.CPU_HALF_MAX  # type: ignore[union-attr]


@pytest.mark.early(DEFAULT_RUN)
def test_cpu_only_build_tests_no_gpu(default_run: tuple[TorchFacts, ChildOutcome]) -> None:
    facts, _ = default_run
    assert facts.smoke is not None
    if facts.cuda_available or facts.mps_available:
        pytest.skip("this machine has an accelerator")
    assert [d.device for d in facts.smoke.devices] == ["cpu"]


@pytest.mark.early(NO_SMOKE_RUN)
def test_no_smoke_runs_no_step() -> None:
    facts, outcome = run_child(*NO_SMOKE)
    assert facts.imported
    assert not [r for r in outcome.records if r.get("record") in ("smoke", "step", "step_start")]
    assert facts.smoke is not None and not facts.smoke.ran
    assert facts.smoke.skipped_reason == "--no-smoke"


# The real child, with one step replaced by a sleep and a 1 s step limit.
_HUNG_STEP = (
    "import sys, time; sys.path.insert(0, sys.argv[1]); import torch_probe as c;"
    "c.CPU_STEP_TIMEOUT = 1.0;"
    "c.Smoke.step_matmul_bf16 = lambda self, device, state: time.sleep(60);"
    "sys.exit(c.main(['--budget', '50']))"
)
_ENVIRON = dict(os.environ)  # at import: a run in the background must not see a test's settings
HUNG_STEP = Job(
    "torch_probe.py with a hung step",
    lambda: subprocess.run(
        [sys.executable, "-c", _HUNG_STEP, str(CHILD_DIR)],
        capture_output=True,
        text=True,
        timeout=50,
        env=_ENVIRON,
        cwd=CHILD_DIR,
    ),
)


@pytest.mark.early(HUNG_STEP)
def test_a_hung_step_is_stopped_by_the_watchdog_and_named() -> None:
    proc = HUNG_STEP.result()
    outcome = ChildOutcome(
        records=parse_records(proc.stdout), returncode=proc.returncode, stderr_tail=proc.stderr[-4000:]
    )
    smoke = facts_from_outcome(outcome).smoke
    assert smoke is not None and not smoke.completed and smoke.stopped == "timeout"
    cpu = smoke.device("cpu")
    assert cpu is not None
    assert [s.status for s in cpu.steps] == ["ok", "ok", "ok", "ok", "timeout"]
    hung = cpu.steps[-1]
    assert hung.step == "matmul_bf16" and hung.timeout == pytest.approx(1.0)
    assert "Timeout (" in proc.stderr  # faulthandler's watchdog, not the parent, stopped it


# -- the parent's arguments ------------------------------------------------------------------


def test_child_args_follow_the_options() -> None:
    assert child_args(CheckOptions(smoke=False), 58.0) == ("--no-smoke",)
    assert child_args(CheckOptions(), 58.0) == ("--budget", "58.0")
    assert child_args(CheckOptions(smoke_size=512), 10.0) == ("--budget", "10.0", "--smoke-size", "512")


def test_child_parses_its_arguments() -> None:
    assert child.parse_args([]) == {"smoke": True, "size": None, "budget": None, "knowledge": None}
    assert child.parse_args(["--no-smoke"])["smoke"] is False
    assert child.parse_args(["--smoke-size", "512", "--budget", "12.5"]) == {
        "smoke": True,
        "size": 512,
        "budget": 12.5,
        "knowledge": None,
    }
    assert child.parse_args(["--knowledge", "t.json"])["knowledge"] == "t.json"
    assert child.parse_args(["--smoke-size", "lots"])["size"] is None  # ignored, not a crash


# -- comparison and timeout logic ------------------------------------------------------------


def test_tolerance_orders_by_precision_and_grows_with_k() -> None:
    k = 1024
    assert child.tolerance("float32", k) < child.tolerance("tf32", k)
    assert child.tolerance("tf32", k) == child.tolerance("float16", k)
    assert child.tolerance("float16", k) < child.tolerance("bfloat16", k)
    assert child.tolerance("float32", 4096) > child.tolerance("float32", 64)
    # Wrong kernels are off by O(1) (zeros give max|R|/sqrt(k) ~ 4-5): even bf16 must catch that.
    assert child.tolerance("bfloat16", k) < 0.5


def test_tolerance_accepts_real_rounding_and_rejects_garbage(torch: ModuleType) -> None:
    g = torch.Generator().manual_seed(1)
    n = 256
    a, b = torch.randn(n, n, generator=g), torch.randn(n, n, generator=g)
    reference = a.double() @ b.double()
    for dtype, precision in ((torch.float32, "float32"), (torch.bfloat16, "bfloat16")):
        product = a.to(dtype) @ b.to(dtype)
        assert child.normalized_error(product, reference, n) <= child.tolerance(precision, n)
    assert child.normalized_error(torch.zeros(n, n), reference, n) > child.tolerance("bfloat16", n)
    assert child.normalized_error(a @ b.t(), reference, n) > child.tolerance("bfloat16", n)


def test_normalized_error_flags_non_finite_results(torch: ModuleType) -> None:
    reference = torch.ones(4, 4)
    broken = torch.ones(4, 4)
    broken[1, 2] = float("nan")
    assert child.normalized_error(broken, reference, 4) == math.inf
    broken[1, 2] = float("inf")
    assert child.normalized_error(broken, reference, 4) == math.inf
    assert child.normalized_error(reference, reference, 4) == 0.0


def test_fit_size_shrinks_to_free_memory() -> None:
    assert child.fit_size(1024, None) == 1024
    assert child.fit_size(1024, 80 * 2**30) == 1024
    small = child.fit_size(1024, 11 * 2**20)
    assert small < 1024 and small % child.MIN_SIZE == 0
    assert small**2 * child.WORKING_SET <= 11 * 2**20 / child.MEMORY_SHARE
    assert child.fit_size(1024, 0) == child.MIN_SIZE  # still try: the failure is the finding
    assert child.fit_size(100, None) == 96


def test_step_timeout_is_cut_to_the_budget() -> None:
    assert child.step_timeout(20.0, None, 100.0) == 20.0
    assert child.step_timeout(20.0, 130.0, 100.0) == 20.0
    assert child.step_timeout(20.0, 105.0, 100.0) == 5.0
    assert child.step_timeout(20.0, 99.0, 100.0) < child.MIN_STEP_TIME


def test_child_scripts_keep_python36_syntax() -> None:
    scripts = sorted(Path(CHILD_DIR).glob("*.py"))
    assert {"torch_probe.py", "nvml_probe.py", "python_info.py"} <= {p.name for p in scripts}
    for path in scripts:
        source = path.read_text(encoding="utf-8")
        ast.parse(source, filename=str(path), feature_version=(3, 6))  # SyntaxError fails the test


def test_a_dtype_without_kernels_is_skipped_not_failed(
    torch: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_half(self: child.Smoke, device: child.Device, n: int, dtype: object, precision: str) -> None:
        raise RuntimeError("\"addmm_impl_cpu_\" not implemented for 'Half'")

    monkeypatch.setattr(child.Smoke, "matmul", no_half)
    smoke = child.Smoke(torch, {}, None, None)
    cpu = child.Device(torch, "cpu", "cpu", "CPU")
    assert smoke.run_step(cpu, "matmul_fp16", {"size": 64}) == "skipped"
    records = parse_records(capsys.readouterr().out)
    assert records[-1]["status"] == "skipped" and "not implemented for 'Half'" in records[-1]["note"]


def test_a_cuda_error_is_a_failure_even_if_it_says_not_supported(
    torch: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(self: child.Smoke, device: child.Device, n: int, dtype: object, precision: str) -> None:
        raise RuntimeError("CUDA error: operation not supported on this device")

    monkeypatch.setattr(child.Smoke, "matmul", broken)
    smoke = child.Smoke(torch, {}, None, None)
    cpu = child.Device(torch, "cpu", "cpu", "CPU")
    assert smoke.run_step(cpu, "matmul_bf16", {"size": 64}) == "failed"
    record = parse_records(capsys.readouterr().out)[-1]
    assert record["error"] == {
        "type": "RuntimeError",
        "message": "CUDA error: operation not supported on this device",
    }


def test_big_products_are_checked_on_their_first_and_last_rows(torch: ModuleType) -> None:
    smoke = child.Smoke(torch, {}, None, None)
    assert smoke.rows(1024) is None
    rows = smoke.rows(2048)
    assert rows is not None and len(rows) == 2 * child.SAMPLE_ROWS
    assert int(rows[0]) == 0 and int(rows[-1]) == 2047
    n = 2048
    reference = smoke.reference(n, exact=False)
    a, b = smoke.matrices(n)
    product = a @ b
    assert child.normalized_error(smoke.picked(product, n), reference, n) <= child.tolerance("float32", n)
    product[-1, 5] += 100.0  # a wrong value in the last tile
    assert child.normalized_error(smoke.picked(product, n), reference, n) > child.tolerance("bfloat16", n)


def test_steps_are_skipped_when_the_budget_is_spent(
    torch: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    smoke = child.Smoke(torch, {}, None, deadline=time.time() + child.MIN_STEP_TIME / 2)
    cpu = child.Device(torch, "cpu", "cpu", "CPU")
    assert smoke.run_step(cpu, "init", {"size": None}) == "skipped"
    record = parse_records(capsys.readouterr().out)[-1]
    assert record["status"] == "skipped" and "raise --timeout" in record["note"]
