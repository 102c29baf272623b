"""Plans that use the sources pip will really use (issue 10, item 1): a local find-links folder or
file:// index that holds the build, PyTorch's index when it answers, never a command a configured
constraint rejects, never a PyPI mirror blindly mixed with PyTorch's index, and the offline route
when nothing reachable has the build. Real detection and probes over a FakeHost; only the machine
is scripted."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.engine import evaluate
from envdoctor.host.base import UrlStatus
from envdoctor.install.plan import InstallTarget, Route, plan
from envdoctor.install.session import Given, run
from envdoctor.install.sources import Reach, Source, SourceKind, Sources, parse_wheel
from envdoctor.model.findings import Interpreter, ProbeResult, ProbeStatus
from envdoctor.probes import mirrors, sources
from envdoctor.probes.base import CheckOptions, ProbeContext
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import RuleContext
from envdoctor.target import Target
from tests.install_support import text
from tests.machine_sources import CONSTRAINTS, LOCAL_TORCH, PYTHON, VENV, this_machine

INFO = PythonFacts(PYTHON, "3.11.9", "CPython", 64, VENV, True, False)


def _check_fix(machine_python: str = "3.11.9", **machine: object) -> tuple[str, tuple[str, ...]]:
    """ED001's fix as `check` prints it: the mirrors and sources probes run over the machine."""
    host = this_machine(machine_python, **machine).host  # type: ignore[arg-type]
    info = replace(INFO, version=machine_python)
    ctx = ProbeContext(host, Target(Interpreter(PYTHON, "given with --python"), info), CheckOptions())
    probes = (
        ProbeResult("python", ProbeStatus.OK, 0, info),
        ProbeResult("torch", ProbeStatus.OK, 0, TorchFacts(installed=False)),
        ProbeResult("mirrors", ProbeStatus.OK, 0, mirrors.collect(ctx)),
        ProbeResult("sources", ProbeStatus.OK, 0, sources.collect(ctx)),
    )
    rules = RuleContext.build(host.platform(), ctx.target.interpreter, probes)
    finding = next(f for f in evaluate(rules) if f.code == "ED001")
    fix = finding.fixes[0]
    return fix.summary, fix.commands


def test_check_fix_installs_from_the_find_links_folder_without_an_index() -> None:
    summary, commands = _check_fix()
    assert commands == (f"{PYTHON} -m pip install torch==2.13.0+cpu",)
    assert f"From the find-links folder /opt/wheels, which holds {LOCAL_TORCH}" in summary
    # torchvision's CPU build is nowhere here; PyPI's CUDA torchvision would not load with a CPU torch
    assert "torchvision 0.28.0 (cpu) is in no local source" in summary
    assert "download.pytorch.org did not answer" in summary


def test_install_agrees_with_check_and_names_the_sources() -> None:
    machine = this_machine()
    session = run(Given(), machine.host)
    assert session.plan.route is Route.LOCAL
    assert [text(c) for c in session.plan.commands] == [f"{PYTHON} -m pip install torch==2.13.0+cpu"]
    inputs = {i.name: i.value for i in session.inputs}
    assert "find-links /opt/wheels" in inputs["Sources"]
    assert f"constraint torch<=2.14.1 ({CONSTRAINTS})" in inputs["Sources"]
    # torchvision's build is not local, so whether PyTorch's index answers decided it
    assert ("url", "https://download.pytorch.org/whl/") in machine.host.calls


