"""Recorded-style torch child outputs (tests/data/torch_child/*.json) run through the real probes.

Each file holds what the torch child printed on a GPU machine (stdout records, exit, stderr tail)
and what the NVML child answered, with the sources its values come from. FakeHost plays them back,
so the torch and NVML probes, the smoke parser and the rules run exactly as on that machine.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envdoctor.engine import diagnose, run_probes
from envdoctor.host.base import ChildOutcome
from envdoctor.host.fake import FakeHost
from envdoctor.model.findings import Interpreter, PlatformInfo, Report
from envdoctor.probes import CheckOptions, ProbeContext, nvml, torch_build
from envdoctor.target import PythonInfo, Target

DATA = Path(__file__).resolve().parent / "data" / "torch_child"
LINUX = PlatformInfo("Linux", "6.8.0-45-generic", "#45-Ubuntu SMP PREEMPT_DYNAMIC", "x86_64")
PYTHON = "/home/user/project/.venv/bin/python"


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    sources: tuple[str, ...]
    torch_child: ChildOutcome
    nvml_child: ChildOutcome


def scenario_names() -> list[str]:
    return sorted(p.stem for p in DATA.glob("*.json"))


def load_scenario(name: str) -> Scenario:
    raw: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
    torch_child = ChildOutcome(
        records=tuple(raw["stdout"]),
        returncode=raw["returncode"],
        signal=raw["signal"],
        timed_out=raw["timed_out"],
        stderr_tail=raw["stderr_tail"],
    )
    nvml_child = ChildOutcome(records=(raw["nvml"],), returncode=0)
    return Scenario(name, raw["description"], tuple(raw["sources"]), torch_child, nvml_child)


def target(python: str = PYTHON) -> Target:
    info = PythonInfo(
        executable=python,
        version="3.11.9",
        implementation="CPython",
        bits=64,
        prefix=python.rsplit("/bin/", 1)[0],
        is_venv=True,
        is_conda=False,
    )
    return Target(Interpreter(python, "the active environment ($VIRTUAL_ENV)"), info)


def fake_host(scenario: Scenario, platform: PlatformInfo = LINUX) -> FakeHost:
    return FakeHost(
        platform_info=platform,
        children={"torch_probe.py": scenario.torch_child, "nvml_probe.py": scenario.nvml_child},
        absent={nvml.PCI_DEVICES},  # the recordings hold the children's answers, not the PCI bus
    )


def run(
    name: str, options: CheckOptions | None = None, platform: PlatformInfo = LINUX
) -> tuple[Report, FakeHost]:
    """The report the torch and NVML probes and every rule make of scenario `name`."""
    host = fake_host(load_scenario(name), platform)
    ctx = ProbeContext(host=host, target=target(), options=options or CheckOptions())
    probes = run_probes(ctx, (nvml.PROBE, torch_build.PROBE))
    return diagnose(platform, ctx.target.interpreter, probes), host


def codes(report: Report) -> list[str]:
    return [f.code for f in report.findings]


def child_args(host: FakeHost) -> Sequence[str]:
    """The arguments the torch child was started with."""
    calls = [c for c in host.calls if len(c) > 1 and c[1] == "torch_probe.py"]
    assert calls, "the torch child was never started"
    return calls[-1][2:]
