"""The one table of report formats: check's --format choices, lazy loading, and each entry's wiring."""

from __future__ import annotations

import json
import subprocess
import sys

from envdoctor.cli.options import ReportFormat
from envdoctor.render.github import render_github
from envdoctor.render.json_report import render_json
from envdoctor.render.junit import render_junit
from envdoctor.render.markdown import render_markdown
from envdoctor.render.registry import RENDERERS, render
from tests.fixture_support import console_text, fixture_report

REPORT = "linux-driver470-cu124-too-old"


def test_check_offers_exactly_the_formats_of_the_table() -> None:
    assert [f.value for f in ReportFormat] == list(RENDERERS)


def test_each_format_renders_with_its_own_renderer() -> None:
    report = fixture_report(REPORT)
    assert render(report, "json") == render_json(report)
    assert render(report, "markdown", verbose=True) == render_markdown(report, verbose=True)
    assert render(report, "markdown") == render_markdown(report)
    assert render(report, "github") == render_github(report)
    assert render(report, "junit") == render_junit(report)
    console = render(report, "console")
    assert "\x1b[" not in console
    # The same report as the console golden, whatever the width: compare the words.
    assert console.split() == console_text(report).split()
    assert json.loads(render(report, "json"))["findings"]


def test_renderers_load_on_first_use_and_warm_loads_each_one() -> None:
    """In a fresh interpreter: nothing is loaded up front; warm(fmt) loads what render(fmt) uses."""
    script = (
        "import sys\n"
        "from envdoctor.render.registry import RENDERERS, warm\n"
        "loaded = [e.module for e in RENDERERS.values() if e.module in sys.modules]\n"
        "assert not loaded and 'rich' not in sys.modules, loaded\n"
        "for fmt, entry in RENDERERS.items():\n"
        "    warm(fmt)\n"
        "    assert entry.module in sys.modules, fmt\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "ok", result.stderr


def test_each_entry_names_the_module_its_function_renders_with() -> None:
    """`warm` must load what `render` will import: the module is named in the function's code."""
    for fmt, entry in RENDERERS.items():
        names = entry.render.__code__.co_names + entry.render.__code__.co_consts
        assert entry.module in {str(n) for n in names}, fmt
