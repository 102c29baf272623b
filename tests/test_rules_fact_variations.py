"""Every rule over every fixture crossed with variations of its facts (issue 13 item 19): torch
missing / hung / CPU / CUDA, driver none / old / new, a CUDA toolkit present or absent, Linux or
Windows. No combination may make a rule crash ("could not evaluate") or print "None"."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
from collections.abc import Callable

import pytest

from envdoctor.engine import diagnose
from envdoctor.model.findings import Finding, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes.nvml import Gpu, NvmlFacts
from envdoctor.probes.system import SystemFacts
from envdoctor.probes.toolkit import ToolkitFacts
from envdoctor.probes.torch_build import ChildEnd, TorchDevice, TorchFacts
from envdoctor.snapshot import Snapshot, load
from tests.fixture_support import FIXTURES, fixture_names
from tests.host_builder import LINUX, WINDOWS_11

pytestmark = pytest.mark.slow

GPU = Gpu(index=0, name="NVIDIA GeForce RTX 4090", capability=(8, 9), memory_total_bytes=25757220864)
DEVICE = TorchDevice(
    index=0, name=GPU.name, capability=GPU.capability, total_memory_bytes=GPU.memory_total_bytes
)
SITE = {"linux": "/home/user/.venv/lib/python3.11/site-packages", "windows": "C:\\venv\\Lib\\site-packages"}

TorchVariant = Callable[[str], TorchFacts | None]
TORCH: dict[str, TorchVariant] = {
    "probe-missing": lambda os: None,
    "not-installed": lambda os: TorchFacts(installed=False),
    "hung": lambda os: TorchFacts(installed=True, crash=ChildEnd(timed_out=True, last_stage="import torch")),
    "hung-labelled": lambda os: TorchFacts(
        installed=True,
        dist_version="2.5.1+cu124",
        location=SITE[os] + "/torch/__init__.py",
        crash=ChildEnd(timed_out=True, last_stage="import torch"),
    ),
    "cpu": lambda os: TorchFacts(
        installed=True,
        dist_version="2.13.0+cpu",
        version="2.13.0+cpu",
        location=SITE[os] + "/torch/__init__.py",
        cuda_available=False,
        device_count=0,
    ),
    "cuda": lambda os: TorchFacts(
        installed=True,
        dist_version="2.5.1+cu124",
        version="2.5.1+cu124",
        location=SITE[os] + "/torch/__init__.py",
        cuda="12.4",
        cudnn=90100,
        arch_list=("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"),
        cuda_available=True,
        device_count=1,
        devices=(DEVICE,),
    ),
}
NVML: dict[str, NvmlFacts | None] = {
    "probe-missing": None,
    "none": NvmlFacts(status="library_not_found", error="NVML Shared Library Not Found"),  # type: ignore[arg-type]
    "old": NvmlFacts(
        status="ok", source="nvml", driver_version="470.256.02", cuda_driver_version=11040, gpus=(GPU,)
    ),  # type: ignore[arg-type]
    "new": NvmlFacts(
        status="ok", source="nvml", driver_version="580.65.06", cuda_driver_version=13000, gpus=(GPU,)
    ),  # type: ignore[arg-type]
}


# Facts are frozen: loaded once, not once per variation (6,144 loads were half this file's CPU).
@functools.cache
def _toolkits(os_name: str) -> dict[str, ToolkitFacts]:
    """Present: a scenario machine's real toolkit facts for that OS; absent: nothing on PATH."""
    from tests.scenario_fixtures import SCENARIOS

    source = (
        "linux-cuda13-toolkit-no-driver-cpu-torch"
        if os_name == "linux"
        else "win11-conda-cuda118-bin-before-env-cu124"
    )
    present = next(p.facts for p in load(str(FIXTURES / f"{source}.json")).probes if p.probe == "toolkit")
    assert isinstance(present, ToolkitFacts) and present.toolkits and SCENARIOS
    return {"present": present, "absent": ToolkitFacts(os=os_name)}


# A missing value printed as a word ("The installed torch None"), not Python's "is None".
NONE_VALUE = re.compile(r"\b(?:torch|version|driver|CUDA|build|GPU|toolkit) None\b")
PLATFORMS: dict[str, PlatformInfo] = {"linux": LINUX, "windows": WINDOWS_11}


def _vary(snap: Snapshot, os_name: str, torch: str, nvml: str, toolkit: str) -> tuple[ProbeResult, ...]:
    replaced: dict[str, object | None] = {
        "torch": TORCH[torch](os_name),
        "nvml": NVML[nvml],
        "toolkit": _toolkits(os_name)[toolkit],
    }
    probes = []
    for probe in snap.probes:
        if probe.probe in replaced:
            continue
        if probe.probe == "system" and isinstance(probe.facts, SystemFacts):
            probe = dataclasses.replace(probe, facts=dataclasses.replace(probe.facts, os=os_name))
        probes.append(probe)
    for name, facts in replaced.items():
        if facts is not None:
            probes.append(ProbeResult(name, ProbeStatus.OK, 0.01, facts))
    return tuple(probes)


def _broken(findings: tuple[Finding, ...]) -> list[str]:
    bad = []
    for f in findings:
        text = " ".join([f.title, f.detail, *[x.summary for x in f.fixes]])
        if "could not evaluate" in f.title:
            bad.append(f"{f.title}: {f.detail}")
        elif NONE_VALUE.search(text):
            bad.append(f"{f.code} prints None: {text[:300]}")
    return bad


@pytest.mark.parametrize("name", fixture_names())
def test_no_rule_crashes_on_any_variation_of_a_fixtures_facts(name: str) -> None:
    snap = load(str(FIXTURES / f"{name}.json"))
    failures = []
    for os_name, torch, nvml, toolkit in itertools.product(PLATFORMS, TORCH, NVML, ("present", "absent")):
        probes = _vary(snap, os_name, torch, nvml, toolkit)
        report = diagnose(PLATFORMS[os_name], snap.interpreter, probes)
        for problem in _broken(report.findings):
            failures.append(f"{os_name}/torch={torch}/driver={nvml}/toolkit={toolkit}: {problem}")
    assert not failures, "\n".join(sorted(set(failures))[:20])
