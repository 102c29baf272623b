"""Rewrite the golden files from the fixtures: `python -m tests.regen_golden [NAME ...]`.

Writes each named fixture's goldens (all fixtures when none is named) and every rule's golden
(tests/golden/rules/EDxxx.json, made from all fixtures), and removes rule goldens no fixture
triggers any more. Review the diff before committing: a golden file is the expected output, not a
recording. A rule's rewording shows up in its own rules/EDxxx.json only.

`python -m tests.regen_golden --full DIR` writes instead the full reports the goldens hold, put back
together (DIR/json/NAME.report.json, DIR/console/NAME.console.txt), to compare with reports kept
from another revision: `diff -r OLD/json DIR/json`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.fixture_support import GOLDEN, RULE_GOLDEN, fixture_names, golden_files, reassemble, rule_goldens


def write_goldens(names: list[str]) -> None:
    RULE_GOLDEN.mkdir(parents=True, exist_ok=True)
    files: dict[Path, str] = {}
    for name in names or fixture_names():
        files.update(golden_files(name))
    rules = rule_goldens()
    files.update(rules)
    for path, text in files.items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(GOLDEN.parent.parent)}")
    for path in sorted(RULE_GOLDEN.glob("*.json")):
        if path not in rules:
            path.unlink()
            print(f"removed {path.relative_to(GOLDEN.parent.parent)}")


def write_full(out: Path) -> None:
    (out / "json").mkdir(parents=True, exist_ok=True)
    (out / "console").mkdir(parents=True, exist_ok=True)
    for name in fixture_names():
        data, console = reassemble(name)
        (out / "json" / f"{name}.report.json").write_text(data, encoding="utf-8")
        if console is not None:
            (out / "console" / f"{name}.console.txt").write_text(console, encoding="utf-8")
    print(f"wrote the full reports the goldens hold to {out}")


def main(argv: list[str]) -> None:
    if argv[:1] == ["--full"] and len(argv) == 2:
        write_full(Path(argv[1]))
    else:
        write_goldens(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
