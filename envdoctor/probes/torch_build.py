"""torch as the target interpreter sees it: build, bundled CUDA/cuDNN, arch list, devices, warnings.

Everything runs in a child process of the target interpreter (child/torch_probe.py); an import that
raises, exits, segfaults or hangs comes back as facts. The same child then runs the smoke test
(envdoctor/probes/torch_smoke.py holds its facts), so torch is imported once.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from envdoctor.host.base import ChildOutcome
from envdoctor.model.ending import ChildEnding
from envdoctor.model.findings import TextEnum
from envdoctor.probes import torch_smoke as smoke_facts
from envdoctor.probes.base import CheckOptions, ProbeContext, ProbeSpec
from envdoctor.probes.torch_smoke import SmokeFacts
from envdoctor.util.limits import small_int
from envdoctor.util.pep503 import normalize_name
from envdoctor.util.records import record
from envdoctor.util.serde import DataError, from_data

_MARGIN = 2.0  # seconds left to the engine after the child's own timeout (a quarter, if less)
_KILL_ROOM = 0.25  # seconds to kill a hung child and collect its output


@record
class PythonError:
    type: str
    message: str
    traceback: str | None = None


@record
class StepError:
    step: str
    type: str
    message: str


@record
class TorchDevice:
    index: int
    name: str | None = None
    capability: tuple[int, int] | None = None
    total_memory_bytes: int | None = None


@record
class Package:
    name: str
    version: str


class LoadStatus(str, enum.Enum):
    """How a companion's load check in the torch child ended."""

    OK = "ok"  # imported, and its compiled operator ran and answered right
    FAILED = "failed"  # the import or the operator raised
    WRONG = "wrong"  # the operator ran and answered wrong
    CRASHED = "crashed"  # the child died during the check
    TIMEOUT = "timeout"  # the check did not finish in time (watchdog or the parent's timeout)
    SKIPPED = "skipped"  # no time left in the child's budget


@record
class CompanionLoad:
    """torchvision or torchaudio imported beside torch: did its compiled extension load and run?"""

    name: str
    status: LoadStatus
    version: str | None = None  # the distribution's version (metadata): "0.28.0"
    module_version: str | None = None  # its own __version__, which keeps the variant: "0.28.0+cu130"
    cuda: str | None = None  # the CUDA version it was compiled with, when it says
    location: str | None = None
    step: str | None = None  # where it failed: import, nms, extension
    error: PythonError | None = None
    cause: str | None = None  # the dynamic loader's reason, from loading its library directly
    note: str | None = None
    seconds: float | None = None
    warnings: tuple[str, ...] = ()

    @property
    def problem(self) -> bool:
        return self.status not in (LoadStatus.OK, LoadStatus.SKIPPED)


@record
class Distribution:
    """An installed distribution that requires torch, a companion or triton, or is one of them."""

    name: str
    version: str
    requires: tuple[str, ...] = ()  # its Requires-Dist entries that name one of those, unparsed
    installer: str | None = None  # the INSTALLER file: pip, uv, conda
    source: str | None = None  # PEP 610 direct_url.json: the file or URL of a direct install


@record
class BuiltFor:
    """What an extension's own build-info file says it was built for (xformers' cpp_lib.json)."""

    torch: str | None = None  # "2.0.1+cu118"
    cuda: str | None = None  # as the file writes it: "1108" (11.8)
    python: str | None = None


@record
class TorchExtension:
    """An installed distribution whose compiled files link torch's libraries (or that envdoctor's
    table names as a torch extension): the candidates the child loads beside torch."""

    name: str
    version: str
    requires_torch: bool = False  # its metadata requires torch
    compiled_files: int = 0  # compiled files it ships (0: a pure-Python install of it)
    files: tuple[str, ...] = ()  # those that link torch's libraries (libc10, libtorch_cpu, c10.dll)
    installer: str | None = None
    source: str | None = None  # PEP 610: the wheel file or URL it came from (keeps a build tag)
    built_for: BuiltFor | None = None
    error: PythonError | None = None  # examining it failed
    python_package: bool = False  # it ships a Python package of its own (which imports torch first)
    top_level: tuple[str, ...] = ()  # torch-linked modules importable by themselves: `import trilinear`


