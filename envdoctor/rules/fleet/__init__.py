"""Fleet rules (ED8xx): many nodes judged together, offline from snapshots or live in a job.

They read FleetFacts only, which no single-machine check has, so `check` skips them.
"""

from __future__ import annotations

from envdoctor.rules.base import Rule
from envdoctor.rules.fleet import collective, job, nccl, nodes, packages, stacks

RULES: tuple[Rule, ...] = (
    *stacks.RULES,
    *nodes.RULES,
    *job.RULES,
    *collective.RULES,
    *nccl.RULES,
    *packages.RULES,
)
