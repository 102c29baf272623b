"""NumPy beside torch (ED210, ED211; the child's NumPy facts) and nightly companions in ED202."""

from __future__ import annotations

import io
import sys

import pytest

from envdoctor.child import torch_probe as child
from envdoctor.engine import evaluate
from envdoctor.host.base import ChildOutcome
from envdoctor.knowledge import numpy_support
from envdoctor.model.findings import Finding, Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes.nvml import Gpu, NvmlFacts
from envdoctor.probes.torch_build import (
    BridgeStatus,
    NumpyFacts,
    Package,
    PythonError,
    TorchFacts,
    facts_from_outcome,
)
from envdoctor.rules.base import RuleContext
from envdoctor.rules.torch import nightly
from tests.support import PYTHON

LINUX = PlatformInfo("Linux", "6.8", "1", "x86_64")
WINDOWS = PlatformInfo("Windows", "11", "10", "AMD64")
NVML = NvmlFacts(
    status="ok", driver_version="550.144.03", cuda_driver_version=12040, gpus=(Gpu(0, "A10", (8, 6)),)
)
ARRAY_API = (
    "Failed to initialize NumPy: _ARRAY_API not found "
    "(Triggered internally at ../torch/csrc/utils/tensor_numpy.cpp:84.)"
)


def run(
    torch: TorchFacts, platform: PlatformInfo = LINUX, nvml: NvmlFacts | None = NVML
) -> dict[str, Finding]:
    given = (("python", PYTHON), ("nvml", nvml), ("torch", torch))
    probes = tuple(
        ProbeResult(name, ProbeStatus.OK, 0.0, facts) for name, facts in given if facts is not None
    )
    ctx = RuleContext.build(platform, Interpreter("/env/bin/python", "r"), probes)
    return {f.code: f for f in evaluate(ctx)}


def cpu_torch(version: str, numpy: NumpyFacts | None, **kw: object) -> TorchFacts:
    return TorchFacts(installed=True, version=version, dist_version=version, numpy=numpy, **kw)  # type: ignore[arg-type]


# --- ED210 -----------------------------------------------------------------------------------


def test_numpy2_beside_a_torch_built_for_numpy1_is_an_error_with_two_cures() -> None:
    # No GPU here: a CPU torch on a GPU machine would be ED201's, which shows the upgrade command first.
    found = run(
        cpu_torch(
            "2.2.1+cpu",
            NumpyFacts("2.0.0", BridgeStatus.FAILED, "Numpy is not available"),
            warnings=(ARRAY_API,),
        ),
        nvml=None,
    )
    finding = found["ED210"]
    assert finding.title == "NumPy 2.0.0 is installed, but torch 2.2.1+cpu was built for NumPy 1.x"
    assert "_ARRAY_API not found" in finding.detail and "from torch 2.3.0 on" in finding.detail
    pin, upgrade = finding.fixes
    assert pin.commands == ("/env/bin/python -m pip install 'numpy<2'",)
    assert "torch==" in upgrade.commands[0] and "/whl/cpu" in upgrade.commands[0]  # the CPU build stays CPU


def test_the_version_table_alone_is_enough_and_windows_needs_241() -> None:
    quiet = cpu_torch("2.3.1+cpu", NumpyFacts("2.1.0", BridgeStatus.OK))
    assert "ED210" not in run(quiet)  # Linux wheels of 2.3 are built for NumPy 2
    assert "ED210" in run(quiet, WINDOWS)  # Windows wheels only from 2.4.1 (pytorch/pytorch#131668)
    assert "ED210" not in run(cpu_torch("2.4.1+cpu", NumpyFacts("2.1.0", BridgeStatus.OK)), WINDOWS)
    assert numpy_support.built_for_numpy1("2.4.0", "windows") and not numpy_support.built_for_numpy1(
        "2.4.0", "linux"
    )
    assert numpy_support.built_for_numpy1("not a version", "linux") is None


def test_torch_s_own_words_count_even_for_a_newer_torch() -> None:
    """A conda build of 2.3 made against NumPy 1.x: the table says fine, torch's warning says not."""
    torch = cpu_torch(
        "2.3.1", NumpyFacts("2.2.5", BridgeStatus.FAILED, "Numpy is not available"), warnings=(ARRAY_API,)
    )
    assert "ED210" in run(torch)


def test_numpy1_or_no_numpy_facts_say_nothing() -> None:
    assert "ED210" not in run(cpu_torch("2.2.1+cpu", NumpyFacts("1.26.4", BridgeStatus.OK)))
    assert "ED210" not in run(cpu_torch("2.2.1+cpu", None))


def test_an_import_that_fails_on_numpy_folds_under_ed210() -> None:
    message = "numpy.core.multiarray failed to import"
    torch = TorchFacts(
        installed=True,
        dist_version="1.13.1",
        import_error=PythonError("ImportError", message),
        numpy=NumpyFacts(
            "2.0.0", message="A module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.0.0"
        ),
    )
    found = run(torch)
    assert found["ED002"].folded_under == "ED210"
    assert "even import torch fails" in found["ED210"].detail


# --- ED211 -----------------------------------------------------------------------------------


