"""Every command that can touch the network takes --offline (issue 10): check and install already
did; snapshot, report and fix pass it on to the probes, so the sources probe asks no index."""

from __future__ import annotations

from typing import Any

import pytest

from envdoctor.cli import shared as cli_module
from tests.cli_support import run_cli

STOP = "envdoctor-test: probes not run"


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """What `offline` each command hands the probes; the run stops there (exit 2, one line)."""
    seen: list[bool] = []

    def record(*args: Any, **kwargs: Any) -> Any:
        seen.append(bool(kwargs.get("offline")))
        cli_module.fail(STOP)

    monkeypatch.setattr(cli_module, "live_report_inputs", record)
    monkeypatch.delenv("ENVDOCTOR_OFFLINE", raising=False)
    return seen


@pytest.mark.parametrize(
    "argv",
    [("check",), ("snapshot",), ("report",), ("fix", "--yes")],
    ids=["check", "snapshot", "report", "fix"],
)
def test_offline_reaches_the_probes(
    argv: tuple[str, ...],
    asked: list[bool],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    online = run_cli(capsys, monkeypatch, *argv)
    offline = run_cli(capsys, monkeypatch, *argv, "--offline")
    assert (online.code, offline.code) == (2, 2)
    assert STOP in offline.err and "No such option" not in offline.err
    assert asked == [False, True]


@pytest.mark.parametrize("command", ["check", "snapshot", "report", "fix", "install"])
def test_help_lists_offline(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = run_cli(capsys, monkeypatch, command, "--help")
    assert shown.code == 0 and "--offline" in shown.out
