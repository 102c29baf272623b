"""Rewrite the README's rules table from the registry: `python -m tests.regen_readme`."""

from __future__ import annotations

import re

from envdoctor.rules import RULES
from tests.test_readme import README_PATH

START, END = "<!-- rules:start -->", "<!-- rules:end -->"


def rules_table() -> str:
    lines = ["| code | name | severity | what it catches |", "|---|---|---|---|"]
    lines += [f"| {r.code} | `{r.name}` | {r.severity.value} | {r.summary} |" for r in RULES]
    return "\n".join(lines)


def main() -> None:
    text = README_PATH.read_text(encoding="utf-8")
    block = f"{START}\n{rules_table()}\n{END}"
    text, count = re.subn(re.escape(START) + ".*?" + re.escape(END), block, text, flags=re.S)
    if count != 1:
        raise SystemExit(f"README.md needs exactly one {START} ... {END} block")
    README_PATH.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