@record
class ExtensionLoad:
    """One torch-linked compiled file of an extension, loaded beside torch in the child."""

    name: str  # the distribution
    file: str
    status: LoadStatus
    error: PythonError | None = None
    note: str | None = None
    seconds: float | None = None

    @property
    def problem(self) -> bool:
        return self.status not in (LoadStatus.OK, LoadStatus.SKIPPED)


@record
class CacheEntry:
    """One build folder of a JIT extension cache."""

    path: str
    lock: float | None = None  # the mtime of a lock file left there, if any
    built: float | None = None  # the mtime of its newest compiled library


@record
class JitCache:
    tool: str
    root: str
    entries: tuple[CacheEntry, ...] = ()


@record
class JitCaches:
    caches: tuple[JitCache, ...] = ()
    torch_installed: float | None = None  # mtime of torch/version.py: when this torch was installed
    now: float | None = None  # the child's clock when it looked


@record
class ExtensionFacts:
    """What sits around torch: companions loaded for real, packages pinned to a torch, torch
    extensions and their loads, JIT extension caches."""

    loads: tuple[CompanionLoad, ...] = ()
    distributions: tuple[Distribution, ...] | None = None  # None: not read (Python < 3.8)
    extensions: tuple[TorchExtension, ...] | None = None  # None: not examined (older snapshots)
    extension_loads: tuple[ExtensionLoad, ...] = ()
    jit: JitCaches | None = None

    def load(self, name: str) -> CompanionLoad | None:
        return next((c for c in self.loads if c.name == name), None)

    def distribution(self, name: str) -> Distribution | None:
        key = normalize_name(name)
        return next((d for d in self.distributions or () if normalize_name(d.name) == key), None)

    def extension(self, name: str) -> TorchExtension | None:
        key = normalize_name(name)
        return next((e for e in self.extensions or () if normalize_name(e.name) == key), None)

    def loads_of(self, name: str) -> tuple[ExtensionLoad, ...]:
        key = normalize_name(name)
        return tuple(load for load in self.extension_loads if normalize_name(load.name) == key)


@record
class TorchCopy:
    """A folder on sys.path that holds a torch package."""

    path: str
    version: str | None = None  # its torch/version.py
    dists: tuple[str, ...] = ()  # the versions of the torch dist-info/egg-info folders there


@record
class UserSite:
    path: str | None = None  # site.getusersitepackages()
    enabled: bool = False  # site.ENABLE_USER_SITE: the folder is on sys.path
    no_user_site_flag: bool = False  # python -s
    env: bool = False  # PYTHONNOUSERSITE is set


@record
class CondaPackage:
    name: str
    version: str
    build: str = ""


@record
class EntryPoint:
    """A command on PATH (python, pip, torchrun) and the interpreter it runs."""

    name: str
    path: str
    interpreter: str | None = None  # the #! interpreter (python itself for python); None: unknown
    same_environment: bool | None = None  # that interpreter sits in the examined one's folder


@record
class Surroundings:
    """What surrounds torch in the examined interpreter, read before `import torch` (so a crash
    in it still leaves them): copies of torch on sys.path, the user site, conda's packages."""

    torch_copies: tuple[TorchCopy, ...] = ()
    cwd_torch: TorchCopy | None = None  # a torch package folder in the working directory
    user_site: UserSite | None = None
    conda_packages: tuple[CondaPackage, ...] | None = None  # None: not a conda prefix
    numpy_version: str | None = None
    cpu_flags: tuple[str, ...] | None = None  # of sse4_2 avx avx2 fma avx512f, those the CPU has
    machine: str | None = None
    executable: str | None = None  # sys.executable of the examined interpreter
    entry_points: tuple[EntryPoint, ...] | None = None  # None: not looked at (Windows, older)

    def entry_point(self, name: str) -> EntryPoint | None:
        return next((e for e in self.entry_points or () if e.name == name), None)

    def conda(self, name: str) -> CondaPackage | None:
        return next((p for p in self.conda_packages or () if p.name.lower() == name.lower()), None)


class BridgeStatus(TextEnum):
    OK = "ok"  # tensor.numpy() worked
    FAILED = "failed"  # it raised ("Numpy is not available")
    NOT_RUN = "not_run"  # import torch failed, or an older snapshot


