"""Byte sizes as users write them: "24GiB", "24 GB" (decimal), "24G" (binary, as nvidia-smi means it)."""

from __future__ import annotations

import re

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)", re.IGNORECASE | re.ASCII)
_UNIT = {"k": 1, "m": 2, "g": 3, "t": 4}
_MAX_SIZE = 2**63  # bytes: 8 EiB


def parse_size(text: str) -> int:
    """Bytes from "24GiB", "24 GB" (decimal), "24G" (binary, as nvidia-smi means it), "512MiB".

    Raises ValueError for anything else, and for sizes past 8 EiB (the message then ends in
    "too large").
    """
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise ValueError(text)
    number, unit = float(match.group(1)), match.group(2).lower()
    base = 1000 if unit.endswith("b") and not unit.endswith("ib") else 1024
    size = number * (1 if unit == "b" else base ** _UNIT[unit[0]])
    if not size < _MAX_SIZE:  # 309 nines are infinity as a float
        raise ValueError(f"{text}: too large")
    return int(size)
