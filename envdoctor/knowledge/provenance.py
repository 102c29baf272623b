"""Where a knowledge record comes from: public references only, and whether it was confirmed.

Every record's `source` (or `<field>_source`) is a URL or `owner/repo@commit:path`, one or a list;
`basis` says in words what those references show; `verified: false` marks a fact no primary public
source was found for (the source is then the best public page there is). Users see "unverified"
in plain words, never a marker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envdoctor.util.lazy_re import Lazy
from envdoctor.util.records import record

# A URL, or a file in a public repository at a commit: owner/repo@<hex>:path.
PUBLIC_REFERENCE = Lazy(r"^(?:https?://\S+|[A-Za-z0-9][\w.-]*/[\w.-]+@[0-9a-f]{7,40}:\S+)$")


@record
class Provenance:
    source: tuple[str, ...]
    basis: str | None = None
    verified: bool = True


def references(value: object) -> tuple[str, ...]:
    """A `source` value (one reference or a list) as a tuple."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)):
        return tuple(str(item) for item in value)
    raise TypeError(f"a source is a reference or a list of them, not {type(value).__name__}")


def provenance(record: Mapping[str, Any], field: str = "") -> Provenance:
    """The provenance of `record`, or of one of its fields (`<field>_source`, `<field>_basis`, ...)."""
    prefix = f"{field}_" if field else ""
    basis = record.get(f"{prefix}basis")
    return Provenance(
        source=references(record.get(f"{prefix}source")),
        basis=str(basis) if basis is not None else None,
        verified=bool(record.get(f"{prefix}verified", True)),
    )