@record
class NumpyFacts:
    """NumPy beside torch, as the torch child saw it."""

    version: str | None = None  # the installed distribution; None: not installed
    bridge: BridgeStatus = BridgeStatus.NOT_RUN
    error: str | None = None  # what tensor.numpy() raised
    message: str | None = None  # what NumPy printed on stderr while torch imported, if anything

    @property
    def major(self) -> int | None:
        head = (self.version or "").split(".", 1)[0]
        return small_int(head)  # ASCII digits only: "²" in a snapshot is no version


@record
class ChildEnd:
    """How the child ended when it did not finish its report."""

    exit_code: int | None = None
    exit_signal: int | None = None
    timed_out: bool = False
    start_error: str | None = None
    last_stage: str | None = None
    stderr_tail: str = ""
    # The child ran in a working directory that no longer exists: `import torch` fails there
    # for the user too (libraries that resolve relative paths), whatever the install.
    working_directory_gone: bool = False

    @property
    def ending(self) -> ChildEnding:
        return ChildEnding.of(
            exit_code=self.exit_code,
            signal=self.exit_signal,
            timed_out=self.timed_out,
            start_error=self.start_error,
            stderr_tail=self.stderr_tail,
        )


@record
class AcceleratorFacts:
    """AMD and Intel GPUs as this torch sees them (child records from envdoctor 0.1 on; older
    snapshots have none)."""

    xpu: str | None = None  # torch.version.xpu: set in +xpu builds
    xpu_available: bool | None = None  # torch.xpu.is_available(); None: no torch.xpu (torch < 2.4)
    xpu_devices: tuple[TorchDevice, ...] = ()
    gfx_targets: tuple[str | None, ...] = ()  # ROCm: each device's gcnArchName, flags cut ("gfx90a")


@record
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
    extensions: ExtensionFacts | None = None  # None: not examined (snapshots from before it was)
    numpy: NumpyFacts | None = None  # None: not looked at (older snapshots, torch not installed)
    accelerators: AcceleratorFacts | None = None  # None: not looked at (older snapshots)
    cxx11_abi: bool | None = None  # torch._C._GLIBCXX_USE_CXX11_ABI; None: not read or not Linux
    surroundings: Surroundings | None = None  # None: not looked at (older snapshots)

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
        if self.accelerators is not None and self.accelerators.xpu:
            return "xpu"
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

    def companion_load(self, name: str) -> CompanionLoad | None:
        return self.extensions.load(name) if self.extensions is not None else None


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


def _text(value: Any) -> str | None:
    return str(value) if value is not None and value != "" else None


def _companion_load(raw: Mapping[str, Any]) -> CompanionLoad:
    try:
        status = LoadStatus(str(raw.get("status")))
    except ValueError:
        status = LoadStatus.FAILED
    seconds = raw.get("seconds")
    return CompanionLoad(
        name=str(raw.get("name")),
        status=status,
        version=_text(raw.get("version")),
        module_version=_text(raw.get("module_version")),
        cuda=_text(raw.get("cuda")),
        location=_text(raw.get("location")),
        step=_text(raw.get("step")),
        error=_python_error(raw.get("error")),
        cause=_text(raw.get("cause")),
        note=_text(raw.get("note")),
        seconds=float(seconds) if isinstance(seconds, (int, float)) else None,
        warnings=tuple(str(w) for w in raw.get("warnings") or ()),
    )


def _stopped_load(pending: Mapping[str, Any], outcome: ChildOutcome) -> CompanionLoad:
    """A check whose closing record never came: the process hung or died inside it."""
    name = str(pending.get("name"))
    timeout = pending.get("timeout")
    if outcome.timed_out or smoke_facts.WATCHDOG_MARK in outcome.stderr_tail:
        within = f" within {float(timeout):.0f} s" if isinstance(timeout, (int, float)) else ""
        error = PythonError("Timeout", f"import {name} did not finish{within}; the process was stopped")
        return CompanionLoad(name=name, status=LoadStatus.TIMEOUT, step="import", error=error)
    if outcome.signal:
        message = f"the process died of signal {outcome.signal} while loading {name}"
    else:
        message = f"the process exited with code {outcome.returncode} while loading {name}"
    tail = outcome.stderr_tail.strip()
    if tail:
        message += ": " + tail.splitlines()[-1][:500]
    error = PythonError("Crash", message)
    return CompanionLoad(name=name, status=LoadStatus.CRASHED, step="import", error=error)


