"""The error texts a check captured, gathered from the facts for the signature matcher.

Any text field of any probe's facts that holds an error, a message, a warning or the last words
of a child (`error`, `message`, `traceback`, `stderr_tail`, `cause`, `warnings`, `errors`, ...)
is a text the signatures are matched against: a probe that records a new kind of error needs no
edit here to have it read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from envdoctor.knowledge.signatures import PASTED, ErrorEvidence, ErrorText, evidence
from envdoctor.model.findings import ProbeResult, ProbeStatus

TEXT_FIELDS = frozenset(
    {"error", "errors", "message", "traceback", "stderr_tail", "cause", "warnings", "note", "detail"}
    | {"nvml_error"}
)
MAX_TEXTS = 200  # a pathological snapshot cannot make the matcher read without end
MAX_TEXT = 64 * 1024


def _texts(value: object, path: str, depth: int = 0) -> Iterator[ErrorText]:
    if depth > 8:
        return
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            inner = getattr(value, field.name)
            where = f"{path}.{field.name}"
            if field.name in TEXT_FIELDS:
                yield from _strings(inner, where)
            else:
                yield from _texts(inner, where, depth + 1)
    elif isinstance(value, (tuple, list)):
        for index, item in enumerate(value):
            yield from _texts(item, f"{path}[{index}]", depth + 1)


def _strings(value: object, where: str) -> Iterator[ErrorText]:
    if isinstance(value, str):
        if value.strip():
            yield ErrorText(where, value[:MAX_TEXT])
    elif isinstance(value, (tuple, list)):
        for index, item in enumerate(value):
            yield from _strings(item, f"{where}[{index}]")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        yield from _texts(value, where)


def captured(probes: tuple[ProbeResult, ...]) -> tuple[ErrorText, ...]:
    found: list[ErrorText] = []
    for result in probes:
        if result.status is ProbeStatus.OK and result.facts is not None:
            found += _texts(result.facts, result.probe)
        elif result.error:
            found.append(ErrorText(f"{result.probe} ({result.status.value})", result.error[:MAX_TEXT]))
        if len(found) >= MAX_TEXTS:
            break
    return tuple(found[:MAX_TEXTS])


def gather(probes: tuple[ProbeResult, ...], pasted: str | None = None) -> ErrorEvidence:
    """The evidence of a check: what it captured, and the pasted text when `envdoctor why` has one."""
    texts = list(captured(probes))
    if pasted:
        texts.insert(0, ErrorText(PASTED, pasted))
    return evidence(texts)
