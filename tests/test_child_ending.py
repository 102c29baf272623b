"""One description of how a child ended, and the probes and rules that say it through it."""

from __future__ import annotations

import pytest

from envdoctor.host.base import ChildOutcome, CommandResult
from envdoctor.host.ending import ending_of_outcome, ending_of_result
from envdoctor.host.fake import FakeHost
from envdoctor.model.ending import EndingKind
from envdoctor.probes import nvml, windows
from envdoctor.probes.torch_build import ChildEnd, facts_from_outcome
from envdoctor.probes.torch_smoke import StepStatus, smoke_from_records
from envdoctor.target import TargetError, read_python_info
from tests.support import context


@pytest.mark.parametrize(
    ("outcome", "kind", "words"),
    [
        (
            ChildOutcome((), None, start_error="not found"),
            EndingKind.NOT_STARTED,
            "could not start: not found",
        ),
        (ChildOutcome((), None, timed_out=True), EndingKind.TIMEOUT, "hung during import"),
        (ChildOutcome((), None, signal=11), EndingKind.SIGNAL, "crashed during import (signal 11)"),
        (ChildOutcome((), 3), EndingKind.EXITED, "exited during import with code 3"),
        (ChildOutcome((), 0), EndingKind.EXITED, "exited during import with code 0"),
    ],
)
def test_each_ending_has_one_phrase(outcome: ChildOutcome, kind: EndingKind, words: str) -> None:
    ending = ending_of_outcome(outcome)
    assert ending.kind is kind
    assert ending.describe("import") == words


def test_a_time_limit_is_said_when_known() -> None:
    ending = ending_of_outcome(ChildOutcome((), None, timed_out=True), limit=15.0)
    assert ending.describe() == "hung for 15 s"


def test_a_command_killed_by_a_signal_is_a_crash() -> None:
    # POSIX subprocess reports a signal as a negative exit code.
    ending = ending_of_result(CommandResult(-11, stderr="boom\n"))
    assert (ending.kind, ending.signal, ending.describe()) == (EndingKind.SIGNAL, 11, "crashed (signal 11)")
    said = ending_of_result(CommandResult(1, stdout="nvcc fatal : bad option\n"))
    assert said.describe() == "exited with code 1" and said.last_output() == "nvcc fatal : bad option"


def test_last_output_keeps_the_last_lines_cut_to_width() -> None:
    ending = ending_of_outcome(ChildOutcome((), 1, stderr_tail="a\nb\n" + "c" * 50 + "\n"))
    assert ending.last_output() == "c" * 50
    assert ending.last_output(2, width=5) == "b | ccccc"
    assert ending_of_outcome(ChildOutcome((), 1)).last_output() == ""


def test_the_torch_probe_and_its_rule_say_the_same_words() -> None:
    end = ChildEnd(exit_signal=11, last_stage="import", stderr_tail="Segmentation fault")
    assert end.ending.describe(end.last_stage) == "crashed during import (signal 11)"
    facts = facts_from_outcome(
        ChildOutcome(
            ({"record": "stage", "stage": "import"},), None, signal=11, stderr_tail="Segmentation fault"
        )
    )
    assert facts.crash == end


def test_the_nvml_probe_says_how_its_child_ended() -> None:
    dead = ChildOutcome((), 2, stderr_tail="Traceback (most recent call last):\nImportError: libnvidia-ml\n")
    no_pci = {"/sys/bus/pci/devices"}
    facts = nvml.collect(
        context(FakeHost(children={"nvml_probe.py": dead}, absent=no_pci, programs={"nvidia-smi": None}))
    )
    assert facts.status is nvml.NvmlStatus.FAILED
    assert facts.error == "the NVML query exited with code 2: ImportError: libnvidia-ml"
    hanging = ChildOutcome((), None, timed_out=True)
    hung = nvml.collect(
        context(FakeHost(children={"nvml_probe.py": hanging}, absent=no_pci, programs={"nvidia-smi": None}))
    )
    assert hung.error == "the NVML query hung for 10 s"  # half the probe's 20 s: nvidia-smi gets the rest


def test_the_dll_check_says_how_its_child_ended() -> None:
    load, _ = windows._dll_load(ChildOutcome(({"record": "stage", "dll": "c10.dll"},), None, signal=11))
    assert load.status is windows.DllStatus.CRASHED and load.last_dll == "c10.dll"
    assert load.error == "the DLL check crashed (signal 11)"
    hung, _ = windows._dll_load(ChildOutcome((), None, timed_out=True))
    assert hung.status is windows.DllStatus.TIMEOUT and hung.error == "the DLL check hung for 30 s"
    absent, _ = windows._dll_load(ChildOutcome((), None, start_error="not found"))
    assert (
        absent.status is windows.DllStatus.NOT_RUN
        and absent.error == "the DLL check could not start: not found"
    )


def test_a_smoke_step_cut_short_by_a_crash_names_the_ending() -> None:
    records = (
        {"record": "smoke", "phase": "start"},
        {"record": "smoke_device", "phase": "start", "device": "cuda:0", "kind": "cuda"},
        {"record": "step_start", "device": "cuda:0", "step": "conv2d", "timeout": 20},
    )
    smoke = smoke_from_records(records, ChildOutcome(records, None, signal=11, stderr_tail="Fatal\n"))
    assert smoke is not None and smoke.stopped is StepStatus.CRASHED
    (step,) = smoke.devices[0].steps
    assert step.status is StepStatus.CRASHED
    assert (
        step.error is not None
        and step.error.message == "the process crashed (signal 11) during this step: Fatal"
    )


def test_an_interpreter_that_ends_without_reporting_is_refused_with_its_ending() -> None:
    host = FakeHost(children={"python_info.py": ChildOutcome((), None, start_error="permission denied")})
    with pytest.raises(
        TargetError, match=r"not a runnable Python interpreter \(could not start: permission denied\)"
    ):
        read_python_info(host, "/opt/x/python")