def test_no_numpy_is_a_note_with_the_install_command() -> None:
    torch = cpu_torch(
        "2.5.1+cpu",
        NumpyFacts(None, BridgeStatus.FAILED, "Numpy is not available"),
        warnings=("Failed to initialize NumPy: No module named 'numpy'",),
    )
    finding = run(torch)["ED211"]
    assert finding.severity.value == "info" and "all_gather_object" in finding.detail
    assert finding.fixes[0].commands == ("/env/bin/python -m pip install numpy",)
    old = run(cpu_torch("2.2.1+cpu", NumpyFacts(None)))["ED211"]
    assert old.fixes[0].commands == ("/env/bin/python -m pip install 'numpy<2'",)
    assert "ED211" not in run(cpu_torch("2.5.1+cpu", None))  # an older snapshot: nothing known


# --- the child ---------------------------------------------------------------------------------


class _Tensor:
    def __init__(self, fail: bool) -> None:
        self.fail = fail

    def numpy(self) -> object:
        if self.fail:
            raise RuntimeError("Numpy is not available")
        return [0.0]


class _Torch:
    def __init__(self, fail: bool) -> None:
        self.fail = fail

    def zeros(self, n: int) -> _Tensor:
        return _Tensor(self.fail)


def test_child_numpy_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(child, "dist_version", lambda name: "2.0.0" if name == "numpy" else None)
    assert child.numpy_facts(_Torch(False), "") == {"version": "2.0.0", "bridge": "ok"}
    failed = child.numpy_facts(_Torch(True), "A module that was compiled using NumPy 1.x cannot be run in")
    assert failed["bridge"] == "failed" and failed["error"] == "Numpy is not available"
    assert failed["message"].startswith("A module that was compiled")
    assert child.numpy_facts(None, "unrelated output") == {"version": "2.0.0", "bridge": "not_run"}


def test_stderr_tee_passes_everything_on_and_keeps_the_start() -> None:
    real = io.StringIO()
    tee = child.StderrTee(real)
    tee.write("x" * 1500)
    tee.write("y" * 1500)
    tee.flush()  # forwarded to the real stream
    assert real.getvalue() == "x" * 1500 + "y" * 1500
    assert len(tee.text()) == child.NUMPY_MESSAGE_LIMIT and tee.text().startswith("x")
    assert sys.stderr is not tee


def test_facts_read_the_child_record() -> None:
    record = {
        "record": "torch",
        "installed": True,
        "version": "2.2.1",
        "numpy": {"version": "2.0.0", "bridge": "failed", "error": "Numpy is not available"},
    }
    facts = facts_from_outcome(ChildOutcome(records=(record,), returncode=0), smoke=False)
    assert (
        facts.numpy == NumpyFacts("2.0.0", BridgeStatus.FAILED, "Numpy is not available")
        and facts.numpy.major == 2
    )
    odd = facts_from_outcome(
        ChildOutcome(records=({**record, "numpy": {"bridge": "??"}},), returncode=0), smoke=False
    )
    assert odd.numpy == NumpyFacts() and odd.numpy.major is None
    assert (
        facts_from_outcome(
            ChildOutcome(records=({**record, "numpy": None},), returncode=0), smoke=False
        ).numpy
        is None
    )


# --- nightlies in ED202 ---------------------------------------------------------------------------


def nightly_torch(*companions: tuple[str, str], version: str = "2.6.0.dev20241112+cu124") -> TorchFacts:
    return TorchFacts(
        installed=True,
        version=version,
        dist_version=version,
        cuda="12.4",
        cuda_available=True,
        companions=tuple(Package(n, v) for n, v in companions),
    )


def test_night_is_read_from_dev_versions() -> None:
    assert nightly.night("2.6.0.dev20241112+cu124") == "2024-11-12"
    assert nightly.night("0.21.0.dev20241112") == "2024-11-12"
    assert (
        nightly.night("2.5.1+cu124") is None
        and nightly.night("garbage") is None
        and nightly.night(None) is None
    )


@pytest.mark.parametrize(
    ("companion", "words"),
    [
        (
            "0.21.0.dev20241111+cu124",
            "torchvision is the nightly of 2024-11-11, torch the nightly of 2024-11-12",
        ),
        ("0.20.1+cu124", "torchvision 0.20.1+cu124 is a release, torch the nightly of 2024-11-12"),
        ("0.21.0.dev20241112+cpu", "torchvision is the cpu build while torch is cu124"),
    ],
)
def test_nightly_mismatches(companion: str, words: str) -> None:
    finding = run(nightly_torch(("torchvision", companion)))["ED202"]
    assert words in finding.detail
    uninstall, install = finding.fixes[0].commands
    assert uninstall == "/env/bin/python -m pip uninstall -y torch torchvision"
    assert (
        install
        == "/env/bin/python -m pip install --pre torch torchvision --index-url https://download.pytorch.org/whl/nightly/cu124"
    )


def test_a_matching_nightly_set_is_quiet_and_a_nightly_companion_beside_a_release_is_not() -> None:
    same = nightly_torch(
        ("torchvision", "0.21.0.dev20241112+cu124"), ("torchaudio", "2.5.0.dev20241112+cu124")
    )
    assert "ED202" not in run(same)
    release = nightly_torch(("torchaudio", "2.5.0.dev20241112+cu124"), version="2.5.1+cu124")
    finding = run(release)["ED202"]
    assert "torchaudio is the nightly of 2024-11-12, torch the release 2.5.1+cu124" in finding.detail
    assert "nightly/cu124" in finding.fixes[0].commands[1]
