"""The exceptions of envdoctor's Python API; importable without loading anything else."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from envdoctor.model.findings import Finding, Report


class EnvironmentNotReady(RuntimeError):
    """envdoctor.require() found problems: `findings` are the ones that failed, `report` is everything."""

    def __init__(self, message: str, report: Report, findings: tuple[Finding, ...]) -> None:
        super().__init__(message)
        self.report = report
        self.findings = findings
