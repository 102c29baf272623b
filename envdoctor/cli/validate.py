"""`validate`: the project's expectations are valid, without running the check (the pre-commit
hook's command). Each file named (or ./envdoctor.toml, else ./pyproject.toml) is read as `check`
reads it: unknown keys, versions and sizes that do not parse are one line each, naming the file
and the key. A pyproject.toml without a [tool.envdoctor] table has nothing to validate.

Exit codes: 0 every file valid, 1 a file is not, 2 bad usage.
"""

from __future__ import annotations

import os
from typing import List, Optional

import typer

from envdoctor.cli import shared

NO_TABLE = "has no [tool.envdoctor] table"


def validate(
    files: Optional[List[str]] = typer.Argument(
        None, metavar="[FILE]...", help="envdoctor.toml or pyproject.toml files (default: this folder's)."
    ),
) -> None:
    from envdoctor.engine import registry_names
    from envdoctor.settings import SettingsError, resolve
    from envdoctor.util.redact import one_line

    targets = list(files or [])
    if not targets:
        found = [name for name in ("envdoctor.toml", "pyproject.toml") if os.path.isfile(name)]
        if not found:
            shared.fail("nothing to validate: no envdoctor.toml or pyproject.toml here, and no FILE named")
        targets = found[:1]
    bad = 0
    for path in targets:
        if not os.path.isfile(path):
            typer.echo(f"envdoctor: error: {one_line(path)}: no such file", err=True)
            bad += 1
            continue
        folder = os.path.dirname(os.path.abspath(path))
        try:
            resolve({}, cwd=folder, names=registry_names(), config=path)
        except SettingsError as exc:
            if os.path.basename(path) == "pyproject.toml" and str(exc).endswith(NO_TABLE):
                continue  # a project without envdoctor settings: nothing to validate
            typer.echo(f"envdoctor: error: {one_line(str(exc))}", err=True)
            bad += 1
    raise typer.Exit(1 if bad else 0)
