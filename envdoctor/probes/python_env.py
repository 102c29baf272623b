"""The target Python: version, implementation, and whether it is a venv or a conda env."""

from __future__ import annotations

from envdoctor.probes.base import ProbeContext, ProbeSpec
from envdoctor.target import PythonInfo

# The facts are exactly what validating the interpreter already learned; one type serves both.
PythonFacts = PythonInfo


def collect(ctx: ProbeContext) -> PythonFacts:
    # The interpreter was already run once to validate it; its answer is reused, not asked again.
    return ctx.target.info


def describe(facts: PythonFacts) -> str:
    kind = "conda env" if facts.is_conda else "venv" if facts.is_venv else "system/global Python"
    threading = ", free-threaded" if facts.free_threaded else ""
    return f"{facts.implementation} {facts.version} ({facts.bits}-bit{threading}), {kind}"


PROBE = ProbeSpec(
    name="python",
    title="Python environment",
    facts_type=PythonFacts,
    collect=collect,
    describe=describe,
    timeout=5.0,
)
