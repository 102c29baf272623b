"""Real threads are the test of a rule (issue 22): every corpus entry's machine gives the finding
and fix its thread confirmed, the corpus covers every kind the rules know, and the healthy
fixtures stay clean."""

from __future__ import annotations

import collections
import re

import pytest

from envdoctor.model.findings import Severity
from envdoctor.rules import RULES
from tests.corpus_support import BASES, CORPUS, entries, entry_paths, load_entry, report_of, score, verdict
from tests.fixture_support import fixture_names, fixture_report

PATHS = entry_paths()
MIN_SCORE = 0.95
MIN_PER_RULE = 3
# Areas whose rules judge one machine's state (the corpus's unit). Expectations judge a project's
# stated needs, fleet rules many nodes at once (tests/fleet_corpus.py), envdoctor its own probes.
SINGLE_MACHINE_AREAS = ("torch", "nvml", "gpu_vendors", "toolkit", "mirrors", "windows", "environment")


def _registry_hosts() -> re.Pattern[str]:
    """PyPI's index and file hosts, read from pip (no registry host is written in this repository)."""
    from pip._internal.models.index import PyPI

    storage = PyPI.file_storage_domain.split(".", 1)[-1]  # the file host's domain, any subdomain
    return re.compile("|".join(re.escape(h) for h in (PyPI.netloc, storage)), re.IGNORECASE)


REGISTRY_HOSTS = _registry_hosts()


@pytest.mark.parametrize("path", PATHS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_entry_is_a_documented_thread(path) -> None:  # type: ignore[no-untyped-def]
    entry = load_entry(path)
    assert entry.url.startswith("https://"), entry.url
    assert path.parent.name == entry.kind, f"{path}: kind {entry.kind!r} lives in {entry.kind}/"
    assert entry.expect.code in {r.code for r in RULES}, f"{entry.expect.code} is no rule"
    assert not REGISTRY_HOSTS.search(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", PATHS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_entry_is_diagnosed_as_its_thread_confirmed(path) -> None:  # type: ignore[no-untyped-def]
    entry = load_entry(path)
    wrong = verdict(entry, report_of(entry))
    if entry.known_miss:
        assert wrong is not None, f"{entry.name} is diagnosed right now: drop its known_miss"
        pytest.skip(f"known miss: {entry.known_miss} ({wrong})")
    assert wrong is None, f"{entry.name} ({entry.url}): {wrong}"


def test_the_corpus_is_large_and_scores_at_least_95_percent() -> None:
    result = score()
    assert result.total >= 150, result.total
    assert result.ratio >= MIN_SCORE, "\n".join(f"{n}: {w}" for n, w in result.misses)


# Rules whose kind the public record shows too rarely with a confirmed cause: three searches by
# helpers (about 250 look-ups in all, issues and Q&A pages, in several phrasings and languages)
# found fewer than three threads. Each is listed with its count and stays here only while it is
# thin: a third thread must remove it (the test says so), and no other rule may join silently.
KNOWN_THIN = {
    "ED424": 2,  # torch's cuDNN wheel lacks an engine a system cuDNN has: a new packaging fault (2026)
    "ED409": 2,  # a CUDA bin folder before torch's DLLs on Windows: Linux or unresolved threads
    "ED608": 1,  # cuDNN/cuBLAS DLLs on PATH: fixes align versions instead of PATH
    "ED611": 1,  # an older DLL copy loading first: "%1" errors (ED604's) or no confirmed cause
}


def test_every_single_machine_rule_has_three_threads() -> None:
    per_code = collections.Counter(e.expect.code for e in entries())
    thin = {
        r.code: per_code[r.code]
        for r in RULES
        if r.area in SINGLE_MACHINE_AREAS and per_code[r.code] < MIN_PER_RULE
    }
    unexpected = {code: n for code, n in thin.items() if code not in KNOWN_THIN}
    assert not unexpected, f"rules with fewer than {MIN_PER_RULE} corpus threads: {unexpected}"
    grown = sorted(code for code in KNOWN_THIN if code not in thin)
    assert not grown, f"{grown} have {MIN_PER_RULE} threads now: take them off KNOWN_THIN"
    assert {code: thin[code] for code in KNOWN_THIN} == KNOWN_THIN, "a thin rule lost a thread"


def test_threads_are_not_counted_twice() -> None:
    urls = collections.Counter(e.url for e in entries())
    assert [u for u, n in urls.items() if n > 1] == []


def test_bases_are_healthy_machines() -> None:
    from tests.corpus_support import base_data

    names = {e.base for e in entries()}
    for name in sorted(names):
        base_data(name)  # exists
    for path in sorted(BASES.glob("*.json")):
        assert path.stem in names, f"base {path.name} is used by no entry"


HEALTHY = [name for name in fixture_names() if "healthy" in name] + [p.stem for p in BASES.glob("*.json")]


@pytest.mark.parametrize("name", HEALTHY)
def test_a_healthy_machine_gains_no_warning(name: str) -> None:
    if (CORPUS / "bases" / f"{name}.json").exists():
        from envdoctor.engine import judge
        from envdoctor.settings import Settings
        from envdoctor.snapshot import load

        snap = load(str(BASES / f"{name}.json"))
        report = judge(snap.platform, snap.interpreter, snap.probes, Settings())
    else:
        report = fixture_report(name)
    loud = [f"{f.code} {f.title}" for f in report.findings if f.severity.rank >= Severity.WARNING.rank]
    assert loud == []
