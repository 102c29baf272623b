"""The one table of report formats: each name, the module that renders it, and how it is called.

Renderers load on first use only (the console renderer pulls in rich); `warm` imports one ahead of
time, while the probes run, so that rendering costs nothing after they finish.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from envdoctor.util.records import record

if TYPE_CHECKING:
    from envdoctor.model.findings import Report


def _console(report: Report, verbose: bool) -> str:
    """The console report as text: no colour or other control codes (files, pipes, CI logs)."""
    import io

    from envdoctor.render.console import make_console, render_console

    buffer = io.StringIO()
    render_console(report, make_console(buffer, no_color=True, plain=True), verbose)
    return buffer.getvalue()


def _json(report: Report, verbose: bool) -> str:
    from envdoctor.render.json_report import render_json

    return render_json(report)


def _markdown(report: Report, verbose: bool) -> str:
    from envdoctor.render.markdown import render_markdown

    return render_markdown(report, verbose)


def _github(report: Report, verbose: bool) -> str:
    from envdoctor.render.github import render_github

    return render_github(report)


def _junit(report: Report, verbose: bool) -> str:
    from envdoctor.render.junit import render_junit

    return render_junit(report)


@record
class Renderer:
    module: str  # the module `render` imports: what `warm` loads ahead of time
    render: Callable[[Report, bool], str]  # (report, verbose) -> text


RENDERERS: dict[str, Renderer] = {
    "console": Renderer("envdoctor.render.console", _console),
    "json": Renderer("envdoctor.render.json_report", _json),
    "markdown": Renderer("envdoctor.render.markdown", _markdown),
    "github": Renderer("envdoctor.render.github", _github),
    "junit": Renderer("envdoctor.render.junit", _junit),
}


def render(report: Report, fmt: str, verbose: bool = False) -> str:
    """`report` as text in the format named `fmt` (a key of RENDERERS)."""
    return RENDERERS[fmt].render(report, verbose)


def warm(fmt: str) -> None:
    """Import the renderer of `fmt` now, so the first `render` finds it loaded."""
    importlib.import_module(RENDERERS[fmt].module)
