"""Plugin packages that envdoctor found but could not load (ED902)."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.model.findings import Fix, PluginFacts, Severity
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule


@rule(
    code="ED902",
    name="plugin-failed",
    severity=Severity.WARNING,
    summary="an installed envdoctor plugin could not be loaded; its rules and probes did not run",
    needs=(PluginFacts,),
    doc=RuleDoc(
        what="Each package that declares envdoctor.rules or envdoctor.probes entry points: whether "
        "its module imports and gives rules (or probe specs).",
        why="A plugin's import runs its own code; envdoctor contains what it raises, so the rest of "
        "the report still comes out, and says which checks are missing from it.",
        fix="Update or reinstall the plugin package (its import error is shown), or run with --no-plugins.",
        example="vllm-envdoctor 0.2 imports a module its vLLM release no longer has: "
        "'ModuleNotFoundError: No module named vllm.envs'.",
    ),
)
def plugin_failed(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(PluginFacts)
    for info in facts.plugins:
        if info.error is None:
            continue
        yield Hit(
            title=f"the plugin {info.package} {info.version} could not be loaded",
            detail=f"{info.entry_point}: {info.error}. Its rules and probes did not run; the rest of "
            "the report is complete.",
            evidence=(info.entry_point,),
            fixes=(
                Fix(
                    summary=f"Update or reinstall {info.package}, or run without plugins",
                    commands=("envdoctor check --no-plugins",),
                ),
            ),
        )
