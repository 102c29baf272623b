"""Error signatures: the words an error carries, the cause they point to, and the rules that
confirm that cause from a machine's facts.

The data lives in knowledge/signatures/<area>.json (or <area>-<topic>.json), each record:

    {"id": "driver-too-old",                 a stable kebab-case name
     "pattern": "NVIDIA driver on your system is too old \\(found version (?P<found>\\d+)\\)",
     "cause": "the NVIDIA driver is older than the CUDA version torch was built with",
     "rules": ["ED101"],                     the rules whose findings confirm it from facts
     "checks": ["nvidia-smi"],               commands that tell this cause apart by hand
     "fix": "what to do when only the text shows it",
     "examples": ["... found version 11040 ..."],   verbatim lines from threads the pattern must match
     "source": ["https://github.com/..."]}   public threads or docs where the text appears

`envdoctor why` matches a pasted error against every signature; `check` matches the errors it
captures itself (the import, the smoke test, companion and extension loads) against the same
ones. Patterns are Python regular expressions, case-insensitive, matched line by line against at
most MAX_LINE characters of each line, so that a hostile log costs time linear in its size.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import cache

from envdoctor.knowledge.provenance import references
from envdoctor.knowledge.tables import DATA_DIR
from envdoctor.util.records import record

FOLDER = DATA_DIR / "signatures"
MAX_LINE = 2000  # characters of one line a pattern sees
MAX_MATCHES = 12


class SignatureError(ValueError):
    """A signature file that does not hold what this module expects (a bug in envdoctor's data)."""


@record
class Signature:
    id: str
    area: str  # the file it came from: the area of the rules it names
    pattern: re.Pattern[str]
    cause: str
    rules: tuple[str, ...]
    checks: tuple[str, ...]
    fix: str
    source: tuple[str, ...]
    examples: tuple[str, ...] = ()


@record
class SignatureMatch:
    signature: Signature
    line: int  # 1-based line of the text where it matched
    excerpt: str  # the matched line, trimmed
    groups: tuple[tuple[str, str], ...]  # the pattern's named groups that matched
    source: str = "pasted"  # which text: "pasted", or the fact it was captured in ("torch.import_error")

    def group(self, name: str) -> str | None:
        return dict(self.groups).get(name)


@record
class ErrorText:
    """One error text: pasted by the user (`envdoctor why`), or captured by a probe."""

    source: str  # "pasted", or the fact that holds it: "torch.import_error.message"
    text: str


@record
class ErrorEvidence:
    """Every error text at hand and the signatures they carry: an input rules read like a fact
    (always present; empty when nothing failed and nothing was pasted)."""

    texts: tuple[ErrorText, ...] = ()
    matches: tuple[SignatureMatch, ...] = ()

    @property
    def pasted(self) -> bool:
        return any(t.source == PASTED for t in self.texts)

    def matching(self, code: str) -> tuple[SignatureMatch, ...]:
        """The matches whose signature names rule `code` as the one that confirms it."""
        return confirming(self.matches, code)

    def get(self, ident: str) -> SignatureMatch | None:
        return next((m for m in self.matches if m.signature.id == ident), None)


PASTED = "pasted"


def evidence(texts: Iterable[ErrorText]) -> ErrorEvidence:
    """The evidence of `texts`: each signature once, from the first text that carries it
    (the pasted text first)."""
    ordered = sorted(texts, key=lambda t: t.source != PASTED)
    found: dict[str, SignatureMatch] = {}
    for text in ordered:
        for hit in match(text.text):
            if hit.signature.id not in found:
                found[hit.signature.id] = SignatureMatch(
                    hit.signature, hit.line, hit.excerpt, hit.groups, text.source
                )
    return ErrorEvidence(tuple(ordered), tuple(found.values()))


def _record(area: str, row: object, where: str) -> Signature:
    if not isinstance(row, dict):
        raise SignatureError(f"{where}: expected an object")
    try:
        ident, pattern, cause, fix = (str(row[k]) for k in ("id", "pattern", "cause", "fix"))
    except KeyError as missing:
        raise SignatureError(f"{where}: no {missing}") from None
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise SignatureError(f"{where} ({ident}): the pattern does not compile: {exc}") from None
    return Signature(
        id=ident,
        area=area,
        pattern=compiled,
        cause=cause,
        rules=tuple(str(r) for r in row.get("rules", ())),
        checks=tuple(str(c) for c in row.get("checks", ())),
        fix=fix,
        source=references(row.get("source")),
        examples=tuple(str(e) for e in row.get("examples", ())),
    )


@cache
def signatures() -> tuple[Signature, ...]:
    """Every signature of every area file, in file-name then file order."""
    found: list[Signature] = []
    for path in sorted(FOLDER.glob("*.json")):
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        rows = data.get("signatures") if isinstance(data, dict) else None
        if not isinstance(rows, list):
            raise SignatureError(f"{path.name}: expected an object with a list of signatures")
        area = path.stem.split("-", 1)[0]  # nvml.json, or a topic of one area: nvml-containers.json
        found += [_record(area, row, f"{path.name}[{i}]") for i, row in enumerate(rows)]
    return tuple(found)


def by_id(ident: str) -> Signature | None:
    return next((s for s in signatures() if s.id == ident), None)


def match(text: str, only: Iterable[Signature] | None = None) -> tuple[SignatureMatch, ...]:
    """The signatures `text` carries, each once (its first matching line), in the order they
    first appear in the text; at most MAX_MATCHES."""
    pool = tuple(only) if only is not None else signatures()
    if not text or not pool:
        return ()
    found: dict[str, SignatureMatch] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw[:MAX_LINE]
        if not line.strip():
            continue
        for signature in pool:
            if signature.id in found:
                continue
            hit = signature.pattern.search(line)
            if hit is None:
                continue
            groups = tuple((k, v) for k, v in hit.groupdict().items() if v is not None)
            found[signature.id] = SignatureMatch(signature, number, line.strip()[:300], groups)
            if len(found) >= MAX_MATCHES:
                return tuple(found.values())
    return tuple(found.values())


def confirming(matches: Iterable[SignatureMatch], code: str) -> tuple[SignatureMatch, ...]:
    """The matches whose signature names rule `code` as the one that confirms it."""
    return tuple(m for m in matches if code in m.signature.rules)
