"""The smoke test's facts: what each step did on each device, parsed from the torch child's records.

Part of the torch probe (probes/torch_build.py runs the child; child/torch_probe.py runs the steps).
A step announces itself ("step_start") before it runs, so a start without a result is a step
that hung (the child's watchdog or the parent's timeout stopped it) or crashed the process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from envdoctor.host.base import ChildOutcome
from envdoctor.host.ending import ending_of_outcome
from envdoctor.model.findings import TextEnum
from envdoctor.util.records import record


class StepStatus(TextEnum):
    OK = "ok"
    WRONG = "wrong"  # ran, but the numbers are off
    FAILED = "failed"  # raised
    SKIPPED = "skipped"
    TIMEOUT = "timeout"  # the child's watchdog or the parent's timeout stopped it
    CRASHED = "crashed"  # the process died during the step


class DeviceKind(TextEnum):
    CPU = "cpu"
    CUDA = "cuda"
    ROCM = "rocm"
    MPS = "mps"
    XPU = "xpu"  # Intel GPUs through torch.xpu


PROBLEM_STATUSES = (StepStatus.WRONG, StepStatus.FAILED, StepStatus.TIMEOUT, StepStatus.CRASHED)
WATCHDOG_MARK = "Timeout ("  # faulthandler's first line when the child's step watchdog fires

STEP_LABELS = {
    "init": "init",
    "matmul_fp32": "matmul fp32",
    "autograd": "autograd",
    "matmul_fp16": "matmul fp16",
    "matmul_bf16": "matmul bf16",
    "conv2d": "conv2d",
}


@record
class SmokeError:
    type: str
    message: str  # verbatim, as torch raised it (up to 4000 characters)


@record
class SmokeStep:
    step: str  # init, matmul_fp32, autograd, matmul_fp16, matmul_bf16, conv2d
    status: StepStatus
    seconds: float | None = None  # wall time of the whole step, warm-up and check included
    time_per_iter: float | None = None  # after the warm-up
    reps: int | None = None
    flops: float | None = None  # per iteration
    size: int | None = None
    precision: str | None = None  # float32, tf32, float16, bfloat16
    max_error: float | None = None  # max|result - reference| / sqrt(k)
    tolerance: float | None = None
    finite: bool | None = None
    timeout: float | None = None  # the limit the step ran under
    note: str | None = None
    error: SmokeError | None = None
    warnings: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return STEP_LABELS.get(self.step, self.step)

    @property
    def problem(self) -> bool:
        return self.status in PROBLEM_STATUSES

    @property
    def throughput(self) -> float | None:
        """FLOP/s after the warm-up."""
        if self.flops and self.time_per_iter and self.time_per_iter > 0:
            return self.flops / self.time_per_iter
        return None


@record
class SmokeDevice:
    device: str  # "cpu", "cuda:0", "mps"
    kind: DeviceKind
    name: str | None = None
    capability: tuple[int, int] | None = None
    threads: int | None = None  # the CPU steps run on one thread, to be immune to a loaded machine
    threads_available: int | None = None  # torch's own thread count there
    size: int | None = None
    requested_size: int | None = None
    memory_free_before: int | None = None
    memory_free_after: int | None = None
    memory_total: int | None = None
    peak_allocated: int | None = None
    seconds: float | None = None
    steps: tuple[SmokeStep, ...] = ()

    @property
    def gpu(self) -> bool:
        return self.kind != DeviceKind.CPU

    @property
    def problems(self) -> tuple[SmokeStep, ...]:
        return tuple(s for s in self.steps if s.problem)

    @property
    def passed(self) -> bool:
        return bool(self.steps) and not self.problems

    def step(self, name: str) -> SmokeStep | None:
        for step in self.steps:
            if step.step == name:
                return step
        return None


@record
class SmokeFacts:
    ran: bool
    skipped_reason: str | None = None  # "--no-smoke"
    devices: tuple[SmokeDevice, ...] = ()
    seconds: float | None = None
    completed: bool = False  # the child reached the end of the smoke test
    stopped: StepStatus | None = None  # why it did not: TIMEOUT or CRASHED

    @property
    def problems(self) -> tuple[tuple[SmokeDevice, SmokeStep], ...]:
        return tuple((d, s) for d in self.devices for s in d.problems)

    @property
    def passed(self) -> bool:
        return self.ran and self.completed and not self.problems

    def device(self, label: str) -> SmokeDevice | None:
        for device in self.devices:
            if device.device == label:
                return device
        return None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _integer(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _capability(value: Any) -> tuple[int, int] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return int(value[0]), int(value[1])
    return None


def _step(raw: Mapping[str, Any]) -> SmokeStep:
    error = raw.get("error")
    return SmokeStep(
        step=str(raw.get("step")),
        status=StepStatus.parse(raw.get("status"), StepStatus.FAILED),
        seconds=_number(raw.get("seconds")),
        time_per_iter=_number(raw.get("time_per_iter")),
        reps=_integer(raw.get("reps")),
        flops=_number(raw.get("flops")),
        size=_integer(raw.get("size")),
        precision=_text(raw.get("precision")),
        max_error=_number(raw.get("max_error")),
        tolerance=_number(raw.get("tolerance")),
        finite=raw.get("finite") if isinstance(raw.get("finite"), bool) else None,
        timeout=_number(raw.get("timeout")),
        note=_text(raw.get("note")),
        error=SmokeError(str(error.get("type", "Exception")), str(error.get("message", "")))
        if isinstance(error, Mapping)
        else None,
        warnings=tuple(str(w) for w in raw.get("warnings") or ()),
    )


class _DeviceBuilder:
    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.start = raw
        self.steps: list[SmokeStep] = []
        self.pending: Mapping[str, Any] | None = None
        self.init_raw: Mapping[str, Any] = {}
        self.end: Mapping[str, Any] = {}

    def build(self) -> SmokeDevice:
        init = next((s for s in self.steps if s.step == "init"), None)
        init_raw = self.init_raw
        return SmokeDevice(
            device=str(self.start.get("device")),
            kind=DeviceKind.parse(self.start.get("kind"), DeviceKind.CPU),
            name=_text(self.start.get("name")),
            capability=_capability(self.start.get("capability")),
            threads=_integer(self.start.get("threads")),
            threads_available=_integer(self.start.get("threads_available")),
            size=init.size if init is not None else None,
            requested_size=_integer(init_raw.get("requested_size")),
            memory_free_before=_integer(init_raw.get("memory_free_bytes")),
            memory_free_after=_integer(self.end.get("memory_free_bytes")),
            memory_total=_integer(init_raw.get("memory_total_bytes"))
            or _integer(self.end.get("memory_total_bytes")),
            peak_allocated=_integer(self.end.get("peak_allocated_bytes")),
            seconds=_number(self.end.get("seconds")),
            steps=tuple(self.steps),
        )


def _stopped_step(pending: Mapping[str, Any], how: StepStatus, outcome: ChildOutcome) -> SmokeStep:
    timeout = _number(pending.get("timeout"))
    if how == StepStatus.TIMEOUT:
        limit = f" within {timeout:.0f} s" if timeout is not None else ""
        message = f"the step did not finish{limit}; the process was stopped"
        return SmokeStep(
            step=str(pending.get("step")),
            status=StepStatus.TIMEOUT,
            seconds=timeout,
            timeout=timeout,
            error=SmokeError("Timeout", message),
        )
    ending = ending_of_outcome(outcome)
    message = f"the process {ending.describe()} during this step"
    tail = ending.last_output(width=500)
    if tail:
        message += ": " + tail
    return SmokeStep(
        step=str(pending.get("step")),
        status=StepStatus.CRASHED,
        timeout=timeout,
        error=SmokeError("Crash", message),
    )


def smoke_from_records(records: Sequence[Mapping[str, Any]], outcome: ChildOutcome) -> SmokeFacts | None:
    """The smoke facts in the child's records; None when the smoke test never started."""
    started = [r for r in records if r.get("record") == "smoke" and r.get("phase") == "start"]
    if not started:
        return None
    devices: dict[str, _DeviceBuilder] = {}
    order: list[str] = []
    end: Mapping[str, Any] | None = None
    for raw in records:
        kind = raw.get("record")
        label = str(raw.get("device"))
        if kind == "smoke_device" and raw.get("phase") == "start":
            devices[label] = _DeviceBuilder(raw)
            order.append(label)
        elif kind == "smoke_device" and label in devices:
            devices[label].end = raw
        elif kind == "step_start" and label in devices:
            devices[label].pending = raw
        elif kind == "step" and label in devices:
            builder = devices[label]
            builder.pending = None
            builder.steps.append(_step(raw))
            if raw.get("step") == "init":
                builder.init_raw = raw
        elif kind == "smoke" and raw.get("phase") == "end":
            end = raw
    stopped = None
    if end is None:
        watchdog = WATCHDOG_MARK in outcome.stderr_tail
        stopped = StepStatus.TIMEOUT if (outcome.timed_out or watchdog) else StepStatus.CRASHED
        for builder in devices.values():
            if builder.pending is not None:
                builder.steps.append(_stopped_step(builder.pending, stopped, outcome))
                builder.pending = None
    return SmokeFacts(
        ran=True,
        devices=tuple(devices[label].build() for label in order),
        seconds=_number(end.get("seconds")) if end else None,
        completed=end is not None,
        stopped=stopped,
    )


