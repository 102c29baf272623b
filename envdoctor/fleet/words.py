"""How the fleet report names many nodes, ranks and rates in a sentence."""

from __future__ import annotations

from collections.abc import Sequence

NAMED = 8  # nodes named in a sentence; the JSON report lists them all


def count(number: int, noun: str, plural: str | None = None) -> str:
    return f"{number:,} {noun if number == 1 else plural or noun + 's'}"


def names(items: Sequence[str], limit: int = NAMED) -> str:
    """ "a, b, c" or "a, b, c and 9,997 more"."""
    shown = ", ".join(items[:limit])
    rest = len(items) - limit
    return f"{shown} and {rest:,} more" if rest > 0 else shown


def rank_names(ranks: Sequence[int], limit: int = NAMED) -> str:
    return names([str(r) for r in sorted(ranks)], limit)


def rate(bytes_per_second: float | None) -> str:
    if bytes_per_second is None:
        return "?"
    return f"{bytes_per_second / 1e9:.2f} GB/s"
