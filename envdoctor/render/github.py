"""GitHub Actions workflow commands: one annotation per finding, then one plain summary line.

`::error title=ED101 driver-too-old-for-torch-cuda::message`. Escaping follows GitHub's toolkit
(actions/toolkit packages/core/src/command.ts): in the message `%`, CR and LF become %25, %0D,
%0A; in properties also `:` and `,` become %3A and %2C. A message is thus always one line, so text
from the machine cannot start a workflow command of its own. The Markdown step summary is written
by the caller (it is a file, not output).
"""

from __future__ import annotations

from typing import Any

from envdoctor.model import Report
from envdoctor.render.json_report import report_to_data
from envdoctor.render.markdown import headline

COMMAND = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def annotation_message(finding: dict[str, Any]) -> str:
    lines = [finding["title"], *finding["detail"].splitlines()]
    for number, fix in enumerate(finding["fixes"]):
        lines.append(f"{'Fix' if number == 0 else 'Or'}: {fix['summary']}")
        lines += [f"  $ {command}" for command in fix["commands"]]
        if fix["link"]:
            lines.append(f"  see {fix['link']}")
    return "\n".join(lines)


def annotation(finding: dict[str, Any]) -> str:
    title = escape_property(f"{finding['code']} {finding['name']}")
    return f"::{COMMAND[finding['severity']]} title={title}::{escape_data(annotation_message(finding))}"


def render_github_data(data: dict[str, Any]) -> str:
    lines = [annotation(f) for f in data["findings"]]
    lines.append(f"envdoctor: {headline(data)}")
    return "\n".join(lines) + "\n"


def render_github(report: Report) -> str:
    return render_github_data(report_to_data(report))
