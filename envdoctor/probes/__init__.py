"""The probes, in the order their areas appear in the report."""

from __future__ import annotations

from typing import Any

from envdoctor.probes import (
    environment,
    gpu_vendors,
    mirrors,
    nvml,
    python_env,
    sources,
    system,
    toolkit,
    torch_build,
    windows,
)
from envdoctor.probes.base import CheckOptions, NotApplicable, ProbeContext, ProbeSpec

PROBES: tuple[ProbeSpec[Any], ...] = (
    system.PROBE,
    python_env.PROBE,
    nvml.PROBE,
    gpu_vendors.PROBE,
    torch_build.PROBE,
    toolkit.PROBE,
    windows.PROBE,
    mirrors.PROBE,
    sources.PROBE,
    environment.PROBE,
)

# GPU access (containers, WSL, device files, NVML device state): appended, so merges stay easy.
from envdoctor.probes import gpu_access  # noqa: E402

PROBES = (*PROBES, gpu_access.PROBE)

PROBES_BY_NAME: dict[str, ProbeSpec[Any]] = {p.name: p for p in PROBES}

__all__ = ["PROBES", "PROBES_BY_NAME", "CheckOptions", "NotApplicable", "ProbeContext", "ProbeSpec"]
