"""A plan whose arch list or minimum driver is borrowed from the nearest known build says so with
the word "assumed" (issue 10, item 2): a release newer than the data, and an overlay that
`envdoctor update` wrote with a new CUDA version (its minimum driver carried forward) and a new
release's arch list (carried forward from a known build)."""

from __future__ import annotations

import json
import os
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


@pytest.mark.usefixtures("with_overlay")
def test_a_release_the_overlay_skips_gets_the_unverified_best_effort_plan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The overlay holds 2.16.0, not 2.15.0: `install --torch 2.15.0` is planned as it is without an
    overlay (best effort, unverified), not refused as "not in envdoctor's data yet ... known releases:
    1.12.0 to 2.16.0" (which contradicted itself)."""
    from typer.testing import CliRunner

    from envdoctor.cli.root import app

    # a pip that reads no configuration: this machine's constraint file caps torch at 2.14.1
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for name in [n for n in os.environ if n.startswith("PIP_") and n != "PIP_CONFIG_FILE"]:
        monkeypatch.delenv(name)

    done = CliRunner().invoke(
        app,
        ["install", "--torch", "2.15.0", "--os", "linux", "--python", "3.12", "--cuda", "cpu", "--offline"],
    )
    assert done.exit_code == 0, done.output
    assert "known releases" not in done.output
    assert "Unverified: this release is not in envdoctor's data" in done.output
    result = plan(InstallTarget(os="linux", python="3.12", torch="2.15.0", variant="cpu"))
    assert result.possible and result.unverified and result.torch == "2.15.0", result.reason
    assert result.warnings[0].startswith(
        "torch 2.15.0 is not in envdoctor's data, which lists newer releases (up to 2.16.0, "
    )
    assert "Unverified: its builds are assumed to be those of 2.13.0" in result.warnings[0]
