"""The corpus of real threads (fixtures/corpus): entries, the machine each describes, the verdict.

`python -m tests.corpus_support` prints the score and each miss.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envdoctor.engine import judge
from envdoctor.model.findings import Finding, Report
from envdoctor.settings import Settings
from envdoctor.snapshot import Snapshot, snapshot_from_data
from tests.fixture_support import FIXTURES

CORPUS = FIXTURES / "corpus"
BASES = CORPUS / "bases"
SCHEMA = "envdoctor.corpus/1"
REQUIRED = ("url", "title", "kind", "cause", "fix", "confirmed_by", "base", "expect")


@dataclass(frozen=True)
class Expect:
    code: str
    fix: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()


@dataclass(frozen=True)
class Entry:
    path: Path
    url: str
    title: str
    kind: str
    cause: str
    fix: str
    confirmed_by: str
    error: str
    base: str
    overrides: Mapping[str, Any]  # platform, interpreter, facts (per probe)
    expect: Expect
    known_miss: str | None = None
    why: bool = True  # the error text carries evidence of the cause
    # "check": the machine's facts alone must show the cause; "why": the cause shows only in the
    # error text (a runtime error no probe can see), so `envdoctor why` on the text and the facts.
    mode: str = "check"

    @property
    def name(self) -> str:
        return f"{self.path.parent.name}/{self.path.stem}"


def entry_paths() -> list[Path]:
    return sorted(p for p in CORPUS.glob("*/*.json") if p.parent != BASES)


def load_entry(path: Path) -> Entry:
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("schema") != SCHEMA:
        raise ValueError(f'{path}: expected "schema": "{SCHEMA}"')
    missing = [key for key in REQUIRED if not data.get(key)]
    if missing:
        raise ValueError(f"{path}: missing {missing}")
    expect = data["expect"]
    return Entry(
        path=path,
        url=data["url"],
        title=data["title"],
        kind=data["kind"],
        cause=data["cause"],
        fix=data["fix"],
        confirmed_by=data["confirmed_by"],
        error=data.get("error", ""),
        base=data["base"],
        overrides={k: data[k] for k in ("platform", "interpreter", "facts") if k in data},
        expect=Expect(expect["code"], tuple(expect.get("fix", ())), tuple(expect.get("absent", ()))),
        known_miss=data.get("known_miss"),
        why=bool(data.get("why", True)),
        mode=data.get("mode", "check"),
    )


@functools.cache
def entries() -> tuple[Entry, ...]:
    return tuple(load_entry(p) for p in entry_paths())


@functools.cache
def base_data(name: str) -> dict[str, Any]:
    for folder in (BASES, FIXTURES):
        path = folder / f"{name}.json"
        if path.exists():
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            return data
    raise FileNotFoundError(f"no base machine {name!r} in fixtures/ or fixtures/corpus/bases/")


def merge(into: Any, change: Any) -> Any:
    """Objects merge key by key; anything else replaces."""
    if isinstance(into, dict) and isinstance(change, dict):
        merged = dict(into)
        for key, value in change.items():
            merged[key] = merge(into.get(key), value) if key in into else copy.deepcopy(value)
        return merged
    return copy.deepcopy(change)


def machine_data(entry: Entry) -> dict[str, Any]:
    data = copy.deepcopy(base_data(entry.base))
    for key in ("platform", "interpreter"):
        if key in entry.overrides:
            data[key] = merge(data.get(key, {}), entry.overrides[key])
    by_name = {p["probe"]: p for p in data["probes"]}
    for probe, change in entry.overrides.get("facts", {}).items():
        change = dict(change)
        status = change.pop("__status", None)
        if probe not in by_name:
            by_name[probe] = {"probe": probe, "status": "ok", "seconds": 0.01, "error": None, "facts": {}}
            data["probes"].append(by_name[probe])
        result = by_name[probe]
        if status is not None:
            result["status"] = status
            if status != "ok":
                result["facts"] = None
                result["error"] = change.pop("__error", f"no answer ({status})")
        if change:
            result["facts"] = merge(result.get("facts") or {}, change)
    data["description"] = entry.title
    data["sources"] = [entry.url]
    return data


def snapshot_of(entry: Entry) -> Snapshot:
    return snapshot_from_data(machine_data(entry), entry.name)


@functools.cache
def _report(path: Path) -> Report:
    entry = load_entry(path)
    snap = snapshot_of(entry)
    return judge(snap.platform, snap.interpreter, snap.probes, Settings(), source=f"corpus/{entry.name}")


@functools.cache
def _why_report(path: Path) -> Report:
    """`envdoctor why` with the entry's error text, on the entry's machine."""
    from envdoctor.engine import diagnose
    from envdoctor.rules.evidence import gather
    from envdoctor.why import explain

    entry = load_entry(path)
    snap = snapshot_of(entry)
    report = diagnose(
        snap.platform, snap.interpreter, snap.probes, source=f"corpus/{entry.name}", pasted=entry.error
    )
    evidence = gather(snap.probes, entry.error)
    return explain(report, evidence, read_bytes=len(entry.error.encode()), truncated=False, source="corpus")


def report_of(entry: Entry) -> Report:
    """The report the entry is judged on: check's, or why's for an entry in "why" mode."""
    return _why_report(entry.path) if entry.mode == "why" else _report(entry.path)


def why_report_of(entry: Entry) -> Report:
    return _why_report(entry.path)


def why_verdict(entry: Entry) -> str | None:
    """None when `envdoctor why` puts the entry's finding first; else what it put first."""
    report = why_report_of(entry)
    first = next((f for f in report.findings if f.folded_under is None), None)
    if first is None:
        return "no finding at all"
    if first.code != entry.expect.code:
        shown = [f.code for f in report.findings if f.folded_under is None][:4]
        return f"first is {first.code}, not {entry.expect.code} (order: {shown})"
    return None


