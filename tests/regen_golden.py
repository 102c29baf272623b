"""Rewrite the golden files from the fixtures: `python -m tests.regen_golden [NAME ...]`.

Review the diff before committing: a golden file is the expected output, not a recording.
"""

from __future__ import annotations

import sys

from tests.fixture_support import GOLDEN, fixture_names, golden_files


def main(names: list[str]) -> None:
    GOLDEN.mkdir(exist_ok=True)
    for name in names or fixture_names():
        for path, text in golden_files(name).items():
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(GOLDEN.parent.parent)}")


if __name__ == "__main__":
    main(sys.argv[1:])
