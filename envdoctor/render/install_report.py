"""`envdoctor install` output: plain text for people, JSON for scripts. Both pass through redact."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from envdoctor.install.commands import CommandKind, command_text
from envdoctor.install.plan import InstallPlan
from envdoctor.install.session import Input
from envdoctor.redact import redact, redact_text

SCHEMA = "envdoctor.install/1"


def plan_to_data(plan: InstallPlan, inputs: Sequence[Input], os_name: str) -> dict[str, Any]:
    plan = redact(plan)
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "torch": plan.torch,
        "torchvision": plan.torchvision,
        "torchaudio": plan.torchaudio,
        "variant": plan.variant,
        "reason": plan.reason,
        "commands": [
            {
                "manager": c.manager,
                "command": redact_text(command_text(c, os_name)),
                **({"kind": c.kind.value} if c.kind is not CommandKind.SHELL else {}),
            }
            for c in plan.commands
        ],
        "warnings": list(plan.warnings),
        "suggestions": list(plan.suggestions),
        "inputs": {i.name: {"value": i.value, "origin": i.origin} for i in redact(tuple(inputs))},
    }
    # Keys that only source-aware and newer-than-data plans carry, so other plans read as before.
    if plan.source is not None:
        data["source"] = plan.source
        data["route"] = plan.route.value
    if plan.unverified:
        data["unverified"] = True
    return data


def render_json(plan: InstallPlan, inputs: Sequence[Input], os_name: str) -> str:
    return json.dumps(plan_to_data(plan, inputs, os_name), indent=2) + "\n"


def render_text(plan: InstallPlan, inputs: Sequence[Input], os_name: str) -> str:
    plan = redact(plan)
    inputs = redact(tuple(inputs))
    width = max(len(i.name) for i in inputs) if inputs else 0
    lines = ["For this target:"]
    lines += [f"  {i.name:<{width}}  {i.value}  [{i.origin}]" for i in inputs]
    lines.append("")
    if plan.possible:
        lines.append(f"Why: {plan.reason}")
        if plan.source is not None:
            lines.append(f"Source: {plan.source}")
        if plan.unverified:
            lines.append("Unverified: this release is newer than envdoctor's data (see the first note)")
        lines.append("")
        for command in plan.commands:
            text = redact_text(command_text(command, os_name))
            if command.kind is CommandKind.SHELL:
                lines.append(f"  $ {text}")
            else:
                lines.append(f"  # {command.manager}: add to {command.kind.value}")
                lines += [f"    {line}" if line else "" for line in text.splitlines()]
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
