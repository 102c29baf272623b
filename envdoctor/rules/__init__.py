"""Every rule, by area. Codes: 0xx torch install, 1xx driver, 2xx build, 3xx GPU architecture and
smoke test, 9xx envdoctor itself."""

from __future__ import annotations

from envdoctor.rules import build, driver, envdoctor_self, gpu, torch_install
from envdoctor.rules.base import Hit, Rule, RuleContext, RuleDoc

RULES: tuple[Rule, ...] = (
    *torch_install.RULES,
    *driver.RULES,
    *build.RULES,
    *gpu.RULES,
    *envdoctor_self.RULES,
)

RULES_BY_CODE: dict[str, Rule] = {r.code: r for r in RULES}

__all__ = ["RULES", "RULES_BY_CODE", "Hit", "Rule", "RuleContext", "RuleDoc"]
