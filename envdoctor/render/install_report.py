"""`envdoctor install` output: plain text for people, JSON for scripts. Both pass through redact."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from envdoctor.install.commands import CommandKind, command_text
from envdoctor.install.plan import InstallPlan
from envdoctor.install.session import Input
from envdoctor.util.redact import redact, redact_text
from envdoctor.util.textwidth import hanging, terminal_width
from envdoctor.util.words import in_words

SCHEMA = "envdoctor.install/1"


def _installs(plan: InstallPlan, project: str) -> bool:
    """Whether the plan's commands install `project`: a requirement or a wheel file names it."""
    for command in plan.commands:
        for arg in command.argv:
            name = arg.rsplit("/", 1)[-1].strip("\"'")
            head = name.split("-", 1)[0] if name.endswith(".whl") else name
            for mark in "=<>!~[; ":
                head = head.split(mark, 1)[0]
            if head.replace("_", "-").lower() == project:
                return True
    return False


def plan_to_data(plan: InstallPlan, inputs: Sequence[Input], os_name: str) -> dict[str, Any]:
    plan = redact(plan)
    # What the commands install: a companion the command leaves out (no local source holds it)
    # is not reported as installed; `left_out` names it.
    companions = {"torchvision": plan.torchvision, "torchaudio": plan.torchaudio}
    left_out = [
        f"{name} {version}" for name, version in companions.items() if version and not _installs(plan, name)
    ]
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "torch": plan.torch,
        "torchvision": plan.torchvision if plan.torchvision and _installs(plan, "torchvision") else None,
        "torchaudio": plan.torchaudio if plan.torchaudio and _installs(plan, "torchaudio") else None,
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
    if left_out and plan.commands:
        data["left_out"] = left_out
    return data


def render_json(plan: InstallPlan, inputs: Sequence[Input], os_name: str) -> str:
    return json.dumps(plan_to_data(plan, inputs, os_name), indent=2) + "\n"


def _is_command(text: str) -> bool:
    words = text.split()
    return len(words) >= 3 and ("install" in words[1:5] or words[0] in ("pip", "uv", "conda", "mamba"))


_TERMINAL = -1  # render_text's default width: the reader's terminal, if it is one


def render_text(
    plan: InstallPlan, inputs: Sequence[Input], os_name: str, width: int | None = _TERMINAL
) -> str:
    """The plan for people; prose wrapped to `width` with hanging indents (None: whole lines, as
    for a pipe; the default asks the terminal). Commands are never wrapped: they are copied."""
    if width == _TERMINAL:
        width = terminal_width(os.environ)
    plan = redact(plan)
    inputs = redact(tuple(inputs))
    name_width = max(len(i.name) for i in inputs) if inputs else 0

    def prose(text: str, first: str, rest: str | None = None) -> str:
        rest = " " * len(first) if rest is None else rest
        if width is None or len(first) + len(text) <= width:
            return first + text
        head, colon, tail = text.rpartition(": ")
        if colon and _is_command(tail):  # "...instead: python -m pip install ...": kept whole
            return hanging(head + ":", width, first, rest) + f"\n{rest}$ {tail}"
        return hanging(text, width, first, rest)

    lines = ["For this target:"]
    lines += [prose(f"{i.value}  [{i.origin}]", f"  {i.name:<{name_width}}  ") for i in inputs]
    lines.append("")
    if plan.possible:
        lines.append(prose(in_words(plan.reason), "Why: "))
        if plan.source is not None:
            lines.append(prose(plan.source, "Source: "))
        if plan.unverified:
            lines.append(
                prose(
                    f"this release is {_unlisted(plan.torch)} envdoctor's data (see the first note)",
                    "Unverified: ",
                )
            )
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
        # The reason opens with "no torch build fits: <why>": said once, as the sentence it is.
        said = plan.reason[:1].upper() + plan.reason[1:] if plan.reason.startswith("no ") else plan.reason
        lines.append(prose(said, ""))
        lines.append("")
    if plan.warnings:
        lines += [prose(w, "Note: ") for w in plan.warnings]
        lines.append("")
    if plan.suggestions:
        lead = "Instead" if not plan.possible else "Also"
        lines += [prose(s, f"{lead}: ") for s in plan.suggestions]
        lines.append("")
    return "\n".join(lines)


def _unlisted(torch: str | None) -> str:
    """ "newer than", or "not in" for a release the data skips (its overlay lists newer ones)."""
    from envdoctor import knowledge

    return "newer than" if knowledge.newer_than_data(torch) else "not in"
