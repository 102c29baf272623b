"""The knowledge base's floor: loading the JSON tables beside this file, and the release type.

Every other knowledge module builds on this one and none of them on the package's facade, so the
overlay (the releases `envdoctor update` added) can read releases without a circle.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from packaging.version import Version

from envdoctor.util.records import record

DATA_DIR = Path(__file__).resolve().parent


@cache
def load_table(name: str) -> dict[str, Any]:
    with open(DATA_DIR / name, encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def parse_version(text: str | None) -> Version | None:
    if not text:
        return None
    try:
        return Version(text)
    except ValueError:  # InvalidVersion, or a part of 4,300+ digits
        return None


@record
class PlatformBuilds:
    """What one release ships for one platform ("linux-x86_64", "windows-x86_64", "macos-arm64", ...)."""

    variants: tuple[str, ...]  # "cpu", "cu126", "rocm6.2", ...
    pypi: str  # the variant plain `pip install torch` gives there
    python: tuple[str, ...] | None = None  # when it differs from the release's list


@record
class Release:
    torch: str
    torchvision: str | None
    torchaudio: str | None
    cuda: tuple[str, ...]  # "12.4", ...
    rocm: tuple[str, ...]
    python: tuple[str, ...]  # "3.11", ...
    pypi_linux_x86_64_default: str  # the variant plain `pip install torch` gives on Linux x86_64
    platforms: tuple[tuple[str, PlatformBuilds], ...] = ()
    assumed: bool = False  # not in the data: builds carried forward from the newest known release
    # A stand-in for "the newest 2.14.x" when no 2.14 release is known: `torch` is "2.14" and pins
    # read torch==2.14.*; no file name or exact version is ever made up for it.
    series_stand_in: bool = False

    @property
    def version(self) -> Version:
        return Version(self.torch)

    @property
    def requirement(self) -> str:
        """The version part of torch's pin: "2.5.1", or "2.14.*" for a series stand-in."""
        return f"{self.torch}.*" if self.series_stand_in else self.torch

    @property
    def series(self) -> str:
        """ "2.5" for 2.5.1."""
        return f"{self.version.major}.{self.version.minor}"

    @property
    def cuda_variants(self) -> tuple[str, ...]:
        return tuple(cuda_variant(c) for c in self.cuda)

    @property
    def variants(self) -> tuple[str, ...]:
        """Every variant of the release on any platform, "cpu" first."""
        found: dict[str, None] = {}
        for _, builds in self.platforms:
            found.update(dict.fromkeys(builds.variants))
        return tuple(found)

    def builds(self, platform: str) -> PlatformBuilds | None:
        return dict(self.platforms).get(platform)

    def platform_pythons(self) -> tuple[str, ...]:
        """Every Python version with wheels on some platform of this release."""
        found = dict.fromkeys(self.python)
        for _, builds in self.platforms:
            found.update(dict.fromkeys(builds.python or ()))
        return tuple(found)

    def python_for(self, platform: str) -> tuple[str, ...]:
        builds = self.builds(platform)
        if builds is None:
            return ()
        return builds.python if builds.python is not None else self.python


def cuda_variant(cuda: str) -> str:
    """ "cu124" from "12.4"."""
    major, _, minor = cuda.partition(".")
    return f"cu{major}{minor.split('.')[0] if minor else '0'}"


def variant_cuda(variant: str) -> str | None:
    """ "12.4" from "cu124", "11.8" from "cu118", None for cpu/rocm."""
    if not variant.startswith("cu") or not variant[2:].isdigit() or len(variant) < 4:
        return None
    digits = variant[2:]
    return f"{digits[:-1]}.{digits[-1]}"


def release_from_row(row: dict[str, Any]) -> Release:
    """A release row of releases.json (or of the overlay, which shares its shape)."""
    return Release(
        torch=row["torch"],
        torchvision=row.get("torchvision"),
        torchaudio=row.get("torchaudio"),
        cuda=tuple(row["cuda"]),
        rocm=tuple(row["rocm"]),
        python=tuple(row["python"]),
        pypi_linux_x86_64_default=row["pypi_linux_x86_64_default"],
        platforms=tuple(
            (
                name,
                PlatformBuilds(
                    variants=tuple(builds["variants"]),
                    pypi=builds["pypi"],
                    python=tuple(builds["python"]) if "python" in builds else None,
                ),
            )
            for name, builds in row.get("platforms", {}).items()
        ),
    )
