"""The core probes against scripted hosts: what each turns the machine's answers into."""

from __future__ import annotations

import dataclasses

import pytest

from envdoctor.host.base import ChildOutcome, CommandResult
from envdoctor.host.fake import FakeHost
from envdoctor.model.findings import PlatformInfo
from envdoctor.probes import nvml, python_env, system, torch_build
from envdoctor.probes.base import NotApplicable
from tests.support import context, records

WINDOWS = PlatformInfo("Windows", "11", "10.0.22631", "AMD64")
MAC = PlatformInfo("Darwin", "24.1.0", "Darwin Kernel", "arm64")


def test_system_detects_wsl_and_container() -> None:
    host = FakeHost(
        files={
            "/proc/version": "Linux version 5.15.153.1-microsoft-standard-WSL2",
            "/proc/1/cgroup": "0::/kubepods/besteffort/pod1234",
        },
        absent={"/etc/os-release", "/usr/lib/os-release"},
    )
    facts = system.collect(context(host))
    assert facts.wsl and facts.container == "kubernetes"
    assert facts.os == "linux" and facts.cpu_count == 8 and facts.disk_free_bytes == 200 * 2**30
    assert "WSL" in system.describe(facts)


def test_system_without_psutil_answers_is_still_facts() -> None:
    host = FakeHost(
        mem=None,
        disk=None,
        cpus=None,
        absent={"/proc/version", "/proc/1/cgroup", "/etc/os-release", "/usr/lib/os-release"},
    )
    facts = system.collect(context(host))
    assert facts.memory_total_bytes is None and "? RAM" in system.describe(facts)


def test_python_reuses_what_validating_the_interpreter_learned() -> None:
    ctx = context(FakeHost())
    facts = python_env.collect(ctx)
    assert facts is ctx.target.info  # asked once, when the interpreter was validated
    assert python_env.describe(facts) == "CPython 3.11.9 (64-bit), venv"
    conda = dataclasses.replace(facts, is_venv=False, is_conda=True, free_threaded=True)
    assert python_env.describe(conda) == "CPython 3.11.9 (64-bit, free-threaded), conda env"


def _pci(host: FakeHost, address: str, vendor: str, device_class: str) -> None:
    host.files[f"{nvml.PCI_DEVICES}/{address}/vendor"] = vendor + "\n"
    host.files[f"{nvml.PCI_DEVICES}/{address}/class"] = device_class + "\n"


def test_nvml_ok_record() -> None:
    host = FakeHost(
        children={
            "nvml_probe.py": records(
                {
                    "record": "nvml",
                    "status": "ok",
                    "driver_version": "550.144.03",
                    "cuda_driver_version": 12040,
                    "gpus": [
                        {"index": 0, "name": "NVIDIA A10", "capability": [8, 6], "memory_total_bytes": 1}
                    ],
                    "errors": [],
                }
            )
        },
        absent={nvml.PCI_DEVICES},  # no sysfs (a container): NVML alone answers
    )
    facts = nvml.collect(context(host))
    assert facts.working and facts.driver_cuda == "12.4"
    assert facts.gpus[0].sm == "sm_86"
    assert "NVIDIA A10 (sm_86)" in nvml.describe(facts)


def test_nvml_no_driver_but_gpu_on_pci_bus() -> None:
    host = FakeHost(
        dirs={nvml.PCI_DEVICES: ("0000:00:02.0", "0000:01:00.0", "0000:01:00.1")},
        children={"nvml_probe.py": records({"record": "nvml", "status": "library_not_found", "error": "x"})},
    )
    _pci(host, "0000:00:02.0", "0x8086", "0x030000")  # Intel iGPU
    _pci(host, "0000:01:00.0", "0x10de", "0x030000")  # NVIDIA VGA
    _pci(host, "0000:01:00.1", "0x10de", "0x040300")  # NVIDIA HDMI audio: not a GPU
    facts = nvml.collect(context(host))
    assert facts.status == "library_not_found"
    assert facts.pci_nvidia_devices == ("0000:01:00.0",)
    assert "1 NVIDIA GPU(s) on the PCI bus" in nvml.describe(facts)


