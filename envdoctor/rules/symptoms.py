"""A broad symptom's usual causes, ranked for the machine at hand (the causes: knowledge/symptoms.json).

A symptom rule (ED203, ED103, ED104, ...) does not guess one cause: it lists the causes the data
holds, each read against this machine's facts by a small reader the rule registers for it. What
the facts confirm comes first, then what they make likely, then the causes they neither show nor
rule out, in the order threads report them (these only while nothing is confirmed); what they
rule out, or what cannot happen on this system, is left out. Each cause keeps its command that
tells it apart and its fix, so a user on a machine envdoctor cannot fully see still reaches the fix
in a minute.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from envdoctor.knowledge import symptoms as data
from envdoctor.model.findings import Fix
from envdoctor.model.types import TextEnum
from envdoctor.rules.base import RuleContext
from envdoctor.util.records import record


class Likelihood(TextEnum):
    CONFIRMED = "confirmed"  # the facts show it
    LIKELY = "likely"  # the facts point to it without proving it
    POSSIBLE = "possible"  # the facts neither show nor rule it out
    RULED_OUT = "ruled_out"


_RANK = {Likelihood.CONFIRMED: 0, Likelihood.LIKELY: 1, Likelihood.POSSIBLE: 2}


@record
class Reading:
    """What this machine's facts say of one cause."""

    likelihood: Likelihood = Likelihood.POSSIBLE
    title: str | None = None  # the cause in this machine's terms, in place of the data's words
    fix: Fix | None = None  # a fix built from this machine's facts (the planner's, for "planned")
    commands: tuple[str, ...] | None = None  # the data's fix with this machine's commands


POSSIBLE = Reading()
RULED_OUT = Reading(Likelihood.RULED_OUT)

Reader = Callable[[RuleContext], Reading]


@record
class RankedCause:
    key: str
    title: str
    check: str  # this system's form of the command that tells the cause apart
    shows: str
    fix: Fix
    likelihood: Likelihood
    named_by: tuple[str, ...]


# The readers each symptom rule registers: {code: {cause key: reader}}.
READERS: dict[str, dict[str, Reader]] = {}


def reads(code: str, key: str) -> Callable[[Reader], Reader]:
    """Register `reader` as the one that reads cause `key` of symptom `code` from the facts."""

    def register(reader: Reader) -> Reader:
        READERS.setdefault(code, {})[key] = reader
        return reader

    return register


def _filled(text: str, values: Mapping[str, str]) -> str:
    # "{python}" and the like: plain replacement, as commands hold braces of their own (shell, JSON).
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    return text


def _fix(cause: data.SymptomCause, reading: Reading, os_name: str, values: Mapping[str, str]) -> Fix:
    if reading.fix is not None:
        return reading.fix
    commands = reading.commands if reading.commands is not None else cause.fix.commands_for(os_name)
    return Fix(
        summary=_filled(cause.fix.summary, values), commands=tuple(_filled(c, values) for c in commands)
    )


def ranked(
    ctx: RuleContext,
    code: str,
    readers: Mapping[str, Reader] | None = None,
    values: Mapping[str, str] | None = None,
) -> tuple[RankedCause, ...]:
    """The causes of symptom `code` most likely first for this machine; none ruled out. `values`
    fill the data's placeholders ("{python}": the examined interpreter, quoted)."""
    symptom = data.symptom(code)
    if symptom is None:
        return ()
    mine = READERS.get(code, {}) if readers is None else readers
    os_name = ctx.platform.os
    values = values or {}
    found: list[RankedCause] = []
    for cause in symptom.causes:
        check = cause.check_for(os_name)
        if not cause.applies_on(os_name) or check is None:
            continue
        reader = mine.get(cause.key)
        reading = reader(ctx) if reader is not None else POSSIBLE
        if reading.likelihood is Likelihood.RULED_OUT:
            continue
        found.append(
            RankedCause(
                key=cause.key,
                title=reading.title or cause.title,
                check=_filled(check, values),
                shows=cause.shows,
                fix=_fix(cause, reading, os_name, values),
                likelihood=reading.likelihood,
                named_by=cause.named_by,
            )
        )
    if any(c.likelihood is Likelihood.CONFIRMED for c in found):
        # What the facts show settles it, with what they point to: the open rest would only distract.
        found = [c for c in found if c.likelihood is not Likelihood.POSSIBLE]
    # sorted() is stable: within one likelihood the data's order (the threads') stands.
    return tuple(sorted(found, key=lambda c: _RANK[c.likelihood]))


def listed(causes: tuple[RankedCause, ...]) -> str:
    """The causes as one paragraph: "(1) title (the facts show this); tell: `check` shows ..."."""

    def said(cause: RankedCause) -> str:
        shown = {Likelihood.CONFIRMED: " (the facts show this)", Likelihood.LIKELY: " (the facts point here)"}
        return f"{cause.title}{shown.get(cause.likelihood, '')}; tell: `{cause.check}` shows {cause.shows}."

    return " ".join(f"({number}) {said(cause)}" for number, cause in enumerate(causes, 1))


def cause_fixes(causes: tuple[RankedCause, ...], without: tuple[str, ...] = ()) -> tuple[Fix, ...]:
    """Each cause's fix, numbered as the list is: "If (2): ..."; none for the causes `without`. A
    cause alone needs no number."""
    if len(causes) == 1:
        return () if causes[0].key in without else (causes[0].fix,)
    return tuple(
        replace(cause.fix, summary=f"If ({number}): {cause.fix.summary}")
        for number, cause in enumerate(causes, 1)
        if cause.key not in without
    )


def evidence(causes: tuple[RankedCause, ...]) -> tuple[str, ...]:
    return tuple(f"{cause.likelihood}: {cause.key}" for cause in causes)
