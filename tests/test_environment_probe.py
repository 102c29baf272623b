"""The environment probe and the bug report it feeds: the variables that steer CUDA and torch (read
on every check), and, for `envdoctor report` and `snapshot` only, the distribution, C library,
compilers and packages torch's collect_env prints, without stray None."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.engine import area_verdicts, selected_probes
from envdoctor.host.base import CommandResult
from envdoctor.host.fake import CHILD_NOT_FOUND, FakeHost
from envdoctor.host.live import CHILD_DIR
from envdoctor.model.findings import ProbeResult, ProbeStatus
from envdoctor.probes import environment
from envdoctor.render.markdown import environment_rows, render_bug_report
from envdoctor.settings import Settings
from envdoctor.snapshot import load
from tests.cli_support import run_cli
from tests.fixture_support import FIXTURES, fixture_report
from tests.host_builder import LINUX
from tests.support import context, records

OS_RELEASE = (
    'NAME="Ubuntu"\nVERSION="22.04.4 LTS (Jammy Jellyfish)"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\n'
)
PACKAGES = {
    "record": "packages",
    "libc": "glibc 2.35",
    "packages": [
        {"name": "nvidia-cublas-cu12", "version": "12.4.5.8"},
        {"name": "torch", "version": "2.5.1"},
        {"name": "triton", "version": "3.1.0"},
    ],
}


# The compilers and build tools the environment probe looks for; a test scripts those it has.
NO_TOOLS = {"gcc": None, "clang": None, "cmake": None}


def ubuntu_host() -> FakeHost:
    host = FakeHost(platform_info=LINUX, programs=dict(NO_TOOLS), children={"packages.py": CHILD_NOT_FOUND})
    host.files["/etc/os-release"] = OS_RELEASE
    host.programs["gcc"] = "/usr/bin/gcc"
    host.commands[("/usr/bin/gcc", "--version")] = CommandResult(
        0, "gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0\n..."
    )
    host.programs["cmake"] = "/usr/bin/cmake"
    host.commands[("/usr/bin/cmake", "--version")] = CommandResult(None, timed_out=True)
    host.children["packages.py"] = records(PACKAGES)
    return host


def test_collects_what_collect_env_prints() -> None:
    facts = environment.collect(context(ubuntu_host(), details=True))
    assert facts.distribution == "Ubuntu 22.04.4 LTS" and facts.libc == "glibc 2.35"
    tools = {t.name: t for t in facts.tools}
    assert tools["gcc"].version == "gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0"
    assert tools["clang"] == environment.Tool("clang")  # not installed: no path, no version, no error
    assert tools["cmake"].version is None and tools["cmake"].error == "no answer within 5 s"
    assert facts.package("triton") == "3.1.0" and facts.package("numpy") is None
    assert (
        environment.describe(facts)
        == "Ubuntu 22.04.4 LTS; glibc 2.35; tools: gcc; 3 torch-related package(s)"
    )


def test_a_check_reads_the_steering_variables_and_nothing_else() -> None:
    host = ubuntu_host()
    host.environ.update(
        {
            "CUDA_VISIBLE_DEVICES": "",
            "CUDA_LAUNCH_BLOCKING": "1",
            "AWS_SECRET_ACCESS_KEY": "do-not-read",
            "HOME": "/home/u",
        }
    )
    facts = environment.collect(context(host))
    assert host.calls == []  # no program and no child: the variables cost a check nothing
    assert facts.variables_read and facts.distribution is None and facts.packages == ()
    assert [(v.name, v.value) for v in facts.variables] == [
        ("CUDA_VISIBLE_DEVICES", ""),
        ("CUDA_LAUNCH_BLOCKING", "1"),
    ]
    assert facts.variable("CUDA_VISIBLE_DEVICES") == "" and facts.variable("OMP_NUM_THREADS") is None
    assert environment.describe(facts) == "CUDA_VISIBLE_DEVICES='', CUDA_LAUNCH_BLOCKING=1"
    assert environment.describe(environment.EnvironmentFacts(variables_read=True)) == (
        "no variable that steers CUDA or torch is set"
    )
    assert environment.PROBE in selected_probes(Settings())  # a check runs it, and shows its area line
    shown = area_verdicts((ProbeResult("environment", ProbeStatus.OK, 0.1, facts),), ())
    assert [a.title for a in shown] == ["Environment"]


def test_the_steering_variables_hold_no_secret_names() -> None:
    from envdoctor.util.redact import is_secret_name

    assert not [name for name in environment.STEERING_VARIABLES if is_secret_name(name)]


def test_broken_answers_become_errors_not_tracebacks() -> None:
    host = FakeHost(platform_info=LINUX, programs=dict(NO_TOOLS), children={"packages.py": CHILD_NOT_FOUND})
    host.unreadable.add("/etc/os-release")
    facts = environment.collect(context(host, details=True))
    assert facts.distribution is None and facts.packages == () and len(facts.errors) == 2
    assert environment.os_release_name("NAME=Debian\nVERSION=12\n") == "Debian 12"
    assert environment.os_release_name("# nothing\n") is None


@pytest.mark.slow
def test_the_real_package_child_answers_here() -> None:
    out = subprocess.run(
        [sys.executable, str(Path(CHILD_DIR) / "packages.py")], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0
    assert '"record": "packages"' in out.stdout and '"name": "torch"' in out.stdout


def test_the_bug_report_shows_an_environment_table_and_folds_the_facts() -> None:
    snap = load(str(FIXTURES / "linux-rtx4090-driver535-cu121-healthy.json"))
    facts = environment.collect(context(ubuntu_host(), details=True))
    snap = dataclasses.replace(
        snap, probes=(*snap.probes, ProbeResult("environment", ProbeStatus.OK, 0.2, facts))
    )
    report = fixture_report("linux-rtx4090-driver535-cu121-healthy")
    text = render_bug_report(dataclasses.replace(report, probes=snap.probes))
    assert "| OS | Ubuntu 22.04.4 LTS (Linux 6.8.0-45-generic x86_64) |" in text
    assert "| C library | glibc 2.35 |" in text
    assert "| gcc | gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0 |" in text
    assert "| Packages | nvidia-cublas-cu12==12.4.5.8, torch==2.5.1, triton==3.1.0 |" in text
    assert "<details><summary>Every fact the probes recorded</summary>" in text and text.rstrip().endswith(
        "</details>"
    )
    assert ": None" not in text


def test_report_from_a_snapshot_without_it_still_has_the_table(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_cli(
        capsys,
        monkeypatch,
        "report",
        "--from",
        str(FIXTURES / "linux-torch221-numpy2-array-api-not-found.json"),
    )
    assert result.code == 0
    assert "| PyTorch | 2.2.1+cu121 (CUDA 12.1, cuDNN 8902) |" in result.out
    assert "| NumPy | 2.0.0 |" in result.out
    assert ": None" not in result.out and "| C library |" not in result.out  # not recorded: no row


def test_environment_rows_never_print_none() -> None:
    data = {
        "platform": {"system": "Linux", "release": "6.8", "machine": "x86_64", "version": "v"},
        "facts": {},
    }
    assert environment_rows(data) == [("OS", "Linux 6.8 x86_64")]