def _distribution(raw: Any) -> Distribution | None:
    if not isinstance(raw, Mapping) or not raw.get("name") or not raw.get("version"):
        return None
    return Distribution(
        name=str(raw["name"]),
        version=str(raw["version"]),
        requires=tuple(str(r) for r in raw.get("requires") or ()),
        installer=_text(raw.get("installer")),
        source=_text(raw.get("source")),
    )


T = TypeVar("T")


def _typed(cls: type[T], raw: Any) -> T | None:
    """`raw` as `cls`, or None when the child's record does not have that shape (an odd record
    costs that record only)."""
    try:
        return from_data(cls, raw)
    except DataError:
        return None


def _extension_load(raw: Mapping[str, Any]) -> ExtensionLoad:
    try:
        status = LoadStatus(str(raw.get("status")))
    except ValueError:
        status = LoadStatus.FAILED
    seconds = raw.get("seconds")
    return ExtensionLoad(
        name=str(raw.get("name")),
        file=str(raw.get("file")),
        status=status,
        error=_python_error(raw.get("error")),
        note=_text(raw.get("note")),
        seconds=float(seconds) if isinstance(seconds, (int, float)) else None,
    )


def _stopped_extension(pending: Mapping[str, Any], outcome: ChildOutcome) -> ExtensionLoad:
    """An extension load whose closing record never came: it hung, or took the process down."""
    stopped = _stopped_load(pending, outcome)
    name = str(pending.get("name"))
    return ExtensionLoad(name=name, file=str(pending.get("file")), status=stopped.status, error=stopped.error)


def _extension_records(
    records: Sequence[Mapping[str, Any]], outcome: ChildOutcome
) -> tuple[tuple[TorchExtension, ...] | None, tuple[ExtensionLoad, ...], JitCaches | None]:
    listed = [r for r in records if r.get("record") == "extensions"]
    if not listed:
        return None, (), None
    raw = listed[-1]
    found = tuple(
        e for e in (_typed(TorchExtension, item) for item in raw.get("extensions") or ()) if e is not None
    )
    loads: list[ExtensionLoad] = []
    pending: Mapping[str, Any] | None = None
    for line in records:
        kind = line.get("record")
        if kind == "extension_start":
            pending = line
        elif kind == "extension":
            pending = None
            loads.append(_extension_load(line))
    if pending is not None:
        loads.append(_stopped_extension(pending, outcome))
    return found, tuple(loads), _typed(JitCaches, raw.get("jit"))


def surroundings_from_records(records: Sequence[Mapping[str, Any]]) -> Surroundings | None:
    found = [r for r in records if r.get("record") == "surroundings"]
    return _typed(Surroundings, found[-1]) if found else None


def extensions_from_records(records: Sequence[Mapping[str, Any]], outcome: ChildOutcome) -> ExtensionFacts:
    """The companion load checks, the distributions list, the torch extensions and their loads,
    and the JIT caches in the child's records."""
    torch = [r for r in records if r.get("record") == "torch"]
    raw_dists = torch[-1].get("distributions") if torch else None
    distributions = None
    if isinstance(raw_dists, list):
        distributions = tuple(d for d in map(_distribution, raw_dists) if d is not None)
    loads: list[CompanionLoad] = []
    pending: Mapping[str, Any] | None = None
    for raw in records:
        kind = raw.get("record")
        if kind == "companion_start":
            pending = raw
        elif kind == "companion":
            pending = None
            loads.append(_companion_load(raw))
    if pending is not None:
        loads.append(_stopped_load(pending, outcome))
    extensions, extension_loads, jit = _extension_records(records, outcome)
    return ExtensionFacts(
        loads=tuple(loads),
        distributions=distributions,
        extensions=extensions,
        extension_loads=extension_loads,
        jit=jit,
    )


def _numpy(raw: Any) -> NumpyFacts | None:
    if not isinstance(raw, Mapping):
        return None

    def text(key: str) -> str | None:
        value = raw.get(key)
        return str(value) if isinstance(value, str) else None

    return NumpyFacts(
        version=text("version"),
        bridge=BridgeStatus.parse(raw.get("bridge"), BridgeStatus.NOT_RUN),
        error=text("error"),
        message=text("message"),
    )


