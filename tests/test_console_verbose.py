"""-v shows the facts behind each area as readable key lines, nested records flattened."""

from __future__ import annotations

from tests.fixture_support import console_text, fixture_report


def test_verbose_flattens_nested_facts() -> None:
    text = console_text(fixture_report("linux-rtx4090-driver535-cu121-healthy"), verbose=True)
    assert "    · gpus[0].name: NVIDIA GeForce RTX 4090" in text
    assert "    · gpus[0].capability: 8, 9" in text
    assert "    · arch_list: sm_50, sm_60, sm_70, sm_75, sm_80, sm_86, sm_90" in text
    assert "{'" not in text  # no dict reprs
    assert "    · driver_version: 535.104.05" in text


def test_verbose_is_off_by_default() -> None:
    text = console_text(fixture_report("linux-rtx4090-driver535-cu121-healthy"))
    assert "gpus[0].name" not in text
