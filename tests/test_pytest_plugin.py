"""The pytest plugin (issue 21): off unless asked; --envdoctor's header and JSON beside the JUnit
file; markers that skip with envdoctor's own reason; --envdoctor-strict failing a session whose
expectations are not met. A scratch project runs under a real pytest process, as a user's would
(the plugin comes through its pytest11 entry point, as an installed envdoctor gives it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

import pytest

from envdoctor.integrations.pytest_plugin import header_line, skip_reason
from tests.fixture_support import fixture_report

pytestmark = pytest.mark.slow

HAVE_TORCH = find_spec("torch") is not None

SCRATCH_TESTS = """
import pytest

@pytest.mark.requires_cuda
def test_needs_cuda():
    pass

@pytest.mark.requires_torch(">=2.0")
def test_needs_torch_2():
    pass

@pytest.mark.requires_torch("<1.0")
def test_needs_old_torch():
    pass

def test_plain():
    pass
"""


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.pop("ENVDOCTOR_TEST_EARLY_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-rs", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip


def _entry_point_installed() -> bool:
    return any(
        ep.value == "envdoctor.integrations.pytest_plugin" for ep in metadata.entry_points(group="pytest11")
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    if not _entry_point_installed():
        pytest.skip("envdoctor's pytest11 entry point is not installed (reinstall: pip install -e .)")
    (tmp_path / "test_scratch.py").write_text(SCRATCH_TESTS, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return tmp_path


@pytest.mark.skipif(not HAVE_TORCH, reason="the scratch project examines this interpreter's torch")
def test_markers_skip_with_envdoctors_reason_and_the_report_lands_beside_junit(project: Path) -> None:
    done = _pytest(project, "--envdoctor", "--junitxml=out.xml")
    assert done.returncode == 0, done.stdout + done.stderr
    # This machine: CPU torch 2.13.0.
    assert "envdoctor: torch 2.13.0" in done.stdout and "CPU only" in done.stdout
    assert "SKIPPED" in done.stdout and "envdoctor: torch 2.13.0+cpu is a CPU-only build" in done.stdout
    assert "envdoctor: torch 2.13.0+cpu is not <1.0" in done.stdout
    assert "2 passed, 2 skipped" in done.stdout, done.stdout
    report = json.loads((project / "out.envdoctor.json").read_text(encoding="utf-8"))
    assert report["schema"] == "envdoctor.report/1"


def test_the_plugin_is_off_unless_asked(project: Path) -> None:
    (project / "test_scratch.py").write_text("def test_plain():\n    pass\n", encoding="utf-8")
    done = _pytest(project, "--junitxml=out.xml")
    assert done.returncode == 0 and "envdoctor:" not in done.stdout, done.stdout
    assert not (project / "out.envdoctor.json").exists()


@pytest.mark.skipif(not HAVE_TORCH, reason="the scratch project examines this interpreter's torch")
def test_strict_fails_a_session_whose_expectations_are_not_met(project: Path) -> None:
    (project / "envdoctor.toml").write_text("require-gpu = true\n", encoding="utf-8")
    done = _pytest(project, "--envdoctor-strict")
    assert done.returncode == 1, done.stdout + done.stderr
    said = done.stdout + done.stderr
    assert "envdoctor --envdoctor-strict: this environment is not ready" in said
    assert "ED701" in said and "fix:" in said


def test_reasons_come_from_the_facts_of_recorded_machines() -> None:
    old_driver = fixture_report("linux-driver470-cu124-too-old")
    reason = skip_reason(old_driver, "requires_cuda", (), {})
    assert reason is not None and "cannot use a GPU here" in reason and "ED101" in reason
    healthy = fixture_report("linux-a100-healthy")
    assert skip_reason(healthy, "requires_cuda", (), {}) is None
    assert skip_reason(healthy, "requires_gpu", (), {"min_memory_gib": 40, "min_capability": "8.0"}) is None
    too_small = skip_reason(healthy, "requires_gpu", (), {"min_memory_gib": 120})
    assert too_small is not None and "A100" in too_small
    assert skip_reason(healthy, "requires_torch", (">=2.6",), {}) == "torch 2.5.1+cu124 is not >=2.6"
    no_torch = fixture_report("linux-cpu-no-torch")
    assert "torch is not installed" in str(skip_reason(no_torch, "requires_torch", (">=2",), {}))
    assert "A100" in header_line(healthy) and "driver 550.54.15" in header_line(healthy)


def test_check_renders_in_a_notebook() -> None:
    from envdoctor.api import CheckResult

    result = CheckResult(fixture_report("linux-driver470-cu124-too-old"))
    markdown = result._repr_markdown_()
    html = result._repr_html_()
    assert "ED101" in markdown and markdown.startswith("## envdoctor")
    assert "<pre" in html and "ED101" in html and "color" in html
    assert "ED101" in str(result) and result.exit_code == 1 and not result.ok
