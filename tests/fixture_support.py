"""Shared by the fixture tests and tests/regen_golden.py: fixtures -> reports -> golden text."""

from __future__ import annotations

import io
import json
from pathlib import Path

from envdoctor.engine import judge
from envdoctor.model import Report
from envdoctor.render.console import make_console, render_console
from envdoctor.render.json_report import report_to_data
from envdoctor.settings import Settings, resolve
from envdoctor.snapshot import load

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
GOLDEN = ROOT / "tests" / "golden"

# Fixtures whose whole console report is kept as golden text (plain, no colour, fixed width).
CONSOLE_GOLDEN = (
    "linux-driver470-cu124-too-old",
    "win11-rtx4070-pypi-cpu-torch",
    "linux-a100-healthy",
    "linux-rtx5090-cu124-no-sm120",
    "linux-vgpu-a800-smoke-hang",
    "win11-torch291-vc-redist-1436-winerror-1114",  # one root cause, its consequences folded under it
)

# Fixtures whose `envdoctor report` Markdown (the bug report) is kept as golden text.
BUG_REPORT_GOLDEN = ("linux-torch221-numpy2-array-api-not-found",)


def fixture_names() -> list[str]:
    return sorted(p.stem for p in FIXTURES.glob("*.json"))


def fixture_settings(name: str) -> Settings:
    """A fixture's project config, fixtures/NAME.envdoctor.toml, as `check --config` reads it."""
    config = FIXTURES / f"{name}.envdoctor.toml"
    if not config.exists():
        return Settings()
    return resolve({}, cwd=str(FIXTURES), config=str(config))


def fixture_check_args(name: str) -> list[str]:
    """`check` options that diagnose fixture `name` as fixture_report does: --from, and --config."""
    config = FIXTURES / f"{name}.envdoctor.toml"
    return ["--from", str(FIXTURES / f"{name}.json"), *(["--config", str(config)] if config.exists() else [])]


def fixture_report(name: str) -> Report:
    snap = load(str(FIXTURES / f"{name}.json"))
    return judge(
        snap.platform, snap.interpreter, snap.probes, fixture_settings(name), source=f"fixtures/{name}.json"
    )


def findings_summary(report: Report) -> list[str]:
    """ "ED101 error" per finding, in report order: what the golden findings files hold."""
    return [f"{f.code} {f.severity.value}" for f in report.findings]


def stable_json(report: Report) -> str:
    return json.dumps(report_to_data(report), indent=2, sort_keys=True) + "\n"


def console_text(report: Report, verbose: bool = False) -> str:
    buffer = io.StringIO()
    render_console(report, make_console(buffer, width=100, no_color=True, plain=True), verbose)
    return buffer.getvalue()


def golden_files(name: str) -> dict[Path, str]:
    """Every golden file for fixture `name` and the text it must hold."""
    report = fixture_report(name)
    files = {
        GOLDEN / f"{name}.findings.json": json.dumps(findings_summary(report), indent=1) + "\n",
        GOLDEN / f"{name}.report.json": stable_json(report),
    }
    if name in CONSOLE_GOLDEN:
        files[GOLDEN / f"{name}.console.txt"] = console_text(report)
    if name in BUG_REPORT_GOLDEN:
        from envdoctor.bug_report import render_report

        snap = load(str(FIXTURES / f"{name}.json"))
        files[GOLDEN / f"{name}.bugreport.md"] = render_report(snap, "markdown", {}, f"fixtures/{name}.json")
    return files
