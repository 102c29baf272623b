"""A plan whose arch list or minimum driver is borrowed from the nearest known build says so with
the word "assumed" (issue 10, item 2): a release newer than the data, and an overlay that
`envdoctor update` wrote with a new CUDA version (its minimum driver carried forward) and a new
release's arch list (carried forward from a known build)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from envdoctor.install.plan import InstallTarget, plan
from envdoctor.knowledge import overlay

RTX_3090 = ((8, 6),)


def test_a_release_newer_than_the_data_says_its_arch_list_is_assumed() -> None:
    result = plan(
        InstallTarget(
            os="linux", python="3.12", torch="2.15.0", driver_version="580.65.06", gpu_capabilities=RTX_3090
        )
    )
    assert result.possible and result.unverified
    borrowed = [w for w in result.warnings if w.startswith("no published arch list for torch 2.15.0")]
    assert borrowed == [
        f"no published arch list for torch 2.15.0 in envdoctor's data: {result.variant}'s is assumed, "
        "carried forward from the newest known release, 2.13.0"
    ]


@pytest.fixture
def with_overlay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    row = {
        "torch": "2.16.0",
        "torchvision": "0.31.0",
        "torchaudio": None,
        "python": ["3.12"],
        "cuda": ["13.4"],
        "rocm": [],
        "pypi_linux_x86_64_default": "cu134",
        "platforms": {"linux-x86_64": {"variants": ["cpu", "cu134"], "pypi": "cu134"}},
        "assumed": True,
    }
    data = {
        "schema": overlay.SCHEMA,
        "written": "2026-11-30T00:00:00Z",
        "releases": [row],
        "arch_lists": [
            {
                "torch": "2.16.0",
                "variant": "cu134",
                "machine": "x86_64",
                "arch_list": "7.5;8.0;8.6;9.0;10.0;12.0",
                "from": "torch 2.13 cu132",
            }
        ],
        "drivers": [{"cuda": "13.4", "linux": "595.45.04", "windows": None, "from": "CUDA 13.2"}],
    }
    (tmp_path / overlay.FILE_NAME).write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path))
    overlay.forget()
    try:
        yield
    finally:
        monkeypatch.undo()
        overlay.forget()


@pytest.mark.usefixtures("with_overlay")
def test_an_overlay_build_says_its_arch_list_and_driver_minimum_are_assumed() -> None:
    target = InstallTarget(
        os="linux", python="3.12", torch="2.16.0", driver_version="600.10", gpu_capabilities=RTX_3090
    )
    result = plan(target)
    assert (result.torch, result.variant) == ("2.16.0", "cu134"), result.reason
    assert (
        "no published arch list for torch 2.16.0 in envdoctor's data: cu134's is assumed, carried "
        "forward from torch 2.13 cu132 by `envdoctor update`"
    ) in result.warnings
    assert (
        "the minimum driver for CUDA 13.4 (>= 595.45.04) is assumed: `envdoctor update` carried it "
        "forward from CUDA 13.2, as NVIDIA's table in envdoctor's data does not list it yet"
    ) in result.warnings
    # asked for the build explicitly, and without a driver: the borrowed minimum is still said
    explicit = plan(InstallTarget(os="linux", python="3.12", torch="2.16.0", variant="cu134"))
    assert any("is assumed: `envdoctor update` carried it forward" in w for w in explicit.warnings)
