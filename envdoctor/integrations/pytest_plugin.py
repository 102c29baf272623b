"""The pytest plugin (entry point `pytest11`): off unless asked.

    pytest --envdoctor            the check runs once per session: a header line (torch, device,
                                  driver), and the JSON report beside the JUnit file when one is
                                  written (--junitxml=out.xml -> out.envdoctor.json)
    pytest --envdoctor-strict     an error verdict (the project's expectations included, from
                                  envdoctor.toml or [tool.envdoctor]) fails the session at once,
                                  with each finding and its fix
    @pytest.mark.requires_cuda                                   skip unless torch can use CUDA
    @pytest.mark.requires_gpu(min_memory_gib=24, min_capability="8.0")   skip unless a GPU fits
    @pytest.mark.requires_torch(">=2.4")                         skip unless the torch version fits

A marked test skips with envdoctor's own reason ("torch 2.13.0+cpu is a CPU-only build"); the check
behind the markers runs at most once per session, the first time a marked test is set up. Nothing
here imports torch: the check runs it in a child process, as `envdoctor check` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from envdoctor.model.findings import Report

MARKERS = (
    "requires_cuda: skip unless torch can use a CUDA (or ROCm) GPU, with envdoctor's reason",
    "requires_gpu(min_memory_gib=None, min_capability=None): skip unless torch sees a GPU that fits",
    "requires_torch(spec): skip unless the installed torch's version is in `spec`, e.g. '>=2.4'",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("envdoctor", "envdoctor: does PyTorch really work here")
    group.addoption("--envdoctor", action="store_true", help="Run envdoctor's check once for the session.")
    group.addoption(
        "--envdoctor-strict",
        action="store_true",
        help="Fail the session at once when envdoctor's verdict is an error (expectations included).",
    )
    group.addoption(
        "--envdoctor-python", default=None, help="The interpreter to examine (default: this one)."
    )


def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    config.stash[_KEY] = _Session(config)


@dataclass
class _Session:
    config: pytest.Config
    report: Report | None = None
    error: str | None = None
    ran: bool = False
    said: list[str] = field(default_factory=list)

    @property
    def asked(self) -> bool:
        return bool(self.config.getoption("--envdoctor") or self.config.getoption("--envdoctor-strict"))

    def check(self) -> Report | None:
        """The report, made the first time anything asks for it; None when the check could not run."""
        if self.ran:
            return self.report
        self.ran = True
        from envdoctor.api import check
        from envdoctor.engine import registry_names
        from envdoctor.settings import SettingsError, resolve

        try:
            settings = resolve({}, cwd=str(self.config.rootpath), names=registry_names())
            self.report = check(settings, python=self.config.getoption("--envdoctor-python"))
        except (SettingsError, ValueError) as exc:
            self.error = str(exc)
        return self.report


_KEY = pytest.StashKey[_Session]()


def _session(config: pytest.Config) -> _Session:
    return config.stash[_KEY]


def pytest_report_header(config: pytest.Config) -> str | None:
    session = _session(config)
    if not session.asked:
        return None
    report = session.check()
    if report is None:
        return f"envdoctor: could not check ({session.error})"
    return "envdoctor: " + header_line(report)


def pytest_sessionstart(session: pytest.Session) -> None:
    state = _session(session.config)
    if not session.config.getoption("--envdoctor-strict"):
        return
    report = state.check()
    if report is None:
        pytest.exit(f"envdoctor: could not check ({state.error})", returncode=1)
    if report.exit_code != 0:
        from envdoctor.api import failed_findings, message

        pytest.exit("envdoctor --envdoctor-strict: " + message(report, failed_findings(report)), returncode=1)


def pytest_runtest_setup(item: pytest.Item) -> None:
    markers = [
        m for m in item.iter_markers() if m.name in ("requires_cuda", "requires_gpu", "requires_torch")
    ]
    if not markers:
        return
    state = _session(item.config)
    report = state.check()
    if report is None:
        pytest.skip(f"envdoctor could not check this environment ({state.error})")
    for marker in markers:
        reason = skip_reason(report, marker.name, marker.args, marker.kwargs)
        if reason is not None:
            pytest.skip(f"envdoctor: {reason}")


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = _session(session.config)
    junit = session.config.getoption("xmlpath", None)
    if not state.asked or not junit or state.report is None:
        return
    from envdoctor.render.json_report import render_json

    beside = Path(junit).with_suffix(".envdoctor.json")
    try:
        beside.write_text(render_json(state.report), encoding="utf-8")
    except OSError as exc:
        session.config.get_terminal_writer().line(f"envdoctor: cannot write {beside} ({exc.strerror or exc})")


# --- what the report says, in a line -----------------------------------------------------------


def _torch(report: Report) -> Any:
    from envdoctor.probes.torch_build import TorchFacts

    return next((p.facts for p in report.probes if isinstance(p.facts, TorchFacts)), None)


def header_line(report: Report) -> str:
    from envdoctor.probes.nvml import NvmlFacts

    torch = _torch(report)
    nvml = next((p.facts for p in report.probes if isinstance(p.facts, NvmlFacts)), None)
    if torch is None or not torch.installed:
        build = "torch not installed"
    elif torch.import_error is not None or torch.version is None:
        build = f"torch {torch.dist_version or '?'} does not import"
    else:
        build = f"torch {torch.version}"
    devices = [d.name or f"cuda:{d.index}" for d in (torch.devices if torch is not None else ())]
    device = ", ".join(devices) if devices and torch.cuda_available else "CPU only"
    driver = "no NVIDIA driver"
    if nvml is not None and nvml.driver_version:
        driver = f"driver {nvml.driver_version}"
    verdict = f"verdict {report.status} (exit {report.exit_code})"
    return f"{build}; {device}; {driver}; {verdict} for {report.interpreter.path}"


def _first_problem(report: Report) -> str | None:
    from envdoctor.model.findings import Severity

    found = next((f for f in report.primary if f.severity is Severity.ERROR), None)
    return f"{found.code} {found.title}" if found is not None else None


def skip_reason(report: Report, marker: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str | None:
    """Why a test with this marker cannot run here, in envdoctor's words; None when it can."""
    torch = _torch(report)
    if torch is None or not torch.installed:
        return f"torch is not installed in {report.interpreter.path}"
    if torch.import_error is not None or torch.version is None:
        return f"`import torch` fails in {report.interpreter.path}" + (
            f" ({_first_problem(report)})" if _first_problem(report) else ""
        )
    if marker == "requires_torch":
        return _torch_version_reason(torch.version, args, kwargs)
    usable = bool(torch.cuda_available) and bool(torch.devices)
    if not usable:
        if torch.cuda is None and torch.hip is None:
            return f"torch {torch.version} is a CPU-only build"
        problem = _first_problem(report)
        return f"torch {torch.version} cannot use a GPU here" + (f": {problem}" if problem else "")
    if marker == "requires_gpu":
        return _gpu_reason(torch, kwargs)
    return None


