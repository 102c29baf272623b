"""The error signatures (knowledge/signatures/*.json): each compiles, matches the thread lines it
was written from, names rules that exist, cites public sources, and stays linear on hostile text."""

from __future__ import annotations

import time

import pytest

from envdoctor.knowledge import signatures as sig
from envdoctor.rules import RULES_BY_CODE

SIGNATURES = sig.signatures()


def test_there_are_signatures_and_ids_are_unique() -> None:
    ids = [s.id for s in SIGNATURES]
    assert ids and len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


@pytest.mark.parametrize("signature", SIGNATURES, ids=lambda s: s.id)
def test_a_signature_matches_its_examples_and_names_real_rules(signature: sig.Signature) -> None:
    assert signature.examples, f"{signature.id}: no example line from a thread"
    for example in signature.examples:
        hits = sig.match(example, only=(signature,))
        assert hits, f"{signature.id} does not match its example {example!r}"
    assert signature.rules and all(code in RULES_BY_CODE for code in signature.rules), signature.rules
    area_rules = {RULES_BY_CODE[c].area for c in signature.rules}
    assert signature.area in area_rules, (
        f"{signature.id} lives in {signature.area}.json, its rules in {area_rules}"
    )
    assert signature.source and all(s.startswith("https://") for s in signature.source), signature.source
    assert signature.cause[:1].islower() and not signature.cause.endswith("."), (
        "a clause: it is a finding's title"
    )
    assert signature.fix.endswith((".", ")")), "the fix is a sentence"


def _matching_time(lines: int) -> float:
    text = ("a" * 1900 + "(" * 90 + "\n") * lines + "x" * (12_500 * lines)
    started = time.perf_counter()
    sig.match(text)
    return time.perf_counter() - started


@pytest.mark.slow
@pytest.mark.exclusive
def test_matching_a_hostile_log_stays_linear() -> None:
    # Ten times the text takes about ten times as long; a pattern that backtracks over a long line
    # (or a line cap that stopped holding) grows far faster. A ratio in one run, not a time.
    small, large = _matching_time(40), _matching_time(400)
    assert large < 30 * max(small, 0.01), (small, large)


def test_matches_come_once_each_in_the_order_the_text_shows_them() -> None:
    said = "The NVIDIA driver on your system is too old (found version 11040)"
    text = f"noise\n{said}\nagain: {said}\n"
    hits = sig.match(text)
    assert [h.signature.id for h in hits] == ["driver-too-old"]
    assert hits[0].line == 2 and hits[0].group("found") == "11040"
