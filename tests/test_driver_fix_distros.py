"""The driver fix follows the distribution the system probe read from os-release (issue 13 item 24):
`sudo ubuntu-drivers install` only where it exists, NVIDIA's instructions where nothing is known."""

from __future__ import annotations

import dataclasses

import pytest

from envdoctor.engine import diagnose
from envdoctor.host.fake import FakeHost
from envdoctor.probes import system
from envdoctor.snapshot import load
from tests.fixture_support import FIXTURES
from tests.support import context

OS_RELEASE = {
    "ubuntu": 'NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="24.04"\n',
    "mint": 'NAME="Linux Mint"\nID=linuxmint\nID_LIKE="ubuntu debian"\nVERSION_ID="22"\n',
    "debian": 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n',
    "fedora": 'NAME="Fedora Linux"\nID=fedora\nVERSION_ID=41\n',
    "rocky": 'ID="rocky"\nID_LIKE="rhel centos fedora"\nVERSION_ID="9.4"\n',
    "arch": 'NAME="Arch Linux"\nID=arch\n',
    "manjaro": "ID=manjaro\nID_LIKE=arch\n",
    "suse": 'ID="opensuse-tumbleweed"\nID_LIKE="opensuse suse"\n',
    "sles": 'ID="sles"\nVERSION_ID="15.6"\n',
    "gentoo": "ID=gentoo\n",
    "none": "",
}
EXPECTED = {
    "ubuntu": "sudo ubuntu-drivers install",
    "mint": "sudo ubuntu-drivers install",
    "debian": "sudo apt install nvidia-driver firmware-misc-nonfree",
    "fedora": "sudo dnf install akmod-nvidia",
    "rocky": "sudo dnf install nvidia-open",
    "arch": "sudo pacman -S nvidia-open",
    "manjaro": "sudo pacman -S nvidia-open",
    "suse": "sudo zypper install-new-recommends --repo NVIDIA",
    "sles": "sudo zypper install-new-recommends --repo NVIDIA",
    "gentoo": None,
    "none": None,
}


# What the system probe reads beside os-release; none of it is there on these machines.
SYSTEM_FILES = ("/etc/os-release", "/usr/lib/os-release", "/proc/version", "/proc/1/cgroup")


def _driver_fix_commands(release: str) -> tuple[tuple[str, ...], str]:
    files = {"/etc/os-release": release} if release else {}
    host = FakeHost(files=files, absent=set(SYSTEM_FILES) - set(files))
    facts = system.collect(context(host))
    snap = load(str(FIXTURES / "linux-gpu-present-no-driver.json"))
    probes = tuple(dataclasses.replace(p, facts=facts) if p.probe == "system" else p for p in snap.probes)
    findings = diagnose(snap.platform, snap.interpreter, probes).findings
    fixes = [f for finding in findings for f in finding.fixes if "NVIDIA driver" in f.summary]
    assert fixes, [f.code for f in findings]
    return fixes[0].commands, fixes[0].link or ""


@pytest.mark.parametrize("name", sorted(OS_RELEASE))
def test_the_driver_fix_is_the_distributions_own(name: str) -> None:
    commands, link = _driver_fix_commands(OS_RELEASE[name])
    expected = EXPECTED[name]
    if expected is None:
        assert not any("ubuntu-drivers" in c or "apt" in c for c in commands)
        assert link.startswith("https://docs.nvidia.com/")
    else:
        assert expected in commands and commands[-1] == "sudo reboot"
    if name != "ubuntu" and name != "mint":
        assert "sudo ubuntu-drivers install" not in commands


def test_os_release_parsing_takes_quotes_and_skips_junk() -> None:
    fields = system.os_release("ID=\"rocky\"\n# comment\nnot a line\nID_LIKE='rhel fedora'\nX\n=y\n")
    assert fields == {"ID": "rocky", "ID_LIKE": "rhel fedora"}


def test_usr_lib_os_release_is_the_fallback() -> None:
    host = FakeHost(
        files={"/usr/lib/os-release": "ID=fedora\n"}, absent=set(SYSTEM_FILES) - {"/usr/lib/os-release"}
    )
    assert system.collect(context(host)).distro == "fedora"
