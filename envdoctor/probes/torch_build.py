"""torch as the target interpreter sees it: build, bundled CUDA/cuDNN, arch list, devices, warnings.

Everything runs in a child process of the target interpreter (child/torch_probe.py); an import that
raises, exits, segfaults or hangs comes back as facts. The same child then runs the smoke test
(envdoctor/probes/torch_smoke.py holds its facts), so torch is imported once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envdoctor.host.base import ChildOutcome
from envdoctor.probes import torch_smoke as smoke_facts
from envdoctor.probes.base import CheckOptions, ProbeContext, ProbeSpec
from envdoctor.probes.torch_smoke import SmokeFacts

_MARGIN = 2.0  # seconds left to the engine after the child's own timeout (a quarter, if less)
_KILL_ROOM = 0.25  # seconds to kill a hung child and collect its output


@dataclass(frozen=True)
class PythonError:
    type: str
    message: str
    traceback: str | None = None


@dataclass(frozen=True)
class StepError:
    step: str
    type: str
    message: str


@dataclass(frozen=True)
class TorchDevice:
    index: int
    name: str | None = None
    capability: tuple[int, int] | None = None
    total_memory_bytes: int | None = None


@dataclass(frozen=True)
class Package:
    name: str
    version: str


@dataclass(frozen=True)
class ChildEnd:
    """How the child ended when it did not finish its report."""

    exit_code: int | None = None
    exit_signal: int | None = None
    timed_out: bool = False
    start_error: str | None = None
    last_stage: str | None = None
    stderr_tail: str = ""


@dataclass(frozen=True)
class TorchFacts:
    installed: bool
    dist_version: str | None = None
    version: str | None = None
    location: str | None = None
    cuda: str | None = None
    hip: str | None = None
    cudnn: int | None = None
    git_version: str | None = None
    arch_list: tuple[str, ...] = ()
    cuda_available: bool | None = None
    device_count: int | None = None
    devices: tuple[TorchDevice, ...] = ()
    mps_available: bool | None = None
    warnings: tuple[str, ...] = ()
    import_error: PythonError | None = None
    errors: tuple[StepError, ...] = ()
    companions: tuple[Package, ...] = ()
    import_seconds: float | None = None
    cuda_visible_devices: str | None = None  # as the target interpreter sees it; None when unset
    crash: ChildEnd | None = None
    smoke: SmokeFacts | None = None  # None: not run (older snapshots, no torch, import failed)

    @property
    def imported(self) -> bool:
        return self.installed and self.version is not None and self.import_error is None

    @property
    def local_label(self) -> str | None:
        """ "cu124" from "2.5.1+cu124"; None when the version carries no label (PyPI wheels)."""
        version = self.version or self.dist_version
        if version and "+" in version:
            return version.split("+", 1)[1]
        return None

    @property
    def variant(self) -> str | None:
        """The build variant: cu124, cpu, rocm6.2, ... from the label, else from torch.version."""
        label = self.local_label
        if label and re.fullmatch(r"cu\d+|cpu|rocm[\d.]+|xpu", label):
            return label
        if not self.imported:
            return None
        if self.cuda:
            return "cu" + self.cuda.replace(".", "")[:3]
        if self.hip:
            return "rocm" + ".".join(self.hip.split(".")[:2])
        return "cpu"

    @property
    def public_version(self) -> str | None:
        """ "2.5.1" from "2.5.1+cu124"."""
        version = self.version or self.dist_version
        return version.split("+", 1)[0] if version else None

    def companion(self, name: str) -> str | None:
        for package in self.companions:
            if package.name == name:
                return package.version
        return None


def _tuple2(value: Any) -> tuple[int, int] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return int(value[0]), int(value[1])
    return None


def _python_error(raw: Any) -> PythonError | None:
    if not isinstance(raw, Mapping):
        return None
    return PythonError(
        type=str(raw.get("type", "Exception")),
        message=str(raw.get("message", "")),
        traceback=raw.get("traceback"),
    )


def facts_from_outcome(outcome: ChildOutcome, smoke: bool = True) -> TorchFacts:
    """Turn the child's records, or the way it died, into facts."""
    records = [r for r in outcome.records if r.get("record") == "torch"]
    stages = [str(r.get("stage")) for r in outcome.records if r.get("record") == "stage"]
    if not records:
        end = ChildEnd(
            exit_code=outcome.returncode,
            exit_signal=outcome.signal,
            timed_out=outcome.timed_out,
            start_error=outcome.start_error,
            last_stage=stages[-1] if stages else None,
            stderr_tail=outcome.stderr_tail[-2000:],
        )
        return TorchFacts(installed=bool(stages), crash=end)
    raw = records[-1]
    devices = tuple(
        TorchDevice(
            index=int(d.get("index", i)),
            name=d.get("name"),
            capability=_tuple2(d.get("capability")),
            total_memory_bytes=d.get("total_memory_bytes"),
        )
        for i, d in enumerate(raw.get("devices") or ())
    )
    errors = tuple(
        StepError(str(e.get("step")), str(e["error"].get("type")), str(e["error"].get("message")))
        for e in raw.get("errors") or ()
        if isinstance(e, Mapping) and isinstance(e.get("error"), Mapping)
    )
    cudnn = raw.get("cudnn")
    return TorchFacts(
        installed=bool(raw.get("installed")),
        dist_version=raw.get("dist_version"),
        version=raw.get("version"),
        location=raw.get("location"),
        cuda=raw.get("cuda"),
        hip=raw.get("hip"),
        cudnn=int(cudnn) if isinstance(cudnn, int) else None,
        git_version=raw.get("git_version"),
        arch_list=tuple(str(a) for a in raw.get("arch_list") or ()),
        cuda_available=raw.get("cuda_available"),
        device_count=raw.get("device_count"),
        devices=devices,
        mps_available=raw.get("mps_available"),
        warnings=tuple(str(w) for w in raw.get("warnings") or ()),
        import_error=_python_error(raw.get("import_error")),
        errors=errors,
        companions=tuple(
            Package(str(p["name"]), str(p["version"]))
            for p in raw.get("companions") or ()
            if isinstance(p, Mapping) and "name" in p and "version" in p
        ),
        import_seconds=raw.get("import_seconds"),
        cuda_visible_devices=raw.get("cuda_visible_devices"),
        smoke=smoke_facts.smoke_from_records(outcome.records, outcome)
        if smoke
        else smoke_facts.skipped("--no-smoke"),
    )


