"""Rules of the mirrors area: package indexes, mirrors and channels."""

from __future__ import annotations

from envdoctor.rules.base import Rule
from envdoctor.rules.mirrors import indexes

RULES: tuple[Rule, ...] = (*indexes.RULES,)