SMI_CSV = (
    "0, NVIDIA GeForce RTX 4090, 8.9, 24564, 560.35.03\n1, NVIDIA GeForce RTX 4090, 8.9, 24564, 560.35.03\n"
)
SMI_HEADER = "| NVIDIA-SMI 560.35.03   Driver Version: 560.35.03      CUDA Version: 12.6     |"


def test_nvidia_smi_fallback_when_pynvml_missing() -> None:
    smi = "/usr/bin/nvidia-smi"
    host = FakeHost(
        programs={"nvidia-smi": smi},
        children={
            "nvml_probe.py": records({"record": "nvml", "status": "pynvml_missing", "error": "No module"})
        },
        commands={
            (smi, f"--query-gpu={nvml._SMI_FIELDS}", "--format=csv,noheader,nounits"): CommandResult(
                0, SMI_CSV
            ),
            (smi,): CommandResult(0, SMI_HEADER),
        },
        absent={nvml.PCI_DEVICES},
    )
    facts = nvml.collect(context(host))
    assert facts.source == "nvidia-smi" and facts.working
    assert facts.driver_version == "560.35.03" and facts.cuda_driver_version == 12060
    assert [g.capability for g in facts.gpus] == [(8, 9), (8, 9)]


def test_nvidia_smi_reporting_mismatch() -> None:
    smi = "/usr/bin/nvidia-smi"
    host = FakeHost(
        programs={"nvidia-smi": smi},
        children={"nvml_probe.py": ChildOutcome(records=(), returncode=None, signal=11)},
        commands={
            (smi, f"--query-gpu={nvml._SMI_FIELDS}", "--format=csv,noheader,nounits"): CommandResult(
                9, "Failed to initialize NVML: Driver/library version mismatch\n"
            )
        },
        absent={nvml.PCI_DEVICES},
    )
    facts = nvml.collect(context(host))
    assert facts.status == "version_mismatch" and facts.source == "nvidia-smi"


def test_nvml_child_crash_without_smi_is_a_fact() -> None:
    host = FakeHost(
        children={"nvml_probe.py": ChildOutcome(records=(), returncode=None, signal=11)},
        programs={"nvidia-smi": None},
        absent={nvml.PCI_DEVICES},
    )
    facts = nvml.collect(context(host))
    assert facts.status == "failed" and "signal 11" in (facts.error or "")


def test_nvml_not_applicable_on_macos() -> None:
    with pytest.raises(NotApplicable):
        nvml.collect(context(FakeHost(platform_info=MAC)))


def test_windows_nvidia_smi_default_location() -> None:
    path = "C:\\Windows\\System32\\nvidia-smi.exe"
    host = FakeHost(
        platform_info=WINDOWS,
        files={path: ""},
        environ={"SystemRoot": "C:\\Windows"},
        programs={"nvidia-smi": None},  # not on PATH: found where the driver installs it
    )
    assert nvml._nvidia_smi(host) == path


def test_smi_parsers_ignore_noise() -> None:
    gpus, driver = nvml.parse_smi_csv("garbage\n0, Tesla K80, [N/A], 11441, 470.182.03\n")
    assert (
        driver == "470.182.03" and gpus[0].capability is None and gpus[0].memory_total_bytes == 11441 * 2**20
    )
    assert nvml.parse_smi_cuda_version("no header") is None


