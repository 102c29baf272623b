"""Rules of the expectations area: what the project said it needs (--require-*, [tool.envdoctor],
envdoctor.require) against what this machine has. Every unmet expectation is an error naming the
expectation, what was found, and the way out; met expectations say nothing. Shared pieces:
gpu_view.py (the GPUs torch can use), requirements.py (each key's rule and the area verdict)."""

from __future__ import annotations

from envdoctor.rules.base import Rule, rules_in
from envdoctor.rules.expectations import gpu_presence, gpu_specs, smoke_test, versions

RULES: tuple[Rule, ...] = rules_in(gpu_presence, versions, gpu_specs, smoke_test)
