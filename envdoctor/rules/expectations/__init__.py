"""Rules of the expectations area: what the project said it needs."""

from __future__ import annotations

from envdoctor.rules.base import Rule
from envdoctor.rules.expectations import requirements

RULES: tuple[Rule, ...] = (*requirements.RULES,)
