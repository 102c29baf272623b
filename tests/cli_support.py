"""Running the real command line in-process: argv in, (exit code, stdout, stderr) out."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import pytest

from envdoctor.cli import main


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def run_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str) -> Run:
    monkeypatch.setattr(sys, "argv", ["envdoctor", *argv])
    with pytest.raises(SystemExit) as caught:
        main()
    captured = capsys.readouterr()
    code = caught.value.code
    return Run(code if isinstance(code, int) else 0, captured.out, captured.err)
