"""`envdoctor install` output: plain text for people, JSON for scripts. Both pass through redact."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from envdoctor.install.plan import InstallPlan
from envdoctor.install.session import Input
from envdoctor.redact import redact

SCHEMA = "envdoctor.install/1"


def plan_to_data(plan: InstallPlan, inputs: Sequence[Input]) -> dict[str, Any]:
    plan = redact(plan)
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "torch": plan.torch,
        "torchvision": plan.torchvision,
        "torchaudio": plan.torchaudio,
        "variant": plan.variant,
        "reason": plan.reason,
        "commands": [
            {"manager": c.manager, "command": c.command, **({"kind": c.kind} if c.kind != "shell" else {})}
            for c in plan.commands
        ],
        "warnings": list(plan.warnings),
        "suggestions": list(plan.suggestions),
        "inputs": {i.name: {"value": i.value, "origin": i.origin} for i in redact(tuple(inputs))},
    }
    return data


def render_json(plan: InstallPlan, inputs: Sequence[Input]) -> str:
    return json.dumps(plan_to_data(plan, inputs), indent=2) + "\n"


def render_text(plan: InstallPlan, inputs: Sequence[Input]) -> str:
    plan = redact(plan)
    inputs = redact(tuple(inputs))
    width = max(len(i.name) for i in inputs) if inputs else 0
    lines = ["For this target:"]
    lines += [f"  {i.name:<{width}}  {i.value}  [{i.origin}]" for i in inputs]
    lines.append("")
    if plan.possible:
        lines.append(f"Why: {plan.reason}")
        lines.append("")
        for command in plan.commands:
            if command.kind == "shell":
                lines.append(f"  $ {command.command}")
            else:
                lines.append(f"  # {command.manager}: add to {command.kind}")
                lines += [f"    {line}" if line else "" for line in command.command.splitlines()]
        lines.append("")
    else:
        lines.append(f"No fitting build: {plan.reason}")
        lines.append("")
    if plan.warnings:
        lines += [f"Note: {w}" for w in plan.warnings]
        lines.append("")
    if plan.suggestions:
        lead = "Instead" if not plan.possible else "Also"
        lines += [f"{lead}: {s}" for s in plan.suggestions]
        lines.append("")
    return "\n".join(lines)
