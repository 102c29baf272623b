"""The all-reduce every rank runs: exact sums of known values, then a short timed loop.

Correctness: every rank contributes values derived from its rank, in float32 (small integers, exact
up to hundreds of thousands of ranks) and int64; each rank knows the exact sum and compares all of
it. Bandwidth: nccl-tests' definitions, algbw = bytes / time per all-reduce and busbw = algbw ×
2(n-1)/n. The loop length is agreed across ranks (a MAX all-reduce of each rank's estimate), since a
rank that runs one all-reduce more than the others would hang them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from envdoctor.fleet.facts import CollectiveResult, Stage

ELEMENTS = 262_147  # odd on purpose: chunked algorithms must handle the remainder
MAX_ITERATIONS = 500


def _first_mismatch(torch: Any, got: Any, expected: Any, label: str) -> str | None:
    if bool(torch.equal(got, expected)):
        return None
    wrong = (got != expected).nonzero()
    index = int(wrong[0].item())
    return (
        f"{label}: {int(wrong.numel())} of {got.numel()} elements wrong; element {index} is "
        f"{got[index].item()}, expected {expected[index].item()}"
    )


def check_sums(torch: Any, dist: Any, device: Any, rank: int, world: int) -> str | None:
    """None when both all-reduces return the exact sums; else the first mismatch, in words."""
    index = torch.arange(ELEMENTS, dtype=torch.int64, device=device)
    pattern = ((index % 5) + 1).to(torch.float32)
    floats = pattern * float(rank % 7 + 1)
    ints = (index % 1009) * (rank + 1) + rank
    dist.all_reduce(floats)
    dist.all_reduce(ints)
    weight = sum(r % 7 + 1 for r in range(world))
    expected_floats = pattern * float(weight)
    expected_ints = (index % 1009) * (world * (world + 1) // 2) + world * (world - 1) // 2
    return _first_mismatch(torch, floats, expected_floats, "float32") or _first_mismatch(
        torch, ints, expected_ints, "int64"
    )


def _sync(torch: Any, device: Any) -> None:
    if getattr(device, "type", "cpu") == "cuda":
        torch.cuda.synchronize(device)


def measure(
    torch: Any, dist: Any, device: Any, world: int, size_bytes: int, seconds: float, budget: float
) -> tuple[int, float]:
    """(iterations, elapsed seconds) of an all-reduce loop sized to about `seconds` (at most `budget`)."""
    buffer = torch.ones(max(1, size_bytes // 4), dtype=torch.float32, device=device)
    dist.all_reduce(buffer)  # warm-up: connections and buffers are set up on first use
    _sync(torch, device)
    started = time.perf_counter()
    for _ in range(2):
        dist.all_reduce(buffer)
    _sync(torch, device)
    estimate = torch.tensor([(time.perf_counter() - started) / 2], dtype=torch.float64, device=device)
    dist.all_reduce(estimate, op=dist.ReduceOp.MAX)  # every rank must run the same loop
    per_iteration = max(float(estimate.item()), 1e-6)
    iterations = int(max(1, min(MAX_ITERATIONS, min(seconds, budget / 2) / per_iteration)))
    _sync(torch, device)
    started = time.perf_counter()
    for _ in range(iterations):
        dist.all_reduce(buffer)
    _sync(torch, device)
    return iterations, time.perf_counter() - started


def run(
    torch: Any,
    dist: Any,
    device: Any,
    rank: int,
    world: int,
    backend: str,
    size_bytes: int,
    seconds: float,
    budget: float,
    stage: Callable[[Stage], None],
) -> CollectiveResult:
    """Correctness, then bandwidth (skipped when `seconds` is 0 or the sums were wrong)."""
    stage(Stage.ALLREDUCE)
    mismatch = check_sums(torch, dist, device, rank, world)
    stage(Stage.VERIFIED)
    if mismatch is not None or seconds <= 0:
        return CollectiveResult(backend=backend, correct=mismatch is None, mismatch=mismatch)
    iterations, elapsed = measure(torch, dist, device, world, size_bytes, seconds, budget)
    stage(Stage.MEASURED)
    algbw = size_bytes / (elapsed / iterations) if elapsed > 0 else None
    busbw = algbw * 2 * (world - 1) / world if algbw is not None and world > 1 else None
    return CollectiveResult(
        backend=backend,
        correct=True,
        size_bytes=size_bytes,
        iterations=iterations,
        seconds=round(elapsed, 4),
        algbw=algbw,
        busbw=busbw,
    )
