"""-v shows the facts behind each area, grouped under it in words and readable units: nested records
as indented headings (no dotted keys), sizes in GiB/MiB, times in ms/s, yes/no, no float noise."""

from __future__ import annotations

import re

import pytest

from tests.fixture_support import console_text, fixture_names, fixture_report

pytestmark = pytest.mark.slow


def test_verbose_groups_nested_facts_under_headings() -> None:
    text = console_text(fixture_report("linux-rtx4090-driver535-cu121-healthy"), verbose=True)
    lines = text.splitlines()
    heading = lines.index("    · gpus #1:")
    assert lines[heading + 1 : heading + 5] == [
        "        index: 0",
        "        name: NVIDIA GeForce RTX 4090",
        "        capability: 8, 9",
        "        memory total: 24.0 GiB",
    ]
    assert "    · arch list: sm_50, sm_60, sm_70, sm_75, sm_80, sm_86, sm_90" in lines
    assert "    · driver version: 535.104.05" in lines
    assert "    · is venv: yes" in lines and "    · is conda: no" in lines
    assert "    · memory total: 64.0 GiB" in lines
    assert "{'" not in text  # no dict reprs


def test_verbose_has_no_raw_keys_or_float_noise_in_any_fixture() -> None:
    for name in fixture_names():
        text = console_text(fixture_report(name), verbose=True)
        areas = text.split("\nFindings\n")[0].splitlines()  # the facts sit under the areas
        plain = set(console_text(fixture_report(name)).splitlines())
        facts = [line for line in areas if line not in plain]
        for line in facts:
            key = line.strip(" ·").split(":", 1)[0]
            assert not re.search(r"\w\.\w+$|\[\d+\]|_", key), (name, line)  # words, not dotted keys
            assert not re.search(r"\.\d{7,}", line), (name, line)  # no 15-digit floats
            assert not re.search(r": (True|False)$", line), (name, line)
            assert not re.search(r"bytes: \d{6,}", line), (name, line)


def test_verbose_times_read_in_ms_and_s() -> None:
    text = console_text(fixture_report("linux-a100-healthy"), verbose=True)
    assert "    · import: 1.90 s" in text.splitlines()
    assert re.search(r"^ +time per iter: [\d.]+ ms$", text, re.M)


def test_verbose_is_off_by_default() -> None:
    text = console_text(fixture_report("linux-rtx4090-driver535-cu121-healthy"))
    assert "gpus #1" not in text and "memory total" not in text
