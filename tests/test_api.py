"""envdoctor.require: the same check from a training script, raising a clear exception."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import pytest

import envdoctor
from envdoctor.api import check
from envdoctor.engine import registry_names
from envdoctor.host.base import ChildOutcome
from envdoctor.host.fake import FakeHost
from envdoctor.settings import from_keywords
from tests.real_torch import DEFAULT_ARGS, DEFAULT_RUN, RealTorchChild

PYTHON = "/home/user/project/.venv/bin/python"


def _child(record: Mapping[str, Any]) -> ChildOutcome:
    return ChildOutcome(records=(record,), returncode=0)


def gpu_host() -> FakeHost:
    """A Linux machine with two RTX 4090s and torch 2.5.1+cu124, answering as the child scripts do."""
    gpu = {"name": "NVIDIA GeForce RTX 4090", "capability": [8, 9]}
    return FakeHost(
        python=PYTHON,
        files={
            PYTHON: "",
            "/proc/version": "Linux version 6.1.0 (gcc 12.2.0) #1 SMP\n",
            "/proc/1/cgroup": "0::/init.scope\n",
        },
        dirs={
            "/usr/local": ("bin", "include", "lib", "share"),  # no CUDA toolkit there or on PATH
            "/home/user/project/.venv": ("bin", "include", "lib", "pyvenv.cfg"),  # a venv, not conda
        },
        programs={"nvcc": None},
        # Left out of this machine: the PCI bus (NVML answers) and pip in the venv.
        absent={"/sys/bus/pci/devices", "/home/user/project/.venv/lib/python3.11/site-packages"},
        children={
            "python_info.py": _child(
                {
                    "record": "python",
                    "executable": PYTHON,
                    "version": "3.11.9",
                    "implementation": "CPython",
                    "bits": 64,
                    "prefix": "/home/user/project/.venv",
                    "is_venv": True,
                    "is_conda": False,
                }
            ),
            "nvml_probe.py": _child(
                {
                    "record": "nvml",
                    "status": "ok",
                    "driver_version": "550.54.14",
                    "cuda_driver_version": 12040,
                    "gpus": [{"index": i, **gpu, "memory_total_bytes": 25757220864} for i in range(2)],
                }
            ),
            "torch_probe.py": _child(
                {
                    "record": "torch",
                    "installed": True,
                    "dist_version": "2.5.1+cu124",
                    "version": "2.5.1+cu124",
                    "cuda": "12.4",
                    "cuda_available": True,
                    "device_count": 2,
                    "devices": [{"index": i, **gpu, "total_memory_bytes": 25757220864} for i in range(2)],
                    "companions": [{"name": "torchvision", "version": "0.20.1+cu124"}],
                }
            ),
        },
    )


def test_importing_envdoctor_loads_nothing_heavy() -> None:
    code = (
        "import sys, envdoctor\n"
        "heavy = ('typer', 'rich', 'packaging', 'torch', 'pynvml', 'psutil', 'envdoctor.engine')\n"
        "print([m for m in sys.modules if m.split('.')[0] in heavy or m in heavy])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_met_expectations_return_the_report() -> None:
    host = gpu_host()
    settings = from_keywords(
        {"gpu": True, "min_gpus": 2, "cuda": ">=12.1", "capability": ">=8.0", "min_gpu_memory": "24GiB"},
        registry_names(),
    )
    report = check(settings, host=host)
    assert report.exit_code == 0
    assert report.interpreter.reason == "the interpreter running this program"
    assert not [f for f in report.findings if f.code.startswith("ED7")]
    assert report.areas[-1].verdict.startswith("all 5 met")


def test_unmet_expectations_raise_with_each_problem_and_its_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    host = gpu_host()
    with pytest.raises(envdoctor.EnvironmentNotReady) as caught:
        envdoctor.api.require(host=host, min_gpus=4, torch=">=2.6")
    error = caught.value
    assert isinstance(error, RuntimeError)
    assert [f.code for f in error.findings] == ["ED702", "ED704"]
    message = str(error)
    assert message.startswith("this environment is not ready (2 problems;")
    assert "ED702 expectation min-gpus = 4 not met: torch sees 2 GPU(s)" in message
    assert "ED704 expectation require-torch = >=2.6 not met: torch 2.5.1+cu124 is installed" in message
    assert "$ srun --gres=gpu:4 envdoctor check --min-gpus 4" in message
    assert f"$ {PYTHON} -m pip install torch==" in message
    assert error.report.exit_code == 1


def test_strict_makes_warnings_fail() -> None:
    # driver 550.54.14 runs CUDA 12.6 only through minor-version compatibility (ED102, a warning)
    host = gpu_host()
    host.children["torch_probe.py"].records[0]["cuda"] = "12.6"  # type: ignore[union-attr,index]
    assert envdoctor.api.require(host=host).worst.value == "warning"
    with pytest.raises(envdoctor.EnvironmentNotReady) as caught:
        envdoctor.api.require(host=host, strict=True)
    assert [f.code for f in caught.value.findings] == ["ED102"]


def test_bad_values_raise_value_error_before_anything_runs() -> None:
    host = gpu_host()
    for keywords, says in (
        ({"cuda": "12.1"}, "envdoctor.require(cuda='12.1'): a bare version is not a specifier"),
        ({"min_gpu_memory": 24}, "envdoctor.require(min_gpu_memory=24): not a size with a unit"),
        ({"ignore": "ED9999"}, "envdoctor.require(ignore='ED9999'): ED9999 is not a rule"),
        ({"timeout": 0}, "envdoctor.require(timeout=0): expected seconds between 1 and 3600"),
    ):
        with pytest.raises(ValueError, match=r"^" + says.replace("(", r"\(").replace(")", r"\)")):
            envdoctor.api.require(host=host, **keywords)
    assert host.calls == []
    with pytest.raises(TypeError):
        envdoctor.require(gpus=2)  # type: ignore[call-arg]


def test_an_interpreter_that_does_not_run_is_a_value_error() -> None:
    host = FakeHost()
    with pytest.raises(ValueError, match=r"envdoctor.require\(python='/nope/python'\): no such file"):
        envdoctor.api.require(host=host, python="/nope/python")


@pytest.mark.early(DEFAULT_RUN)
def test_require_on_this_machine(shared_torch_child: RealTorchChild) -> None:
    """The real thing, in this interpreter (CPU torch, no NVIDIA GPU): passes plainly, fails for a GPU."""
    report = envdoctor.require(cuda=None)
    assert report.exit_code == 0
    with pytest.raises(envdoctor.EnvironmentNotReady) as caught:
        envdoctor.require(gpu=True)
    assert [f.code for f in caught.value.findings] == ["ED701"]
    assert "ED701 expectation require-gpu not met" in str(caught.value)
    assert shared_torch_child.asked == [DEFAULT_ARGS, DEFAULT_ARGS]  # the live torch child was asked
