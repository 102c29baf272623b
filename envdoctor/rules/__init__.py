"""Every rule, by area. Codes: 0xx torch install, 1xx driver (14x-15x: AMD, Intel and Apple GPUs;
16x: environment variables), 2xx build,
3xx GPU architecture and smoke test, 4xx CUDA toolkit and library paths, 5xx mirrors and package
indexes, 6xx Windows runtime and DLL loading, 7xx expectations, 8xx fleets (many nodes judged
together), 9xx envdoctor itself."""

from __future__ import annotations

from envdoctor.rules import (
    envdoctor,
    environment,
    expectations,
    fleet,
    gpu_vendors,
    mirrors,
    nvml,
    toolkit,
    torch,
    windows,
)
from envdoctor.rules.base import Hit, Rule, RuleContext, RuleDoc

# Listed by code, whatever the area packages' order: `envdoctor rules` and the README read this.
RULES: tuple[Rule, ...] = tuple(
    sorted(
        (
            *torch.RULES,
            *nvml.RULES,
            *toolkit.RULES,
            *mirrors.RULES,
            *windows.RULES,
            *expectations.RULES,
            *fleet.RULES,
            *envdoctor.RULES,
            *gpu_vendors.RULES,
            *environment.RULES,
        ),
        key=lambda rule: rule.code,
    )
)

RULES_BY_CODE: dict[str, Rule] = {r.code: r for r in RULES}

__all__ = ["RULES", "RULES_BY_CODE", "Hit", "Rule", "RuleContext", "RuleDoc"]
