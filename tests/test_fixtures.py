"""Every fixture gives its expected findings, a stable JSON report and (for some) console text."""

from __future__ import annotations

import pytest

from envdoctor.rules import RULES
from envdoctor.snapshot import dumps, load
from tests.fixture_support import (
    FIXTURES,
    GOLDEN,
    fixture_names,
    fixture_report,
    golden_files,
)

NAMES = fixture_names()


@pytest.mark.parametrize("name", NAMES)
def test_fixture_matches_golden(name: str) -> None:
    for path, text in golden_files(name).items():
        assert path.exists(), f"missing golden file {path.name}: run python -m tests.regen_golden {name}"
        assert path.read_text(encoding="utf-8") == text, f"{path.name} differs from the report"


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


def test_every_rule_is_triggered_by_some_fixture() -> None:
    from tests.fleet_scenarios import triggered_codes  # fleet rules: their situations span nodes

    triggered = {f.code for name in NAMES for f in fixture_report(name).findings} | triggered_codes()
    missing = sorted(r.code for r in RULES if r.code not in triggered)
    assert not missing, f"rules no fixture triggers: {missing}"


def test_no_stale_golden_files() -> None:
    known = set(NAMES)
    stale = [p.name for p in GOLDEN.iterdir() if p.name.split(".")[0] not in known]
    assert not stale, f"golden files without a fixture: {stale}"