def test_install_asks_no_network_when_local_sources_hold_the_whole_set() -> None:
    machine = this_machine()
    machine.files("/opt/wheels", "torchvision-0.28.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
    session = run(Given(), machine.host)
    assert text(session.plan.commands[-1]).endswith("install torch==2.13.0+cpu torchvision==0.28.0+cpu")
    assert not any(call[0] == "url" for call in machine.host.calls)


def test_python_3_13_gets_the_offline_route_with_the_exact_wheel() -> None:
    summary, commands = _check_fix("3.13.1")
    wheel = "torch-2.13.0+cpu-cp313-cp313-manylinux_2_28_x86_64.whl"
    assert "No reachable source has torch 2.13.0 (cpu) for Python 3.13" in summary
    assert f"https://download.pytorch.org/whl/cpu/{wheel.replace('+', '%2B')}" in summary
    assert commands[0].endswith(
        f"-m pip install ./{wheel} ./torchvision-0.28.0+cpu-cp313-cp313-manylinux_2_28_x86_64.whl"
    )


def test_install_offline_route_also_offers_the_default_index_build() -> None:
    machine = this_machine("3.13.1")
    session = run(Given(), machine.host)
    assert session.plan.route is Route.OFFLINE
    assert any(
        "the default index answered and has torch 2.13.0's cu130 build" in s for s in session.plan.suggestions
    )


def test_pytorch_index_that_answers_is_named_with_labelled_pins() -> None:
    summary, commands = _check_fix("3.13.1", pytorch=UrlStatus(200))
    # pip also reads the find-links folder and both file:// indexes: only +cpu builds may satisfy the pins
    assert commands == (
        f"{PYTHON} -m pip install torch==2.13.0+cpu torchvision==0.28.0+cpu "
        "--index-url https://download.pytorch.org/whl/cpu",
    )
    assert "it answered" not in summary  # the usual route: the summary reads as before


def test_offline_check_plans_from_local_sources_and_asks_nothing() -> None:
    host = this_machine().host
    ctx = ProbeContext(host, Target(Interpreter(PYTHON, "r"), INFO), CheckOptions(offline=True))
    facts = sources.collect(ctx)
    assert facts.offline and all(r.status is sources.ReachStatus.NOT_CHECKED for r in facts.reach)
    assert not any(call[0] == "url" for call in host.calls)
    assert "network not asked (--offline)" in sources.describe(facts)


def _target(**fields: object) -> InstallTarget:
    return InstallTarget(os="linux", python="3.11", python_launcher=("python", "-m", "pip"), **fields)  # type: ignore[arg-type]


def _wheel(name: str, url: str = "/opt/wheels") -> object:
    return parse_wheel(name, Source(url, SourceKind.FIND_LINKS, "PIP_FIND_LINKS", True))


def test_a_constraint_is_never_violated_and_is_named_with_how_to_lift_it() -> None:
    capped = Sources(constraints=(_constraint("torch", "<=2.12.1"),))
    result = plan(_target(sources=capped))
    assert result.torch == "2.12.1"
    assert any(
        "pip's constraint torch<=2.12.1 (/etc/pip/c.txt, line 3) rules out torch 2.13.0; this is torch "
        "2.12.1, the newest release in envdoctor's data that it allows. To lift it: remove or relax line 3 "
        "of /etc/pip/c.txt" in w
        for w in result.warnings
    )
    asked = plan(_target(sources=capped, torch="2.13.0"))
    assert not asked.possible and "rejects it" in asked.reason
    assert any("torch 2.12.1 (cpu), the newest that fits: --torch 2.12.1" in s for s in asked.suggestions)
    assert any(s.startswith("lift pip's constraint torch<=2.12.1") for s in asked.suggestions)


def _constraint(project: str, specifier: str) -> object:
    from envdoctor.install.sources import Constraint

    return Constraint(project, specifier, "/etc/pip/c.txt", 3, "remove or relax line 3 of /etc/pip/c.txt")


def test_a_complete_local_set_wins_even_when_pytorch_answers() -> None:
    wheels = tuple(
        _wheel(n)  # type: ignore[misc]
        for n in (LOCAL_TORCH, "torchvision-0.28.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
    )
    local = Sources(wheels=wheels)  # type: ignore[arg-type]
    result = plan(_target(sources=local))
    assert result.route is Route.LOCAL
    assert [text(c) for c in result.commands] == [
        "python -m pip install torch==2.13.0+cpu torchvision==0.28.0+cpu"
    ]


def test_a_wheel_for_another_python_or_platform_does_not_count() -> None:
    wrong = Sources(
        wheels=(
            _wheel("torch-2.13.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl"),  # type: ignore[arg-type]
            _wheel("torch-2.13.0+cpu-cp311-cp311-win_amd64.whl"),  # type: ignore[arg-type]
        )
    )
    assert plan(_target(sources=wrong)).route is Route.INDEX


def test_a_plain_local_wheel_is_pypis_build_and_pinned_exactly_when_a_labelled_one_is_listed() -> None:
    files = ("torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl", LOCAL_TORCH)
    both = Sources(wheels=tuple(_wheel(f) for f in files), offline=True)  # type: ignore[arg-type]
    gpu = plan(_target(sources=both, driver_version="580.65.06", want_cuda=True))
    assert gpu.variant == "cu130" and gpu.route is Route.LOCAL
    # torch==2.13.0 would also accept the +cpu wheel (PEP 440): === compares the version text
    assert "torch===2.13.0" in text(gpu.commands[-1])


def test_an_unreachable_default_index_falls_back_to_pytorchs() -> None:
    answers = (
        _answer("https://download.pytorch.org/whl/", Reach.REACHABLE),
        _answer("https://pypi.example/simple", Reach.UNREACHABLE),
    )
    config = Sources(answers=answers, default_index="https://pypi.example/simple")
    result = plan(_target(sources=config, driver_version="580.65.06", want_cuda=True))
    assert result.route is Route.FALLBACK
    assert text(result.commands[-1]).endswith("--index-url https://download.pytorch.org/whl/cu130")
    assert any("pypi.example did not answer" in w for w in result.warnings)


def _answer(url: str, reach: Reach) -> object:
    from envdoctor.install.sources import Answer

    return Answer(url, reach, "scripted")


def test_no_index_is_said_when_the_command_names_one() -> None:
    config = Sources(no_index=Source("", SourceKind.INDEX, "/etc/pip.conf"))
    result = plan(_target(sources=config))
    assert any("no-index (/etc/pip.conf)" in w and "PIP_NO_INDEX=0" in w for w in result.warnings)


@pytest.mark.parametrize("same", [True, False])
def test_uv_project_that_already_routes_torch_gets_no_snippet(same: bool) -> None:
    url = "https://download.pytorch.org/whl/cpu" if same else "https://download.pytorch.org/whl/cu126"
    index = Source(url, SourceKind.EXTRA_INDEX, "pyproject.toml", name="pytorch", explicit=True)
    config = Sources(manager="uv", extra=(index,), uv_routes=(("torch", "pytorch"),))
    result = plan(_target(sources=config, manager="uv"))
    kinds = [c.kind.value for c in result.commands]
    assert ("pyproject.toml" in kinds) is not same
    if not same:
        assert any("routes torch to the index 'pytorch'" in w for w in result.warnings)


def test_old_aarch64_cpu_wheels_get_no_label_pin() -> None:
    extra = (Source("file:///opt/x/simple", SourceKind.EXTRA_INDEX, "/etc/pip.conf", True),)
    config = Sources(extra=extra)
    old = plan(_target(sources=config, machine="aarch64", torch="2.5.1"))
    assert "torch==2.5.1 " in text(old.commands[-1]) + " "
    new = plan(_target(sources=config, machine="aarch64", torch="2.13.0"))
    assert "torch==2.13.0+cpu" in text(new.commands[-1])
