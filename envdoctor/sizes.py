"""Byte sizes as users write them: "24GiB", "24 GB" (decimal), "24G" (binary, as nvidia-smi means it)."""

from __future__ import annotations

import re

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)", re.IGNORECASE)
_UNIT = {"k": 1, "m": 2, "g": 3, "t": 4}


def parse_size(text: str) -> int:
    """Bytes from "24GiB", "24 GB" (decimal), "24G" (binary, as nvidia-smi means it), "512MiB".

    Raises ValueError for anything else.
    """
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise ValueError(text)
    number, unit = float(match.group(1)), match.group(2).lower()
    if unit == "b":
        return int(number)
    base = 1000 if unit.endswith("b") and not unit.endswith("ib") else 1024
    return int(number * base ** _UNIT[unit[0]])