def _torch_version_reason(version: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str | None:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    spec = str(args[0] if args else kwargs.get("spec", ""))
    try:
        wanted = SpecifierSet(spec)
        have = Version(version.split("+", 1)[0])
    except (InvalidSpecifier, InvalidVersion):
        return f"requires_torch({spec!r}): not a version specifier such as '>=2.4'"
    return None if wanted.contains(have, prereleases=True) else f"torch {version} is not {spec}"


def _device_words(device: Any) -> str:
    capability = "".join(map(str, device.capability or ()))
    return f"{device.name} ({(device.total_memory_bytes or 0) / 2**30:.1f} GiB, sm_{capability})"


def _gpu_reason(torch: Any, kwargs: Mapping[str, Any]) -> str | None:
    memory = kwargs.get("min_memory_gib")
    capability = kwargs.get("min_capability")
    for device in torch.devices:
        if memory is not None and (device.total_memory_bytes or 0) < float(memory) * 0.98 * 2**30:
            continue
        if capability is not None:
            major, _, minor = str(capability).partition(".")
            if device.capability is None or tuple(device.capability) < (int(major), int(minor or 0)):
                continue
        return None
    wanted = ", ".join(f"{k}={v}" for k, v in kwargs.items()) or "a GPU"
    seen = "; ".join(_device_words(d) for d in torch.devices)
    return f"no GPU torch sees has {wanted} (it sees {seen})"


__all__ = ["header_line", "skip_reason"]