def child_args(options: CheckOptions, timeout: float) -> tuple[str, ...]:
    """The torch child's arguments: whether and how big to smoke-test, and its time budget."""
    if not options.smoke:
        return ("--no-smoke",)
    args = ["--budget", f"{timeout:.1f}"]
    if options.smoke_size is not None:
        args += ["--smoke-size", str(options.smoke_size)]
    return tuple(args)


def child_timeout(options: CheckOptions) -> float:
    """The child's own limit: always below the engine's deadline (--timeout), so that a hung
    import is stopped, killed and reported (ED003) by the probe, not lost to the engine's timeout."""
    limit = min(options.timeout, PROBE.timeout)
    return limit - min(_MARGIN, limit / 4)


def collect(ctx: ProbeContext) -> TorchFacts:
    timeout = child_timeout(ctx.options)
    left = ctx.options.seconds_left(timeout + _MARGIN)
    if left < timeout + _KILL_ROOM:  # started late in the run: the child still ends before it
        timeout = max(0.1, left - max(_KILL_ROOM, min(_MARGIN, left / 4)))
    args = child_args(ctx.options, timeout)
    outcome = ctx.host.python_json(ctx.target.interpreter.path, "torch_probe.py", args, timeout)
    return facts_from_outcome(outcome, smoke=ctx.options.smoke)


def describe(facts: TorchFacts) -> str:
    if facts.crash is not None:
        end = facts.crash
        if end.timed_out:
            how = "hung"
        elif end.exit_signal:
            how = f"crashed (signal {end.exit_signal})"
        elif end.start_error:
            how = f"could not start ({end.start_error})"
        else:
            how = f"exited with code {end.exit_code}"
        where = f" during {end.last_stage}" if end.last_stage else ""
        return f"the torch check {how}{where}"
    if not facts.installed:
        return "torch is not installed"
    if facts.import_error is not None:
        return f"import torch fails: {facts.import_error.type}"
    parts = [f"torch {facts.version}"]
    if facts.cuda:
        parts.append(f"CUDA {facts.cuda}")
        if facts.cudnn:
            parts.append(f"cuDNN {facts.cudnn}")
    elif facts.hip:
        parts.append(f"ROCm/HIP {facts.hip}")
    else:
        parts.append("CPU-only build")
    if facts.cuda or facts.hip:
        parts.append(
            f"{facts.device_count or 0} device(s) usable" if facts.cuda_available else "GPU not usable"
        )
    if facts.mps_available:
        parts.append("MPS available")
    text = ", ".join(parts)
    said = smoke_facts.verdict(facts.smoke)
    return f"{text}; {said}" if said else text


def details(facts: TorchFacts) -> tuple[str, ...]:
    return smoke_facts.describe_lines(facts.smoke)


PROBE = ProbeSpec(
    name="torch",
    title="PyTorch build",
    facts_type=TorchFacts,
    collect=collect,
    describe=describe,
    details=details,
    # Bounded by --timeout (the engine takes the smaller): a slow import or smoke test on a big
    # machine gets what the user allows, not a fixed minute.
    timeout=3600.0,
    slow=True,
)