def test_torch_outcome_full_record() -> None:
    outcome = records(
        {"record": "stage", "stage": "import"},
        {
            "record": "torch",
            "installed": True,
            "version": "2.5.1+cu124",
            "cuda": "12.4",
            "cudnn": 90100,
            "arch_list": ["sm_50", "sm_90"],
            "cuda_available": True,
            "device_count": 1,
            "devices": [{"index": 0, "name": "H100", "capability": [9, 0], "total_memory_bytes": 8}],
            "warnings": ["w1"],
            "companions": [{"name": "torchvision", "version": "0.20.1+cu124"}],
            "errors": [{"step": "mps", "error": {"type": "RuntimeError", "message": "m"}}],
        },
    )
    facts = torch_build.facts_from_outcome(outcome)
    assert facts.imported and facts.variant == "cu124" and facts.public_version == "2.5.1"
    assert facts.devices[0].capability == (9, 0) and facts.companion("torchvision") == "0.20.1+cu124"
    assert facts.errors[0].step == "mps"
    assert "CUDA 12.4" in torch_build.describe(facts)


def test_torch_variant_without_label_comes_from_torch_version() -> None:
    facts = torch_build.facts_from_outcome(
        records({"record": "torch", "installed": True, "version": "2.5.1", "cuda": "12.4"})
    )
    assert facts.local_label is None and facts.variant == "cu124"
    rocm = torch_build.facts_from_outcome(
        records({"record": "torch", "installed": True, "version": "2.5.1", "hip": "6.2.41133-dd7f95766"})
    )
    assert rocm.variant == "rocm6.2"


@pytest.mark.parametrize(
    ("outcome", "words"),
    [
        (ChildOutcome((), None, signal=11, stderr_tail="Segmentation fault"), "crashed (signal 11)"),
        (ChildOutcome(({"record": "stage", "stage": "import"},), None, timed_out=True), "hung during import"),
        (ChildOutcome((), 3), "exited with code 3"),
        (ChildOutcome((), None, start_error="not found"), "could not start: not found"),
    ],
)
def test_torch_child_endings_become_facts(outcome: ChildOutcome, words: str) -> None:
    facts = torch_build.facts_from_outcome(outcome)
    assert facts.crash is not None and not facts.imported
    assert words in torch_build.describe(facts)


def test_torch_probe_runs_the_target_interpreter_with_the_timeout() -> None:
    seen: list[float] = []

    def answer(interpreter: str, args: object, timeout: float) -> ChildOutcome:
        seen.append(timeout)
        return records({"record": "torch", "installed": False})

    host = FakeHost(children={"torch_probe.py": answer})
    facts = torch_build.collect(context(host, timeout=30))
    assert not facts.installed and seen == [28.0]
    assert host.calls[0][0] == "/home/user/.venv/bin/python"


def test_a_crash_in_a_deleted_working_directory_names_the_folder() -> None:
    """`import torch` fails in a deleted folder (host.cwd() is "." there); ED003 names that cause
    and says to cd elsewhere, instead of "reproduce by hand"."""
    from envdoctor.engine import evaluate
    from envdoctor.model.findings import Interpreter, ProbeResult, ProbeStatus
    from envdoctor.rules.base import RuleContext
    from envdoctor.rules.torch import install

    died = ChildOutcome(records=({"record": "stage", "stage": "import"},), returncode=2)
    for cwd, gone in (("/home/user/project", False), (".", True)):
        host = FakeHost(children={"torch_probe.py": died}, working_dir=cwd)
        facts = torch_build.collect(context(host, timeout=30))
        assert facts.crash is not None and facts.crash.working_directory_gone is gone
        ctx = RuleContext.build(
            PlatformInfo("Linux", "6.1.0", "#1 SMP", "x86_64"),
            Interpreter("/home/user/.venv/bin/python", "test"),
            (ProbeResult("torch", ProbeStatus.OK, 0.0, facts),),
        )
        (found,) = [f for f in evaluate(ctx, (install.torch_check_crashed,))]
        assert ("the working directory no longer exists" in found.title) is gone
        if gone:
            assert found.fixes[0].commands[0] == "cd ~"
            assert "Reproduce" not in found.fixes[0].summary
        else:
            assert found.fixes[0].summary == "Reproduce by hand to see the full error"
