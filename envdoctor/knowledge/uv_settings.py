"""The settings uv knows in uv.toml and [tool.uv] (uv_settings.json, sources there): uv denies unknown
fields, so a file with one is a file uv refuses (uv.toml) or skips (pyproject.toml)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from envdoctor.knowledge.tables import load_table

_TABLE = "uv_settings.json"


@cache
def known_fields() -> frozenset[str]:
    return frozenset(load_table(_TABLE)["fields"])


@cache
def pyproject_only() -> frozenset[str]:
    return frozenset(load_table(_TABLE)["project_only"])


def as_of() -> str:
    return str(load_table(_TABLE)["as_of"])


def refusal(table: Mapping[str, object], in_uv_toml: bool) -> tuple[str, str] | None:
    """(the field, why uv refuses it) for the first field of `table` uv does not accept there."""
    for field, value in table.items():
        if field not in known_fields():
            return field, (
                f"uv refuses the unknown field `{field}` (its settings as of {as_of()}; a newer uv may "
                "know it)"
            )
        if in_uv_toml and field in pyproject_only():
            return field, f"uv refuses `{field}` in a uv.toml: it belongs in pyproject.toml's [tool.uv]"
        allowed = load_table(_TABLE)["values"].get(field)
        if allowed is not None and value not in allowed:
            return field, f"uv refuses {field} = {value!r}: expected one of {', '.join(allowed)}"
    return None
