"""Which environment was examined: an activation variable naming an environment that is gone."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.model.findings import Fix, Severity, StaleVariable
from envdoctor.probes.torch_build import TorchFacts
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


_REPLACEMENT = {
    "pip": "-m pip",
    "pip3": "-m pip",
    "torchrun": "-m torch.distributed.run",
}


@rule(
    code="ED005",
    name="entrypoint-from-other-interpreter",
    severity=Severity.WARNING,
    summary="pip or torchrun on PATH runs another interpreter than the examined environment's python",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="The interpreter named in the #! line of `pip`, `pip3` and `torchrun` as PATH finds them "
        "(read in the torch child), where `python` on PATH is the examined interpreter.",
        why="`python` is the environment's, but `pip install` then installs into another Python and "
        "`torchrun train.py` starts another interpreter, which does not see the environment's "
        "packages: 'No module named datasets' under torchrun, 'No matching distribution found for "
        "torch' from a pip of another Python version.",
        fix="Run them through the environment's interpreter (`python -m pip`, `python -m "
        "torch.distributed.run`), or install the package into the environment so that its own entry "
        "point comes first on PATH.",
        example="A venv over an HPC module's Python: `torchrun` on PATH is the module's, so the script "
        "runs without the venv's packages (pytorch/pytorch#92132).",
    ),
)
def entrypoint_from_other_interpreter(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    around = torch.surroundings
    if around is None or around.entry_points is None:
        return
    python = around.entry_point("python") or around.entry_point("python3")
    if python is None or python.same_environment is not True:
        return  # PATH's python is not the examined one: PATH says nothing about this environment
    examined = quote(ctx.interpreter.path, ctx.platform.os)
    for name in ("pip", "pip3", "torchrun"):
        entry = around.entry_point(name)
        if entry is None or entry.same_environment is not False or entry.interpreter is None:
            continue
        instead = f"{examined} {_REPLACEMENT[name]}"
        yield Hit(
            title=f"`{name}` on PATH runs {entry.interpreter}, not this environment's python",
            detail=f"`python` on PATH is {python.path}, the examined interpreter, but `{name}` is "
            f"{entry.path}, a script of {entry.interpreter}: what it installs or starts does not use "
            "this environment's packages.",
            evidence=(f"{name}: {entry.path} (#! {entry.interpreter})", f"python: {python.path}"),
            fixes=(
                Fix(
                    summary=f"Run it through this environment's interpreter: `{instead} ...` instead of "
                    f"`{name} ...`",
                    commands=(f"{instead} --version" if name != "torchrun" else f"{instead} --help",),
                ),
            ),
        )
