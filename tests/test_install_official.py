"""The planner against the official commands (Get Started selector, previous-versions page).

Each case in tests/cases/official_commands.json names its source; the planner, asked for the same
build, must give an equivalent command: same packages, same pins, same index, same channels.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envdoctor.install.plan import InstallTarget, plan
from envdoctor.knowledge import release
from tests.install_support import parse_command, text

CASES_FILE = Path(__file__).resolve().parent / "cases" / "official_commands.json"
CASES: list[dict[str, Any]] = json.loads(CASES_FILE.read_text(encoding="utf-8"))["cases"]


def _target(case: dict[str, Any]) -> InstallTarget:
    wanted = case["target"]
    return InstallTarget(
        os=wanted["os"],
        machine=wanted["machine"],
        python=wanted["python"],
        torch=wanted["torch"],
        variant=wanted["cuda"],
        manager=wanted["manager"],
    )


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_planner_matches_official_command(case: dict[str, Any]) -> None:
    result = plan(_target(case))
    assert result.possible, result.reason
    wanted_manager = case["target"]["manager"]
    mine = [text(c) for c in result.commands if c.manager == wanted_manager and c.kind == "shell"]
    assert len(mine) == 1, result.commands
    official = parse_command(case["official"])
    if "pins" in case:  # the selector's commands are unpinned: they install the release they were made for
        assert all(pin is None for pin in official.packages.values())
        official = type(official)(
            official.manager,
            {name: case["pins"][name] for name in official.packages},
            official.indexes,
            official.channels,
            official.extras,
        )
    assert parse_command(mine[0]) == official, f"{mine[0]!r} vs the official {case['official']!r}"


def test_cases_are_sourced_and_broad() -> None:
    assert all(c["source"] for c in CASES)
    assert len({c["id"] for c in CASES}) == len(CASES), "case ids repeat"
    seen = {(c["target"]["os"], c["target"]["manager"]) for c in CASES}
    assert {
        ("linux", "pip"),
        ("windows", "pip"),
        ("macos", "pip"),
        ("linux", "conda"),
        ("windows", "conda"),
    } <= seen
    releases = {release(c["target"]["torch"]) for c in CASES}
    assert None not in releases
    assert len(releases) >= 20
    variants = {c["target"]["cuda"][:2] for c in CASES}
    assert {"cp", "cu", "ro"} <= variants