def _accelerators(raw: Mapping[str, Any]) -> AcceleratorFacts | None:
    if "xpu" not in raw and "gfx_targets" not in raw:
        return None  # a child from before these were looked at
    available = raw.get("xpu_available")
    return AcceleratorFacts(
        xpu=_text(raw.get("xpu")),
        xpu_available=available if isinstance(available, bool) else None,
        xpu_devices=tuple(
            TorchDevice(
                index=int(d.get("index", i)),
                name=_text(d.get("name")),
                total_memory_bytes=d.get("total_memory_bytes"),
            )
            for i, d in enumerate(raw.get("xpu_devices") or ())
            if isinstance(d, Mapping)
        ),
        gfx_targets=tuple(_text(g) for g in raw.get("gfx_targets") or ()),
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
        return TorchFacts(
            installed=bool(stages), crash=end, surroundings=surroundings_from_records(outcome.records)
        )
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
        numpy=_numpy(raw.get("numpy")),
        accelerators=_accelerators(raw),
        cxx11_abi=raw.get("cxx11_abi") if isinstance(raw.get("cxx11_abi"), bool) else None,
        surroundings=surroundings_from_records(outcome.records),
        smoke=smoke_facts.smoke_from_records(outcome.records, outcome)
        if smoke
        else smoke_facts.skipped("--no-smoke"),
        extensions=extensions_from_records(outcome.records, outcome),
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
    facts = facts_from_outcome(outcome, smoke=ctx.options.smoke)
    # host.cwd() is "." when os.getcwd() fails: the folder was deleted under the shell.
    if facts.crash is not None and ctx.host.cwd() == os.curdir:
        gone = dataclasses.replace(facts.crash, working_directory_gone=True)
        facts = dataclasses.replace(facts, crash=gone)
    return facts


def describe(facts: TorchFacts) -> str:
    if facts.crash is not None:
        return f"the torch check {facts.crash.ending.describe(facts.crash.last_stage)}"
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
    elif facts.accelerators is not None and facts.accelerators.xpu:
        parts.append(f"Intel XPU {facts.accelerators.xpu}")
    else:
        parts.append("CPU-only build")
    if facts.cuda or facts.hip:
        parts.append(
            f"{facts.device_count or 0} device(s) usable" if facts.cuda_available else "GPU not usable"
        )
    elif facts.accelerators is not None and facts.accelerators.xpu:
        xpu = facts.accelerators
        usable = f"{len(xpu.xpu_devices)} XPU device(s) usable"
        parts.append(usable if xpu.xpu_available else "XPU not usable")
    if facts.mps_available:
        parts.append("MPS available")
    text = ", ".join(parts)
    text += _newer_than_data(facts.version)
    said = smoke_facts.verdict(facts.smoke)
    return f"{text}; {said}" if said else text


def _load_line(load: CompanionLoad) -> str:
    version = f" {load.version}" if load.version else ""
    took = f" ({load.seconds * 1000:.0f} ms)" if load.seconds is not None else ""
    if load.status is LoadStatus.OK:
        said = "nms runs" if load.name == "torchvision" else "extension loaded"
        return f"{load.name}{version}: loads beside torch, {said}{took}"
    if load.status is LoadStatus.SKIPPED:
        return f"{load.name}{version}: not checked ({load.note or 'skipped'})"
    error = f": {load.error.type}" if load.error is not None else ""
    where = f" at {load.step}" if load.step else ""
    return f"{load.name}{version}: {load.status.value}{where}{error}"


def _newer_than_data(version: str | None) -> str:
    """Said plainly on the torch line: the rules judge such a build from its own facts (its CUDA
    version, its arch list), and fixes keep its release rather than downgrade it silently."""
    from envdoctor import knowledge

    if not knowledge.newer_than_data(version):
        return ""
    public = (version or "").split("+", 1)[0]
    return (
        f" (torch {public} is newer than envdoctor's data ({knowledge.data_horizon()}); "
        "`envdoctor update` refreshes it)"
    )


def details(facts: TorchFacts) -> tuple[str, ...]:
    loads = tuple(_load_line(load) for load in facts.extensions.loads) if facts.extensions else ()
    return loads + smoke_facts.describe_lines(facts.smoke)


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
