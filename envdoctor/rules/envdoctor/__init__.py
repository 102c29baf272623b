"""Rules of envdoctor's own area: probes that failed or timed out."""

from __future__ import annotations

from envdoctor.rules.base import Rule, rules_in
from envdoctor.rules.envdoctor import probes

RULES: tuple[Rule, ...] = rules_in(probes)
