"""Which environment was examined: an activation variable naming an environment that is gone."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.model.findings import Fix, Severity, StaleVariable
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import unset_command
from envdoctor.shell import quote


def _fixes(stale: StaleVariable, os_name: str) -> tuple[Fix, ...]:
    if stale.variable == "CONDA_PREFIX":
        leave = Fix(
            summary="Leave the deleted conda environment (or activate one that exists)",
            commands=("conda deactivate", "conda env list"),
        )
        again = Fix(
            summary="Create it again at that path, then activate it",
            commands=(f"conda create -p {quote(stale.path, os_name)} python",),
        )
    else:
        leave = Fix(
            summary="Leave the deleted virtual environment: `deactivate`, or, where the shell no longer "
            "knows that function, remove the variable",
            commands=("deactivate", unset_command(os_name, None, stale.variable)),
        )
        python = "py" if os_name == "windows" else "python3"
        again = Fix(
            summary="Create it again at that path, then activate it",
            commands=(f"{python} -m venv {quote(stale.path, os_name)}",),
        )
    return (leave, again)


@rule(
    code="ED004",
    name="stale-active-environment",
    severity=Severity.WARNING,
    summary="$VIRTUAL_ENV or $CONDA_PREFIX names an environment that no longer exists",
    needs=(),
    doc=RuleDoc(
        what="Whether the activation variables of this shell ($VIRTUAL_ENV, $CONDA_PREFIX) name "
        "a folder that still holds a Python interpreter.",
        why="The shell still looks activated, so `pip` and `python` seem to belong to that "
        "environment while they are whatever comes next on PATH; envdoctor examines another "
        "environment than the one the prompt suggests, and tools that read the variable (uv, "
        "pip's --require-virtualenv) are misled too.",
        fix="Deactivate (or remove the variable) and activate an environment that exists, or create "
        "the environment again at that path.",
        example="The project's .venv was deleted and recreated elsewhere; the old terminal still has "
        "VIRTUAL_ENV=/home/user/old/.venv.",
    ),
)
def stale_active_environment(ctx: RuleContext) -> Iterator[Hit]:
    for stale in ctx.interpreter.stale:
        state = "holds no Python interpreter" if stale.exists else "no longer exists"
        yield Hit(
            title=f"${stale.variable} names {stale.path}, which {state}",
            detail="This shell still looks activated, but that environment is gone; envdoctor "
            f"examined {ctx.interpreter.path} instead.",
            evidence=(
                f"{stale.variable} = {stale.path}",
                f"folder {'exists' if stale.exists else 'missing'}",
            ),
            fixes=_fixes(stale, ctx.platform.os),
        )
