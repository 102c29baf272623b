"""What `envdoctor install` learns about this machine when an option does not say: the OS and
machine, the target interpreter's Python, the NVIDIA driver and GPUs (the NVML probe), and the index
pip is configured with. Everything goes through the Host; nothing imports torch."""

from __future__ import annotations

from dataclasses import dataclass

from envdoctor.host.base import Host
from envdoctor.probes.base import ProbeContext
from envdoctor.probes.mirrors import collect_pip
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.nvml import collect as collect_nvml
from envdoctor.target import PythonInfo, Target, TargetError, resolve_target


@dataclass(frozen=True)
class PipIndex:
    url: str
    where: str  # the variable (PIP_INDEX_URL) or the config file it came from


@dataclass(frozen=True)
class Detected:
    os: str
    machine: str
    target: Target | None = None
    target_error: str | None = None
    nvml: NvmlFacts | None = None
    nvml_error: str | None = None
    pip_index: PipIndex | None = None


def detect_python(host: Host, interpreter: str | None) -> tuple[Target | None, str | None]:
    try:
        return resolve_target(host, interpreter), None
    except TargetError as exc:
        return None, str(exc)


def detect_nvml(host: Host, target: Target) -> tuple[NvmlFacts | None, str | None]:
    try:
        return collect_nvml(ProbeContext(host=host, target=target)), None
    except Exception as exc:  # e.g. NotApplicable on macOS; the plan then says "no driver found"
        return None, str(exc) or type(exc).__name__


def configured_pip_index(host: Host, info: PythonInfo | None) -> PipIndex | None:
    """The index-url `pip install` would use here and where it is set (the mirrors probe's reading
    of pip's files and variables); None when pip uses its default."""
    setting = collect_pip(host, host.platform().os, info).get("index-url")
    if setting is None:
        return None
    return PipIndex(setting.value.strip(), setting.origin)


def detect(
    host: Host,
    *,
    interpreter: str | None,
    want_python: bool,
    want_gpu: bool,
    want_index: bool,
) -> Detected:
    plat = host.platform()
    target, error = (
        detect_python(host, interpreter) if (want_python or want_gpu or want_index) else (None, None)
    )
    nvml = nvml_error = None
    if want_gpu and target is not None:
        nvml, nvml_error = detect_nvml(host, target)
    index = configured_pip_index(host, target.info if target else None) if want_index else None
    return Detected(
        os=plat.os,
        machine=plat.machine,
        target=target,
        target_error=error,
        nvml=nvml,
        nvml_error=nvml_error,
        pip_index=index,
    )
