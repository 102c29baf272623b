"""`envdoctor report`: every probe's facts plus the findings, fit to paste into a public issue."""

from __future__ import annotations

import dataclasses
import enum
import json
from pathlib import Path

import pytest

from envdoctor.snapshot import Snapshot, dumps, load
from envdoctor.util.redact import redact, redact_private, redact_private_text
from envdoctor.util.serde import to_data
from tests.cli_support import run_cli
from tests.fixture_support import FIXTURES

UUID = "GPU-1b965d81-1d0f-6501-027c-1ecc1437f5ea"


def personal_snapshot(tmp_path: Path) -> Path:
    """The RTX 4090 fixture as user alice would record it, with a GPU UUID and an index password."""
    snap = load(str(FIXTURES / "linux-rtx4090-driver535-cu121-healthy.json"))

    def personal(value: object) -> object:
        if isinstance(value, str) and not isinstance(value, enum.Enum):
            return value.replace("/home/user/", "/home/alice/")
        if dataclasses.is_dataclass(value):
            return type(value)(
                **{f.name: personal(getattr(value, f.name)) for f in dataclasses.fields(value)}
            )
        if isinstance(value, tuple):
            return tuple(personal(v) for v in value)
        return value

    snap = personal(snap)
    probes = []
    for result in snap.probes:
        if result.probe == "torch":
            facts = dataclasses.replace(
                result.facts,
                cuda_visible_devices=UUID,
                warnings=("pip index https://alice:hunter2@mirror.example.edu/simple unreachable",),
            )
            result = dataclasses.replace(result, facts=facts)
        probes.append(result)
    path = tmp_path / "recorded.json"
    path.write_text(dumps(dataclasses.replace(snap, probes=tuple(probes))), encoding="utf-8")
    return path


def test_report_markdown_has_facts_findings_and_nothing_personal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = personal_snapshot(tmp_path)
    result = run_cli(capsys, monkeypatch, "report", "--from", str(path))
    assert result.code == 0
    text = result.out
    for secret in ("alice", "hunter2", "1b965d81"):
        assert secret not in text
    assert "/home/<user>/project/.venv/bin/python" in text
    assert "cuda_visible_devices: GPU-<uuid>" in text
    assert "https://****@mirror.example.edu/simple" in text
    # every probe, with its facts as key: value lines
    for section in (
        "== System (system: ok",
        "== Python environment (python: ok",
        "== NVIDIA driver (nvml: ok",
    ):
        assert section in text
    assert "gpus[0].name: NVIDIA GeForce RTX 4090" in text
    assert "gpus[0].capability: 8, 9" in text
    assert "arch_list: sm_50, sm_60, sm_70, sm_75, sm_80, sm_86, sm_90" in text
    assert text.startswith("<!-- envdoctor report")
    assert "## envdoctor report: no problems found, exit 0" in text


def test_report_lists_findings_like_check(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fixture = str(FIXTURES / "linux-driver470-cu124-too-old.json")
    result = run_cli(capsys, monkeypatch, "report", "--from", fixture)
    assert result.code == 0  # a report is not a check: it succeeds when it was written
    assert "#### ❌ ED101 `driver-too-old-for-torch-cuda` (error)" in result.out
    assert "sudo ubuntu-drivers install" in result.out
    assert "Evidence: " in result.out


def test_report_json_is_a_masked_snapshot_that_check_can_read(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = personal_snapshot(tmp_path)
    result = run_cli(capsys, monkeypatch, "report", "--from", str(path), "--format", "json")
    assert result.code == 0
    assert "alice" not in result.out and "1b965d81" not in result.out and "hunter2" not in result.out
    data = json.loads(result.out)
    assert data["schema"] == "envdoctor.snapshot/1"
    shared = tmp_path / "shared.json"
    shared.write_text(result.out, encoding="utf-8")
    again = run_cli(capsys, monkeypatch, "check", "--from", str(shared), "--format", "json")
    assert again.code == 0
    assert json.loads(again.out)["interpreter"]["path"] == "/home/<user>/project/.venv/bin/python"


def test_default_masking_is_unchanged(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """check keeps user names and UUIDs (the reader is the user); only credentials are masked."""
    path = personal_snapshot(tmp_path)
    result = run_cli(capsys, monkeypatch, "check", "--from", str(path), "--format", "json", "-v")
    assert "/home/alice/project" in result.out
    assert UUID in result.out
    assert "hunter2" not in result.out


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("/home/alice/x", "/home/<user>/x"),
        ("/Users/bob/Library", "/Users/<user>/Library"),
        ("/Users/Shared/data", "/Users/Shared/data"),
        (r"C:\Users\Ada Lovelace\venv\Scripts\python.exe", r"C:\Users\<user>\venv\Scripts\python.exe"),
        (r"C:\Users\Public\x", r"C:\Users\Public\x"),
        ("/mnt/c/Users/eve/x", "/mnt/c/Users/<user>/x"),
        ("nvidia-smi -L: GPU 0: A100 (UUID: GPU-5f9e1c2a-0000-1111-2222-333344445555)", "(UUID: GPU-<uuid>)"),
        ("MIG-5f9e1c2a-0000-1111-2222-333344445555", "GPU-<uuid>"),
        ("https://u:p@host/simple", "https://****@host/simple"),
        ("https://tok@host/simple", "https://****@host/simple"),
        ("site-packages/torch/lib", "site-packages/torch/lib"),
    ],
)
def test_private_masking(text: str, masked: str) -> None:
    assert masked in redact_private_text(text)


def test_homes_outside_home_are_masked_by_whole_segment() -> None:
    text = "/data/carol/env and /data/carolyn/env"
    assert redact_private_text(text, homes=("/data/carol/",)) == "/data/<user>/env and /data/carolyn/env"


def test_redact_private_walks_dataclasses_and_keeps_default_redact_as_it_was() -> None:
    snap = load(str(FIXTURES / "linux-rtx4090-driver535-cu121-healthy.json"))
    assert to_data(redact(snap)) == to_data(snap)  # nothing secret in it: unchanged
    private = redact_private(snap)
    assert isinstance(private, Snapshot)
    assert private.interpreter.path == "/home/<user>/project/.venv/bin/python"
