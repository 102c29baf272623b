"""The README's promises that code can check: the CI runs its test command, the rules table is true."""

from __future__ import annotations

import re
from pathlib import Path

from envdoctor.rules import RULES

ROOT = Path(__file__).resolve().parent.parent
README_PATH = ROOT / "README.md"
README = README_PATH.read_text(encoding="utf-8")


def _bash_blocks() -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", README, flags=re.S)]


def test_ci_runs_the_readme_test_command() -> None:
    blocks = _bash_blocks()
    test_command = next(b for b in blocks if "pytest" in b)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci.splitlines()


def test_readme_rules_table_lists_every_rule() -> None:
    """Regenerate with `python -m tests.regen_readme`."""
    from tests.regen_readme import rules_table

    assert rules_table() in README
    rows = re.findall(r"^\| (ED\d{3}) \| `([a-z0-9-]+)` \| (\w+) \|", README, flags=re.M)
    assert rows == [(r.code, r.name, r.severity.value) for r in RULES]
