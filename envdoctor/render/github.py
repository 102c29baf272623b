"""GitHub Actions workflow commands: one annotation per finding, then one plain summary line.

`::error title=ED101 driver-too-old-for-torch-cuda::message`. Escaping follows GitHub's toolkit
(actions/toolkit packages/core/src/command.ts): in the message `%`, CR and LF become %25, %0D,
%0A; in properties also `:` and `,` become %3A and %2C. A message is thus always one line, so text
from the machine cannot start a workflow command of its own. The Markdown step summary is written
by the caller (it is a file, not output).
"""

from __future__ import annotations

from typing import Any

from envdoctor.model.findings import Report
from envdoctor.render.json_report import report_to_data
from envdoctor.render.markdown import consequences, headline, primary

COMMAND = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def annotation_message(finding: dict[str, Any], folded: list[dict[str, Any]] | None = None) -> str:
    lines = [finding["title"], *finding["detail"].splitlines()]
    for number, fix in enumerate(finding["fixes"]):
        lines.append(f"{'Fix' if number == 0 else 'Or'}: {fix['summary']}")
        lines += [f"  $ {command}" for command in fix["commands"]]
        if fix["link"]:
            lines.append(f"  see {fix['link']}")
    if folded:
        lines.append("Caused by this (fixed by the fix above):")
        lines += [f"  {f['code']} {f['title']}" for f in folded]
    return "\n".join(lines)


def annotation(finding: dict[str, Any], folded: list[dict[str, Any]] | None = None) -> str:
    title = escape_property(f"{finding['code']} {finding['name']}")
    message = annotation_message(finding, folded)
    return f"::{COMMAND[finding['severity']]} title={title}::{escape_data(message)}"


def render_github_data(data: dict[str, Any]) -> str:
    # One annotation per root cause: the findings folded under it are listed in its message.
    lines = [annotation(f, consequences(data, f)) for f in primary(data)]
    lines.append(f"envdoctor: {headline(data)}")
    return "\n".join(lines) + "\n"


def render_github(report: Report) -> str:
    return render_github_data(report_to_data(report))
