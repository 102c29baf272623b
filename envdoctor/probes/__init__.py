"""The probes, in the order their areas appear in the report.

The registry is built on first use (a module `__getattr__`, PEP 562): `envdoctor install` imports
the three probe modules it reads (mirrors, sources, nvml), and importing one of them runs this file
first, so an eager registry would make it import every probe. Adding a probe is still one line in
the import list and one in the tuple of `_registry`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from envdoctor.probes.base import CheckOptions, NotApplicable, ProbeContext, ProbeSpec

if TYPE_CHECKING:  # for mypy: the names __getattr__ answers
    PROBES: tuple[ProbeSpec[Any], ...]
    PROBES_BY_NAME: dict[str, ProbeSpec[Any]]


def _registry() -> tuple[ProbeSpec[Any], ...]:
    from envdoctor.probes import (
        environment,
        gpu_access,
        gpu_vendors,
        mirrors,
        nvml,
        python_env,
        sources,
        system,
        toolkit,
        torch_build,
        triton,
        windows,
    )

    return (
        system.PROBE,
        python_env.PROBE,
        nvml.PROBE,
        gpu_vendors.PROBE,
        torch_build.PROBE,
        triton.PROBE,
        toolkit.PROBE,
        windows.PROBE,
        mirrors.PROBE,
        sources.PROBE,
        environment.PROBE,
        gpu_access.PROBE,
    )


def __getattr__(name: str) -> Any:
    if name not in ("PROBES", "PROBES_BY_NAME"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    probes = _registry()
    # Kept as module globals: __getattr__ is asked only once per name.
    globals().update(PROBES=probes, PROBES_BY_NAME={p.name: p for p in probes})
    return globals()[name]


__all__ = ["PROBES", "PROBES_BY_NAME", "CheckOptions", "NotApplicable", "ProbeContext", "ProbeSpec"]
