"""FakeHost is strict: what a test did not script fails the test, by name, instead of passing as
"not found". A test that means "not there" says so."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from envdoctor.engine import run_probes
from envdoctor.host.base import CommandResult
from envdoctor.host.fake import CHILD_NOT_FOUND, NOT_FOUND, FakeHost, UnscriptedCall, take_unscripted
from envdoctor.model.findings import PlatformInfo, ProbeStatus
from envdoctor.probes import nvml
from tests.support import context

WINDOWS = PlatformInfo("Windows", "11", "10.0.22631", "AMD64")


@pytest.fixture
def expect_unscripted() -> Iterator[None]:
    """This test makes unscripted calls on purpose: they are taken so the suite's check passes it."""
    yield
    take_unscripted()


def test_an_unscripted_command_names_itself(expect_unscripted: None) -> None:
    host = FakeHost(commands={("nvcc", "--version"): CommandResult(0, "release 12.4")})
    assert host.run(["nvcc", "--version"], 5).stdout == "release 12.4"
    with pytest.raises(UnscriptedCall, match=r"unscripted run\(\['nvidia-smi', '-L'\]\)"):
        host.run(["nvidia-smi", "-L"], 5)
    assert host.calls == [("nvcc", "--version"), ("nvidia-smi", "-L")]
    assert take_unscripted() == [
        "FakeHost: unscripted run(['nvidia-smi', '-L']): script it, or say it is absent "
        "(see FakeHost's docstring)"
    ]


def test_absent_is_said_explicitly() -> None:
    host = FakeHost(
        commands={("nvidia-smi", "-L"): NOT_FOUND},
        children={"nvml_probe.py": CHILD_NOT_FOUND},
        programs={"nvcc": None},
        absent={"/etc/pip.conf"},
    )
    assert host.run(["nvidia-smi", "-L"], 5).start_error == "not found"
    assert host.python_json("/usr/bin/python3", "nvml_probe.py", (), 5).start_error == "not found"
    assert host.which("nvcc") is None
    with pytest.raises(FileNotFoundError):
        host.read_text("/etc/pip.conf")
    lenient = FakeHost(missing_ok=True)  # kept: this test is of missing_ok itself
    assert lenient.run(["anything"], 5) == NOT_FOUND and lenient.which("nvcc") is None
    assert lenient.python_json("/usr/bin/python3", "torch_probe.py", (), 5) == CHILD_NOT_FOUND
    with pytest.raises(FileNotFoundError):
        lenient.list_dir("/nowhere")


def test_unscripted_which_child_and_registry_free_reads(expect_unscripted: None) -> None:
    host = FakeHost()
    with pytest.raises(UnscriptedCall, match=r"which\('nvcc'\)"):
        host.which("nvcc")
    with pytest.raises(UnscriptedCall, match=r"child script 'torch_probe.py' in '/p/python'"):
        host.python_json("/p/python", "torch_probe.py", ("--no-smoke",), 5)
    assert len(take_unscripted()) == 2


def test_a_scripted_folder_lists_everything_in_it(expect_unscripted: None) -> None:
    host = FakeHost(files={"/etc/pip.conf": "[global]\n"}, dirs={"/etc": ("pip.conf",)})
    assert host.read_text("/etc/pip.conf") == "[global]\n"
    with pytest.raises(FileNotFoundError):
        host.read_text("/etc/xdg.conf")
    with pytest.raises(NotADirectoryError):
        host.list_dir("/etc/pip.conf")
    assert not host.exists("/opt/anything")  # existence is asked of the scripted tree alone
    with pytest.raises(UnscriptedCall, match=r"read_text\('/opt/cuda/version.json'\)"):
        host.read_text("/opt/cuda/version.json")
    with pytest.raises(UnscriptedCall, match=r"list_dir\('C:\\\\CUDA'\)"):
        FakeHost(platform_info=WINDOWS).list_dir("C:\\CUDA")
    assert len(take_unscripted()) == 2


def test_a_probe_that_swallows_the_error_still_fails_the_test(expect_unscripted: None) -> None:
    """The engine turns a probe's exception into a failed probe; the call is still on record."""
    host = FakeHost(absent={nvml.PCI_DEVICES})  # the NVML child is not scripted
    (result,) = run_probes(context(host), (nvml.PROBE,))
    assert result.status is ProbeStatus.FAILED and "UnscriptedCall" in (result.error or "")
    assert take_unscripted() == [
        "FakeHost: unscripted child script 'nvml_probe.py' in '/usr/bin/python3': script it, or say it "
        "is absent (see FakeHost's docstring)"
    ]
