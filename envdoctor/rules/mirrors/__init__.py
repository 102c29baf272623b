"""Rules of the mirrors area: package indexes, mirrors and channels, where pip, conda and uv would
fetch torch from.

Facts come from the mirrors and sources probes, and, under `envdoctor why`, from the install
commands and pip's "Looking in indexes" lines of the pasted text (pasted.py); which index a URL is
comes from the knowledge base (knowledge/mirrors.json). Background: shared/docs/facts/mirror_facts.md
sections 1.5-1.6 (no index priority in pip), 2.3 (the pytorch conda channel stopped at 2.5), 4
(mirrors), 5 (pitfalls), 6 (credentials). Shared pieces: urls.py (what a URL is), config_edits.py
(where a setting is and the commands that change it).
"""

from __future__ import annotations

from envdoctor.rules.base import Rule, rules_in
from envdoctor.rules.mirrors import (
    broken_config,
    conda_channels,
    conda_solver,
    credentials,
    index_variables,
    partial_index,
    stale_mirrors,
    torch_index,
    unreachable_index,
    uv_project,
    variantless,
)

RULES: tuple[Rule, ...] = rules_in(
    torch_index,
    conda_channels,
    stale_mirrors,
    credentials,
    broken_config,
    index_variables,
    partial_index,
    variantless,
    uv_project,
    conda_solver,
    unreachable_index,
)
