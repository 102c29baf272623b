"""The options of torch's CUDA caching allocator (PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF) and
the first release that knows each, and which variable name a release reads (alloc_conf.json)."""

from __future__ import annotations

from functools import cache

from envdoctor.knowledge import load_table
from envdoctor.knowledge.provenance import references
from envdoctor.util.records import record


@record
class AllocOption:
    name: str
    first: str  # the first torch release that knows it
    kind: str  # number, bool, choice
    choices: tuple[str, ...] = ()
    source: tuple[str, ...] = ()


@record
class AllocVariable:
    name: str
    first: str  # the first release that reads it
    deprecated_from: str | None = None
    cuda_expandable_segments_from: str | None = None  # the first release that honours it for that
    source: tuple[str, ...] = ()


@cache
def options() -> tuple[AllocOption, ...]:
    return tuple(
        AllocOption(
            name=str(row["name"]),
            first=str(row["from"]),
            kind=str(row["kind"]),
            choices=tuple(str(c) for c in row.get("choices", ())),
            source=references(row.get("source")),
        )
        for row in load_table("alloc_conf.json")["options"]
    )


def option(name: str) -> AllocOption | None:
    return next((o for o in options() if o.name == name), None)


@cache
def variables() -> tuple[AllocVariable, ...]:
    return tuple(
        AllocVariable(
            name=str(row["name"]),
            first=str(row["from"]),
            deprecated_from=row.get("deprecated_from"),
            cuda_expandable_segments_from=row.get("cuda_expandable_segments_from"),
            source=references(row.get("source")),
        )
        for row in load_table("alloc_conf.json")["variables"]
    )


def variable(name: str) -> AllocVariable | None:
    return next((v for v in variables() if v.name == name), None)
