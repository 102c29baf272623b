"""A snapshot file's facts, as a digest: files with equal digests share one diagnosis.

Re-diagnosing every snapshot in full costs milliseconds each; a fleet's nodes mostly hold the same
facts. A snapshot's diagnosis is a pure function of its facts, so nodes whose facts agree share one.
What differs from run to run on identical nodes is set aside first (`MEASUREMENTS`: free memory and
disk, timings, the smoke test's numeric errors): rules read those only to word a finding, never to
decide one (tests/test_fleet_offline.py perturbs them on every fixture to hold that true). A shared
diagnosis quotes the measurements of the first node seen with those facts.

Kept free of heavy imports: the helper processes of `envdoctor fleet` load only this module.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

# Keys (in any probe's facts) that measure this run rather than describe the node. A test holds the
# list to the facts' dataclasses, so a new field of one of these names gets a second look.
MEASUREMENTS = (
    "seconds",
    "import_seconds",
    "time_per_iter",
    "max_error",
    "memory_free_before",
    "memory_free_after",
    "peak_allocated",
    "memory_available_bytes",
    "disk_free_bytes",
)
# Bookkeeping no rule reads: when and by which envdoctor it was written, and the fixture prose.
BOOKKEEPING = ("created", "envdoctor_version", "description", "sources")

# Patterns that start with a literal '"' are the fast kind for Python's regex engine.
_NUMBER = rb"(?:null|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_STRING = rb'"(?:[^"\\]|\\.)*"'
_MEASURED = re.compile(rb'"(?:' + "|".join(MEASUREMENTS).encode() + rb')"\s*:\s*' + _NUMBER)
_BOOKKEPT = re.compile(
    rb'"(?:created|envdoctor_version|description)"\s*:\s*'
    + _STRING
    + rb'|"sources"\s*:\s*\[\s*(?:'
    + _STRING
    + rb"\s*,?\s*)*\]"
)
# An escaped quote right before one of those names: text inside a string that looks like a key.
_LOOKALIKE = re.compile(rb'\\"(?:' + "|".join((*MEASUREMENTS, *BOOKKEEPING)).encode() + rb')"')


def _cut(match: re.Match[bytes]) -> bytes:
    """Drop a key and its value; a '"' after a backslash is inside a string, not a key: keep it."""
    start = match.start()
    return match.group(0) if start and match.string[start - 1] == 0x5C else b""


def facts_digest(raw: bytes) -> bytes:
    """A digest of a snapshot file's bytes without its measurements and bookkeeping: files with the
    same digest hold the same facts for every rule (formatting aside), so they share a diagnosis.

    Inside a JSON string every '"' is escaped, so a '"name":' can only be a key, unless a string
    holds an escaped look-alike; such rare files take the careful path, key by key."""
    if _LOOKALIKE.search(raw):
        text = _MEASURED.sub(_cut, _BOOKKEPT.sub(_cut, raw))
    else:
        # envdoctor writes the bookkeeping before "platform": look for it there only. Another order
        # costs sharing, never correctness (the bookkeeping then stays in the digest).
        split = raw.find(b'"platform"')
        head, body = (raw[:split], raw[split:]) if split > 0 else (raw, b"")
        text = _BOOKKEPT.sub(b"", head) + _MEASURED.sub(b"", body)
    return hashlib.blake2b(text, digest_size=16).digest()


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def digest_files(paths: Sequence[str]) -> list[bytes | None]:
    """In a helper process: each file's digest, None when it cannot be read (the caller says why)."""
    digests = []
    for path in paths:
        raw = _read(path)
        digests.append(None if raw is None else facts_digest(raw))
    return digests
