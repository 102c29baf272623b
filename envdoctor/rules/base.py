"""What a rule is: a stable code, a name, a severity, docs, and a check over typed facts.

A rule never touches the OS: it reads facts and the knowledge base and returns hits; the engine
turns hits into findings with the rule's code, name, severity and area.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import field
from types import ModuleType
from typing import TypeVar

from envdoctor.model.findings import Fix, Interpreter, PlatformInfo, ProbeResult, ProbeStatus, Severity
from envdoctor.util.records import record

T = TypeVar("T")


@record
class Hit:
    """One occurrence of a rule's problem, in the words of this machine."""

    title: str
    detail: str
    evidence: tuple[str, ...] = ()
    fixes: tuple[Fix, ...] = ()


@record
class RuleDoc:
    what: str  # What it checks
    why: str  # Why it matters
    fix: str  # How to fix
    example: str  # An example of the situation


@record
class RuleContext:
    """The facts a rule may read: every probe's result, the platform and the interpreter."""

    platform: PlatformInfo
    interpreter: Interpreter
    probes: tuple[ProbeResult, ...]
    facts: dict[type, object] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        platform: PlatformInfo,
        interpreter: Interpreter,
        probes: tuple[ProbeResult, ...],
        inputs: tuple[object, ...] = (),
    ) -> RuleContext:
        """`inputs` are what the user stated (expectations): rules read them like facts."""
        facts: dict[type, object] = {type(given): given for given in inputs}
        for result in probes:
            if result.facts is not None and result.status is ProbeStatus.OK:
                facts[type(result.facts)] = result.facts
        return cls(platform=platform, interpreter=interpreter, probes=probes, facts=facts)

    def can_run(self, rule: Rule) -> bool:
        """Whether every fact `rule` needs is there; the engine skips it otherwise."""
        return all(self.get(kind) is not None for kind in rule.needs)

    def get(self, kind: type[T]) -> T | None:
        found = self.facts.get(kind)
        return found if isinstance(found, kind) else None

    def need(self, kind: type[T]) -> T:
        found = self.get(kind)
        if found is None:  # the engine skips rules whose needs are absent, so this is a bug
            raise LookupError(f"rule asked for {kind.__name__}, which no probe provided")
        return found


CheckFn = Callable[[RuleContext], Iterable[Hit]]


@record
class Rule:
    code: str  # ED###, stable forever
    name: str  # kebab-case
    severity: Severity
    area: str  # the probe whose area line the findings belong to
    summary: str  # one line, for `envdoctor rules`
    needs: tuple[type, ...]
    check: CheckFn
    doc: RuleDoc
    # Codes of rules whose findings explain this one's: when one of them is in the report, this
    # rule's finding is folded under it (one root cause, one finding; see engine.fold).
    consequence_of: tuple[str, ...] = ()
    origin: str | None = None  # the plugin package that added it; None: envdoctor's own


def area_of_module(module: str) -> str:
    """The area a rule module belongs to is its package under `envdoctor.rules`: one word names
    the probe, its JSON area and the folder of its rules (`envdoctor.rules.nvml.driver` -> nvml)."""
    parts = module.split(".")
    if len(parts) < 4 or parts[:2] != ["envdoctor", "rules"]:
        raise ValueError(f"rule module {module!r} is not inside an area package of envdoctor.rules")
    return parts[2]


def rule(
    *,
    code: str,
    name: str,
    severity: Severity,
    summary: str,
    needs: tuple[type, ...],
    doc: RuleDoc,
    consequence_of: tuple[str, ...] = (),
) -> Callable[[CheckFn], Rule]:
    """Declares a rule right above its check function; the area comes from the module's package.

    `consequence_of` names the rules that, when they fire, are the root cause of this one: the
    report then shows their finding with its fix and folds this one under it.
    """

    def declare(check: CheckFn) -> Rule:
        return Rule(
            code=code,
            name=name,
            severity=severity,
            area=area_of_module(check.__module__),
            summary=summary,
            needs=needs,
            check=check,
            doc=doc,
            consequence_of=consequence_of,
        )

    return declare


def rules_in(*modules: ModuleType) -> tuple[Rule, ...]:
    """The rules declared in `modules`, in the order they are written there.

    An area package lists its rule modules by name; the rules inside are found by type, so a
    new rule in an existing module needs nothing but its `@rule`. A rule another module merely
    imports is not counted twice: only rules whose check is defined in the module are taken.
    """
    found: list[Rule] = []
    for module in modules:
        found += [
            value
            for value in vars(module).values()
            if isinstance(value, Rule) and value.check.__module__ == module.__name__
        ]
    return tuple(found)
