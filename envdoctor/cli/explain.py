"""`rules` and `explain`: their bodies are cli.lean's, which also answers them without typer."""

from __future__ import annotations

import typer

from envdoctor.cli import shared


def list_rules(
    fmt: shared.OutputFormat = typer.Option(
        shared.OutputFormat.console,
        "--format",
        "-f",
        metavar="FORMAT",
        help="console or json.",
        case_sensitive=False,
    ),
) -> None:
    from envdoctor.cli.lean import list_rules as body

    shared.write(body(fmt.value), None)


def explain(
    code: str = typer.Argument(..., metavar="CODE", help="A rule code such as ED101, or its name."),
) -> None:
    from envdoctor.cli.lean import CommandError
    from envdoctor.cli.lean import explain as body

    try:
        text = body(code)
    except CommandError as exc:
        shared.fail(str(exc))
    shared.write(text, None)
