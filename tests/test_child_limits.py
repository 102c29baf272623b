"""Every program a probe runs gets a limit derived from --timeout that leaves the probe time to say
what hung: the NVML child and nvidia-smi, nvcc, the Windows DLL child, the torch child."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest

from envdoctor.host.base import ChildOutcome, CommandResult
from envdoctor.host.fake import FakeHost
from envdoctor.model.findings import PlatformInfo
from envdoctor.probes import nvml, toolkit, torch_build, windows
from envdoctor.probes.base import CheckOptions
from tests.support import context

TIMEOUTS = [1.0, 3.0, 5.0, 10.0, 60.0]


class Hangs:
    """A child that 'hangs': records the limit it was given and reports a timeout."""

    def __init__(self) -> None:
        self.limits: list[float] = []

    def __call__(self, interpreter: str, args: Sequence[str], timeout: float) -> ChildOutcome:
        self.limits.append(timeout)
        return ChildOutcome(records=(), returncode=None, timed_out=True)


@pytest.mark.parametrize("timeout", TIMEOUTS)
def test_a_hung_nvml_child_and_nvidia_smi_fit_the_probe(timeout: float) -> None:
    smi = "/usr/bin/nvidia-smi"
    hangs = Hangs()
    hung = CommandResult(returncode=None, timed_out=True)
    host = FakeHost(
        absent={"/sys/bus/pci/devices"},  # no PCI devices: only the two programs matter here
        programs={"nvidia-smi": smi},
        children={"nvml_probe.py": hangs},
        commands={(smi, f"--query-gpu={nvml._SMI_FIELDS}", "--format=csv,noheader,nounits"): hung},
    )
    options = CheckOptions(timeout=timeout)
    facts = nvml.collect(context(host, timeout=timeout))
    limit = min(nvml.PROBE.timeout, timeout)
    smi_limit = options.child_limit(nvml.PROBE.timeout, nvml._SMI_TIMEOUT, share=0.2)
    assert hangs.limits[0] + 2 * smi_limit < limit  # child, query and header all fit
    assert "hung" in (facts.error or "") and smi in (facts.error or "")


@pytest.mark.parametrize("timeout", TIMEOUTS)
def test_a_hung_dll_child_fits_the_windows_probe(timeout: float) -> None:
    from tests.scenario_fixtures import SCENARIOS

    scenario = SCENARIOS["win11-torch291-vc-redist-1436-winerror-1114"]()
    hangs = Hangs()
    scenario.host.children["dll_probe.py"] = hangs
    ctx = context(scenario.host, timeout=timeout)
    ctx = type(ctx)(host=scenario.host, target=scenario.target, options=ctx.options)
    facts = windows.collect(ctx)
    assert hangs.limits[0] < min(windows.PROBE.timeout, timeout)
    assert facts.dll_load.status == "timeout"
    assert "hung for" in (facts.dll_load.error or "")


@pytest.mark.parametrize("timeout", TIMEOUTS)
def test_nvcc_runs_once_within_a_share_of_the_probe(timeout: float) -> None:
    nvcc = "/usr/local/cuda/bin/nvcc"
    host = FakeHost(
        absent={"/usr/local", *(f"/home/user/.venv/{p}" for p in ("conda-meta", "lib", "lib64"))},
        programs={"nvcc": nvcc},
        environ={"CUDA_HOME": "/usr/local/cuda", "PATH": "/usr/local/cuda/bin"},
        files={nvcc: "\x7fELF", "/usr/local/cuda/include/cuda_runtime.h": ""},
        dirs={"/usr/local/cuda": ("bin", "include"), "/usr/local/cuda/bin": ("nvcc",)},
        commands={(nvcc, "--version"): CommandResult(returncode=None, timed_out=True)},
    )
    facts = toolkit.collect(context(host, timeout=timeout))
    assert host.calls.count((nvcc, "--version")) == 1
    assert toolkit.nvcc_timeout(CheckOptions(timeout=timeout)) * 2 < min(toolkit.PROBE.timeout, timeout)
    assert "hung for" in toolkit.describe(facts) and nvcc in toolkit.describe(facts)


@pytest.mark.parametrize("timeout", TIMEOUTS)
def test_the_torch_child_ends_before_the_engines_deadline(timeout: float) -> None:
    options = CheckOptions(timeout=timeout)
    assert torch_build.child_timeout(options) < min(timeout, torch_build.PROBE.timeout)
    # Started late in the run (after a slow interpreter check), it still ends before the deadline.
    late = CheckOptions(timeout=timeout, deadline=time.monotonic() + timeout / 3)
    hangs = Hangs()
    host = FakeHost(children={"torch_probe.py": hangs})
    facts = torch_build.collect(context(host, timeout=timeout, deadline=late.deadline))
    assert hangs.limits[0] < timeout / 3
    assert facts.crash is not None and facts.crash.timed_out


def test_limits_never_pass_the_runs_deadline() -> None:
    options = CheckOptions(timeout=60, deadline=time.monotonic() + 2)
    assert options.child_limit(20, 15, share=0.5) <= 1.0
    assert options.seconds_left(30) <= 2
    windows_platform = PlatformInfo("Windows", "10", "10.0.22631", "AMD64")
    assert windows_platform.os == "windows"
