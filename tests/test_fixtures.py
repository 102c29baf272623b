"""Every fixture gives its expected findings, a stable JSON report and (for some) console text."""

from __future__ import annotations

from pathlib import Path

import pytest

from envdoctor.snapshot import dumps, load
from tests.fixture_support import (
    FIXTURES,
    GOLDEN,
    RULE_GOLDEN,
    all_rule_goldens,
    console_text,
    fixture_names,
    fixture_report,
    golden_files,
    reassemble,
    stable_json,
)

NAMES = fixture_names()
# The rule golden files on disk: listing them is all collection does (every pytest-xdist worker
# collects); what each must hold is made when the first test asks (all_rule_goldens).
RULE_PATHS = sorted(RULE_GOLDEN.glob("*.json"))


@pytest.mark.parametrize("name", NAMES)
def test_fixture_matches_golden(name: str) -> None:
    for path, text in golden_files(name).items():
        assert path.exists(), f"missing golden file {path.name}: run python -m tests.regen_golden"
        assert path.read_text(encoding="utf-8") == text, f"{path.name} differs from the report"


@pytest.mark.parametrize("path", RULE_PATHS, ids=lambda p: p.stem)
def test_rule_findings_match_golden(path: Path) -> None:
    """A rule's words in every fixture it fires in: the one golden file a rewording touches."""
    expected = all_rule_goldens()
    assert path in expected, f"rule golden file no fixture triggers: rules/{path.name}"
    assert path.read_text(encoding="utf-8") == expected[path], f"rules/{path.name} differs"


def test_every_rule_a_fixture_triggers_has_its_golden_file() -> None:
    missing = sorted(path.name for path in all_rule_goldens() if not path.exists())
    assert not missing, f"missing golden files rules/{missing}: run python -m tests.regen_golden"


@pytest.mark.parametrize("name", NAMES)
def test_goldens_hold_the_whole_report(name: str) -> None:
    """The per-fixture goldens and the rule goldens together are the full report: nothing is lost
    by keeping a rule's words in its own file."""
    report = fixture_report(name)
    data, console = reassemble(name)
    assert data == stable_json(report)
    if console is not None:
        assert console == console_text(report)


@pytest.mark.parametrize("name", NAMES)
def test_fixture_is_documented(name: str) -> None:
    snap = load(str(FIXTURES / f"{name}.json"))
    assert snap.description, "a fixture says what situation it records"
    assert snap.sources, "a fixture cites where its values come from"


@pytest.mark.parametrize("name", NAMES)
def test_fixture_round_trips(name: str) -> None:
    snap = load(str(FIXTURES / f"{name}.json"))
    again = dumps(snap)
    assert load_text(again) == snap


def load_text(text: str):  # type: ignore[no-untyped-def]
    import json

    from envdoctor.snapshot import snapshot_from_data

    return snapshot_from_data(json.loads(text), "<memory>")


def test_no_stale_golden_files() -> None:
    known = set(NAMES)
    stale = [p.name for p in GOLDEN.iterdir() if p.is_file() and p.name.split(".")[0] not in known]
    assert not stale, f"golden files without a fixture: {stale}"
    stale_rules = sorted(p.name for p in RULE_GOLDEN.iterdir() if p not in all_rule_goldens())
    assert not stale_rules, f"rule golden files no fixture triggers: {stale_rules}"
