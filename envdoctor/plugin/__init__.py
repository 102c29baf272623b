"""envdoctor's plugin API, version 1: what a third-party package uses to add rules and probes.

A package declares rules with `rule(...)` (as envdoctor's own are declared) and names the module
under the `envdoctor.rules` entry-point group; a probe is a `ProbeSpec` under `envdoctor.probes`.
Rules read facts by type (`ctx.get(TorchFacts)`), return `Hit`s, and never write a package
install command themselves: `package_fix` and `planned_fix` ask envdoctor's planner, which knows
the user's indexes, mirrors, local wheels, constraints and what answers from here.

Codes are the plugin's own namespace and three digits (VLLM001), never ED. The names below are
the whole API; anything else in envdoctor may change between releases. API_VERSION grows when one
of them changes incompatibly.
"""

from __future__ import annotations

from collections.abc import Callable

from envdoctor.install.packages import CondaRequest, PackageRequest
from envdoctor.model.findings import Finding, Fix, FixKind, Severity
from envdoctor.probes.base import NotApplicable, ProbeContext, ProbeSpec
from envdoctor.probes.gpu_access import GpuAccessFacts
from envdoctor.probes.gpu_vendors import GpuVendorFacts
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.system import SystemFacts
from envdoctor.probes.toolkit import ToolkitFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import CheckFn, Hit, Rule, RuleContext, RuleDoc
from envdoctor.rules.fixes import conda_fix, package_fix, planned_fix

API_VERSION = 1
# Findings of plugin rules belong to this area unless a rule names one of envdoctor's (torch,
# nvml, ...) or its own probe's.
PLUGIN_AREA = "plugins"


def rule(
    *,
    code: str,
    name: str,
    severity: Severity,
    summary: str,
    needs: tuple[type, ...],
    doc: RuleDoc,
    area: str = PLUGIN_AREA,
    consequence_of: tuple[str, ...] = (),
) -> Callable[[CheckFn], Rule]:
    """Declares a plugin rule right above its check function, as envdoctor's own rules are."""

    def declare(check: CheckFn) -> Rule:
        return Rule(
            code=code,
            name=name,
            severity=severity,
            area=area,
            summary=summary,
            needs=needs,
            check=check,
            doc=doc,
            consequence_of=consequence_of,
        )

    return declare


__all__ = [
    "API_VERSION",
    "PLUGIN_AREA",
    "CondaRequest",
    "Finding",
    "Fix",
    "FixKind",
    "GpuAccessFacts",
    "GpuVendorFacts",
    "Hit",
    "NotApplicable",
    "NvmlFacts",
    "PackageRequest",
    "ProbeContext",
    "ProbeSpec",
    "PythonFacts",
    "Rule",
    "RuleContext",
    "RuleDoc",
    "Severity",
    "SystemFacts",
    "ToolkitFacts",
    "TorchFacts",
    "conda_fix",
    "package_fix",
    "planned_fix",
    "rule",
]
