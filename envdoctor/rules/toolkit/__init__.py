"""Rules of the toolkit area: CUDA toolkits and library paths."""

from __future__ import annotations

from envdoctor.rules.base import Rule
from envdoctor.rules.toolkit import paths

RULES: tuple[Rule, ...] = (*paths.RULES,)
