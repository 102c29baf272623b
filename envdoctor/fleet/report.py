"""FleetFacts -> the fleet rules -> a FleetReport with one exit code (0/1 as `check`)."""

from __future__ import annotations

from envdoctor.engine import evaluate
from envdoctor.fleet.facts import FleetFacts
from envdoctor.model.findings import Finding, Interpreter, PlatformInfo, Severity
from envdoctor.rules.base import RuleContext
from envdoctor.rules.fleet import RULES as FLEET_RULES
from envdoctor.settings import Settings
from envdoctor.util.records import record
from envdoctor.util.redact import redact
from envdoctor.version import __version__

# Fleet rules read FleetFacts only; the platform and interpreter of a RuleContext describe one
# machine, which a fleet is not. These placeholders say so if anything ever shows them.
_NO_PLATFORM = PlatformInfo(system="fleet", release="", version="", machine="")
_NO_INTERPRETER = Interpreter(path="", reason="a fleet: each node names its own")


@record
class FleetReport:
    facts: FleetFacts
    findings: tuple[Finding, ...]
    source: str  # what was examined, in words
    strict: bool = False
    ignored: tuple[str, ...] = ()
    checked: tuple[str, ...] = ()
    envdoctor_version: str = __version__

    @property
    def worst(self) -> Severity:
        return max((f.severity for f in self.findings), default=Severity.OK)

    @property
    def status(self) -> str:
        worst = self.worst
        return "error" if worst is Severity.ERROR else "warning" if worst is Severity.WARNING else "ok"

    @property
    def exit_code(self) -> int:
        worst = self.worst
        return 1 if worst is Severity.ERROR or (self.strict and worst is Severity.WARNING) else 0


def build_report(facts: FleetFacts, settings: Settings, source: str) -> FleetReport:
    """Judge `facts` with the fleet rules; credentials in any text are masked before rendering."""
    clean = redact(facts)
    ctx = RuleContext(
        platform=_NO_PLATFORM, interpreter=_NO_INTERPRETER, probes=(), facts={FleetFacts: clean}
    )
    active = [r for r in FLEET_RULES if r.code not in settings.ignore]
    return FleetReport(
        facts=clean,
        findings=evaluate(ctx, active),
        source=source,
        strict=settings.strict,
        ignored=tuple(c for c in settings.ignore if any(r.code == c for r in FLEET_RULES)),
        checked=tuple(r.code for r in active),
    )
