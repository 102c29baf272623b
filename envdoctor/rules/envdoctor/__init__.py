"""Rules of envdoctor's own area: probes that failed or timed out, plugins that did not load."""

from __future__ import annotations

from envdoctor.rules.base import Rule, rules_in
from envdoctor.rules.envdoctor import plugins, probes

RULES: tuple[Rule, ...] = rules_in(probes, plugins)