def skipped(reason: str) -> SmokeFacts:
    return SmokeFacts(ran=False, skipped_reason=reason)


# -- words for the report --------------------------------------------------------------------


_MESSAGE_WIDTH = 100


def _duration(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 0.01:
        return f"{seconds * 1e3:.0f} ms"
    return f"{seconds * 1e3:.2f} ms"


def _rate(flops: float) -> str:
    for unit, scale in (("TFLOP/s", 1e12), ("GFLOP/s", 1e9), ("MFLOP/s", 1e6)):
        if flops >= scale:
            return f"{flops / scale:.3g} {unit}"
    return f"{flops:.3g} FLOP/s"


def _bytes(count: int) -> str:
    if count >= 2**30:
        return f"{count / 2**30:.1f} GiB"
    return f"{count / 2**20:.1f} MiB"


def _device_heading(device: SmokeDevice) -> str:
    parts = [device.device]
    if device.name:
        sm = f" (sm_{device.capability[0]}{device.capability[1]})" if device.capability else ""
        parts.append(device.name + sm)
    if device.threads:
        threads = f"{device.threads} thread{'s' if device.threads != 1 else ''}"
        if device.threads_available and device.threads_available != device.threads:
            threads += f" (torch uses {device.threads_available})"
        parts.append(threads)
    if device.size:
        size = f"{device.size}x{device.size}"
        if device.requested_size and device.size < device.requested_size:
            size += f" (reduced from {device.requested_size} to fit free memory)"
        parts.append(size)
    if device.memory_total:
        known = [m for m in (device.memory_free_before, device.memory_free_after) if m is not None]
        memory = "free " + " -> ".join(_bytes(m) for m in known) + f" of {_bytes(device.memory_total)}"
        if device.peak_allocated:
            memory += f", peak {_bytes(device.peak_allocated)}"
        parts.append(memory)
    return " · ".join(parts)


_PROBLEM_WORDS = {StepStatus.FAILED: "failed", StepStatus.TIMEOUT: "timed out", StepStatus.CRASHED: "crashed"}


def _step_line(step: SmokeStep, size: int | None) -> str:
    mark = "✓" if step.status == StepStatus.OK else "-" if step.status == StepStatus.SKIPPED else "✗"
    head = f"{mark} {step.label:<12}"
    if step.status == StepStatus.OK:
        if step.step == "init":
            return f"{head} {_duration(step.seconds or 0.0)}".rstrip()
        cells = [f"{_duration(step.time_per_iter or 0.0)}/iter"]
        rate = step.throughput
        cells.append(_rate(rate) if rate else "")
        extras = [f"{step.size}x{step.size}"] if step.size and size and step.size != size else []
        extras += [step.note] if step.note else []
        extras += ["TF32"] if step.precision == "tf32" else []
        extra = ", ".join(extras)
        return f"{head} {cells[0]:>12}  {cells[1]:>13}  {extra}".rstrip()
    if step.status == StepStatus.SKIPPED:
        return f"{head} skipped: {step.note or 'not run'}"
    if step.status == StepStatus.WRONG:
        if step.finite is False:
            return f"{head} wrong result: not finite (NaN/inf)"
        if step.max_error is not None and step.tolerance is not None:
            return f"{head} wrong result: error {step.max_error:.2g} > tolerance {step.tolerance:.2g}"
        return f"{head} wrong result: {step.note or 'did not match the reference'}"
    words = _PROBLEM_WORDS[step.status]
    message = step.error.message.strip().splitlines()[0] if step.error and step.error.message else ""
    if len(message) > _MESSAGE_WIDTH:  # the finding quotes it in full
        message = message[: _MESSAGE_WIDTH - 3].rstrip() + "..."
    return f"{head} {words}: {message}".rstrip()


def describe_lines(smoke: SmokeFacts | None) -> tuple[str, ...]:
    """The smoke test as one block: each device, then each step with its mark, time and throughput."""
    if smoke is None or not smoke.ran:
        return ()
    took = f" ({_duration(smoke.seconds)})" if smoke.seconds is not None else ""
    lines = [f"Smoke test{took}:"]
    for device in smoke.devices:
        lines.append("  " + _device_heading(device))
        lines.extend("    " + _step_line(step, device.size) for step in device.steps)
    if not smoke.completed:
        lines.append(f"  stopped early ({smoke.stopped}): devices after this point were not tested")
    return tuple(lines)


def verdict(smoke: SmokeFacts | None) -> str | None:
    """A few words for the area line; None when there is nothing to say."""
    if smoke is None:
        return None
    if not smoke.ran:
        return f"smoke test skipped ({smoke.skipped_reason})" if smoke.skipped_reason else None
    hung = [d.device for d in smoke.devices if any(s.status == StepStatus.TIMEOUT for s in d.problems)]
    failed = [d.device for d in smoke.devices if d.problems and d.device not in hung]
    said = [f"failed on {', '.join(failed)}"] if failed else []
    said += [f"hung on {', '.join(hung)}"] if hung else []
    if said:
        return "smoke test " + " and ".join(said)
    if not smoke.completed:
        return f"smoke test stopped early ({smoke.stopped})"
    return f"smoke test passed on {', '.join(d.device for d in smoke.devices)}"
