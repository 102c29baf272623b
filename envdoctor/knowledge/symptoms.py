"""The usual causes of the broad symptom findings (symptoms.json, sources there): for each, the
command that tells it apart, what that command shows when it is the cause, and its fix.

The order in the data is the prior one, the order public threads report the causes in; the rule
that lists them reorders them for the machine at hand (rules/symptoms.py).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any, TypeVar

from envdoctor.knowledge.provenance import references
from envdoctor.knowledge.tables import load_table
from envdoctor.util.records import record

_TABLE = "symptoms.json"
# The data's operating-system keys are the platform's ("linux", "windows", "macos"); "any" is the
# form for every system without its own.
ANY_OS = "any"
_Form = TypeVar("_Form")


@record
class CauseFix:
    summary: str
    commands: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (os, commands), "any" for every system
    planned: str | None = None  # "driver": the rule asks the planner for this machine's command

    def commands_for(self, os_name: str) -> tuple[str, ...]:
        return _for_os(self.commands, os_name) or ()


@record
class SymptomCause:
    key: str
    title: str
    checks: tuple[tuple[str, str], ...]  # (os, the command that tells this cause apart)
    shows: str  # what that command shows when this is the cause
    fix: CauseFix
    named_by: tuple[str, ...] = ()  # the rules that name this cause exactly when their facts show it
    systems: tuple[str, ...] = ()  # the systems it happens on (every one when empty)
    corpus: tuple[str, ...] = ()  # corpus entries (fixtures/corpus/<id>.json) whose threads confirm it
    source: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None  # the words of an error that name this cause
    endings: tuple[str, ...] = ()  # for a crash: the endings (EndingKind values) it explains

    def said_in(self, text: str) -> bool:
        return self.pattern is not None and self.pattern.search(text) is not None

    def applies_on(self, os_name: str) -> bool:
        return not self.systems or os_name in self.systems

    def check_for(self, os_name: str) -> str | None:
        return _for_os(self.checks, os_name)


@record
class Symptom:
    code: str  # the rule whose finding the symptom is
    symptom: str
    causes: tuple[SymptomCause, ...]

    def cause(self, key: str) -> SymptomCause:
        for cause in self.causes:
            if cause.key == key:
                return cause
        raise KeyError(f"{self.code} lists no cause {key!r}")


def _for_os(pairs: tuple[tuple[str, _Form], ...], os_name: str) -> _Form | None:
    mine = dict(pairs)
    return mine.get(os_name, mine.get(ANY_OS))


def _per_os(value: Any) -> tuple[tuple[str, Any], ...]:
    if isinstance(value, str):
        return ((ANY_OS, value),)
    return tuple((str(os_name), form) for os_name, form in dict(value or {}).items())


def _cause(row: dict[str, Any]) -> SymptomCause:
    fix = row["fix"]
    return SymptomCause(
        key=row["key"],
        title=row["title"],
        checks=_per_os(row["check"]),
        shows=row["shows"],
        fix=CauseFix(
            summary=fix["summary"],
            commands=tuple((os_name, tuple(cmds)) for os_name, cmds in _per_os(fix.get("commands"))),
            planned=fix.get("planned"),
        ),
        named_by=tuple(row.get("named_by", ())),
        systems=tuple(row.get("os", ())),
        corpus=tuple(row.get("corpus", ())),
        source=references(row.get("source")),
        pattern=re.compile(row["pattern"], re.IGNORECASE) if row.get("pattern") else None,
        endings=tuple(row.get("endings", ())),
    )


@cache
def symptoms() -> tuple[Symptom, ...]:
    return tuple(
        Symptom(code=row["code"], symptom=row["symptom"], causes=tuple(_cause(c) for c in row["causes"]))
        for row in load_table(_TABLE)["symptoms"]
    )


def symptom(code: str) -> Symptom | None:
    for found in symptoms():
        if found.code == code:
            return found
    return None
