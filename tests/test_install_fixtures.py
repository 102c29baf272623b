"""On every fixture's machine, the planner's command installs a torch that works there: a build the
driver runs, whose arch list serves every GPU, for the machine's Python and platform."""

from __future__ import annotations

import pytest

from envdoctor.install import plan as install
from envdoctor.knowledge import assumed_release, release, releases
from envdoctor.knowledge.archs import arch_list, coverage
from envdoctor.knowledge.drivers import driver_support
from envdoctor.knowledge.retired_gpus import retired
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.rules.base import RuleContext
from envdoctor.rules.fixes import install_target
from envdoctor.snapshot import Snapshot, load
from tests.fixture_support import FIXTURES, fixture_names
from tests.install_support import text


def _jetson(snap: Snapshot) -> bool:
    hosts = [getattr(p.facts, "host", None) for p in snap.probes if isinstance(p.facts, NvmlFacts)]
    return any(host is not None and host.jetson for host in hosts)


@pytest.mark.parametrize("name", fixture_names())
def test_fixture_machine_gets_a_working_build(name: str) -> None:
    snap = load(str(FIXTURES / f"{name}.json"))
    target = install_target(RuleContext.build(snap.platform, snap.interpreter, snap.probes))
    result = install.plan(target)
    if _jetson(snap):
        pytest.skip("a Jetson's torch is NVIDIA's JetPack wheel: the jetson rules' route (ED136, ED137)")
    if target.python and not any(target.python in r.python_for(target.platform) for r in releases()):
        # A Python no torch release has wheels for: nothing to plan, and the plan says why.
        assert not result.possible and f"no wheels for Python {target.python}" in result.reason
        return
    if target.gpu_capabilities and all(retired(c) for c in target.gpu_capabilities) and not result.possible:
        # A GPU no current build or driver serves (Fermi, Kepler): the planner offers the CPU build.
        assert any("the CPU build" in s for s in result.suggestions), result.suggestions
        return
    assert result.possible, result.reason
    assert result.torch is not None and result.variant is not None
    # A torch newer than the data (the installed one, kept: never a silent downgrade) plans with
    # the newest known release's builds carried forward.
    chosen = release(result.torch) or assumed_release(result.torch)
    assert chosen is not None
    if target.python:
        assert target.python in chosen.python_for(target.platform)
    installs = [text(c) for c in result.commands if " install " in f" {text(c)} "]
    assert installs and all("torch==" in c for c in installs), "pins are printed"
    if target.driver_version is None:
        assert result.variant == "cpu"
        return
    assert result.variant.startswith("cu")
    assert driver_support(result.variant, target.driver_version, target.os).runs
    arch = arch_list(chosen, result.variant, target.platform)
    assert arch is not None
    assert all(coverage(arch, c).kind != "none" for c in target.gpu_capabilities)
