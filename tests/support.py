"""Small builders for tests: a probe context over a FakeHost, child outcomes from records."""

from __future__ import annotations

from typing import Any

from envdoctor.host.base import ChildOutcome
from envdoctor.host.fake import FakeHost
from envdoctor.model.findings import Interpreter
from envdoctor.probes.base import CheckOptions, ProbeContext
from envdoctor.target import PythonInfo, Target

PYTHON = PythonInfo("/home/user/.venv/bin/python", "3.11.9", "CPython", 64, "/home/user/.venv", True, False)


def context(host: FakeHost, **options: Any) -> ProbeContext:
    target = Target(Interpreter("/home/user/.venv/bin/python", "given with --python"), PYTHON)
    return ProbeContext(host=host, target=target, options=CheckOptions(**options))


def records(*rows: dict[str, Any], returncode: int = 0) -> ChildOutcome:
    return ChildOutcome(records=tuple(rows), returncode=returncode)