def finding_text(finding: Finding) -> str:
    parts = [finding.title, finding.detail]
    for fix in finding.fixes:
        parts += [fix.summary, *fix.commands, fix.link or ""]
    return "\n".join(parts).lower()


def verdict(entry: Entry, report: Report) -> str | None:
    """None when envdoctor diagnoses the entry right; else what went wrong, in one line."""
    found = [f for f in report.findings if f.code == entry.expect.code]
    if not found:
        shown = (
            ", ".join(f"{f.code}{'(folded)' if f.folded_under else ''}" for f in report.findings) or "none"
        )
        return f"{entry.expect.code} not found (found: {shown})"
    roots = [f for f in found if f.folded_under is None]
    if not roots:
        return f"{entry.expect.code} is folded under {found[0].folded_under}"
    text = "\n".join(finding_text(f) for f in roots)
    lacking = [marker for marker in entry.expect.fix if marker.lower() not in text]
    if lacking:
        return f"{entry.expect.code} does not say {lacking}"
    wrong = sorted({f.code for f in report.findings} & set(entry.expect.absent))
    if wrong:
        return f"{wrong} fired, which the thread rules out"
    return None


@dataclass(frozen=True)
class Score:
    right: int
    total: int
    misses: tuple[tuple[str, str], ...]  # (entry, why)

    @property
    def ratio(self) -> float:
        return self.right / self.total if self.total else 0.0


def score() -> Score:
    misses = []
    for entry in entries():
        wrong = verdict(entry, report_of(entry))
        if wrong is not None:
            misses.append((entry.name, wrong))
    return Score(len(entries()) - len(misses), len(entries()), tuple(misses))


def why_score() -> Score:
    """`envdoctor why` over the entries whose error text carries evidence of the cause."""
    judged = [e for e in entries() if e.why and e.error.strip()]
    misses = [(e.name, wrong) for e in judged if (wrong := why_verdict(e)) is not None]
    return Score(len(judged) - len(misses), len(judged), tuple(misses))


if __name__ == "__main__":
    result = score()
    print(f"corpus: {result.right}/{result.total} diagnosed right ({result.ratio:.1%})")
    for name, why in result.misses:
        print(f"  miss {name}: {why}")
    explained = why_score()
    print(f"why: {explained.right}/{explained.total} errors explained ({explained.ratio:.1%})")
    for name, why in explained.misses:
        print(f"  miss {name}: {why}")
