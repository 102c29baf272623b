"""python_info.py, the first child every check runs: the interpreter's own architecture (Rosetta on
Apple Silicon shows there) and, on macOS, the version it is told, read without plistlib."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from envdoctor.child import python_info
from envdoctor.target import PythonInfo
from envdoctor.util.serde import from_data

PLIST = """<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0">
<dict>
	<key>ProductBuildVersion</key>
	<string>20G1427</string>
	<key>ProductName</key>
	<string>macOS</string>
	<key>ProductVersion</key>
	<string>{version}</string>
</dict>
</plist>
"""


def _answer() -> dict[str, object]:
    out = io.StringIO()
    with redirect_stdout(out):
        assert python_info.main() == 0
    record: dict[str, object] = json.loads(out.getvalue())
    return record


def test_the_record_says_the_interpreters_own_machine_and_no_mac_version_off_macos() -> None:
    import platform

    record = _answer()
    assert record["machine"] == platform.machine() and record["mac_version"] is None
    info = from_data(PythonInfo, {k: v for k, v in record.items() if k != "record"})
    assert info.machine == platform.machine()


@pytest.mark.parametrize(("version", "told"), [("15.1", "15.1"), ("10.16", "10.16"), ("<b>x</b>", None)])
def test_on_macos_the_version_told_comes_from_the_system_version_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, told: str | None
) -> None:
    plist = tmp_path / "SystemVersion.plist"
    plist.write_text(PLIST.format(version=version), encoding="utf-8")
    monkeypatch.setattr(python_info.sys, "platform", "darwin")
    monkeypatch.setattr(python_info, "SYSTEM_VERSION", str(plist))
    assert python_info.mac_version() == told


def test_an_unreadable_system_version_file_is_no_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(python_info.sys, "platform", "darwin")
    monkeypatch.setattr(python_info, "SYSTEM_VERSION", str(tmp_path / "missing.plist"))
    assert python_info.mac_version() is None


def test_an_older_snapshot_without_the_new_fields_still_loads() -> None:
    old = {
        "executable": "/v/bin/python",
        "version": "3.11.7",
        "implementation": "CPython",
        "bits": 64,
        "prefix": "/v",
        "is_venv": True,
        "is_conda": False,
    }
    info = from_data(PythonInfo, old)
    assert info.machine == "" and info.mac_version is None
