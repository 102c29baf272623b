"""Releases newer than envdoctor's data, without an update (issue 10, item 2): said plainly, judged
from their own facts, never silently downgraded, and planned best effort, marked unverified."""

from __future__ import annotations

from envdoctor import knowledge
from envdoctor.engine import evaluate
from envdoctor.install.plan import InstallTarget, plan
from envdoctor.install.session import Given, run
from envdoctor.model.findings import Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes.nvml import Gpu, NvmlFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.render.install_report import plan_to_data
from envdoctor.rules.base import RuleContext
from tests.install_support import text
from tests.machine_sources import this_machine
from tests.support import PYTHON

NEWEST = knowledge.newest_release().torch


def test_known_releases_is_the_one_query_and_knows_its_horizon() -> None:
    assert knowledge.known_releases()[-1].torch == NEWEST
    assert knowledge.data_horizon() == f"up to {NEWEST}, {knowledge.releases_as_of()}"
    assert knowledge.newer_than_data("2.15.0+cpu") and not knowledge.newer_than_data(NEWEST)
    assumed = knowledge.assumed_release("2.15.0")
    assert assumed is not None and assumed.assumed and assumed.torchvision is None
    assert knowledge.assumed_release("3.0.0") is None  # nothing is carried across a major version


def test_install_torch_newer_than_the_data_is_best_effort_and_unverified() -> None:
    result = plan(InstallTarget(os="linux", python="3.12", torch="2.15.0", driver_version="580.65.06"))
    assert result.possible and result.unverified and result.torch == "2.15.0"
    assert result.warnings[0].startswith(
        f"torch 2.15.0 is newer than envdoctor's data (up to {NEWEST}, {knowledge.releases_as_of()}); "
        "`envdoctor update` refreshes it. Unverified:"
    )
    # torchvision left for pip to pair (its wheels pin the torch they were built for); PyPI's build of
    # a release the data does not know is unknown, so the variant's index is named
    assert text(result.commands[-1]) == (
        "pip3 install torch==2.15.0 torchvision --index-url https://download.pytorch.org/whl/cu130"
    )
    data = plan_to_data(result, (), "linux")
    assert data["unverified"] is True


def test_cli_install_torch_2_15_0_is_not_a_usage_error() -> None:
    session = run(Given(torch="2.15.0", os="windows", python="3.12", driver="581.15"), this_machine().host)
    assert session.plan.unverified and session.plan.variant == "cu130"
    assert text(session.plan.commands[-1]).endswith(
        "install torch==2.15.0 torchvision --index-url https://download.pytorch.org/whl/cu130"
    )


def _gpu_machine_fix(installed: str) -> tuple[str, tuple[str, ...], str]:
    nvml = NvmlFacts(
        status="ok",
        driver_version="580.65.06",
        cuda_driver_version=13000,
        gpus=(Gpu(0, "RTX 4090", (8, 9), 24 * 2**30),),
    )
    torch = TorchFacts(
        installed=True, dist_version=installed, version=installed, cuda=None, cuda_available=False
    )
    probes = tuple(
        ProbeResult(n, ProbeStatus.OK, 0, f)
        for n, f in (("python", PYTHON), ("nvml", nvml), ("torch", torch))
    )
    ctx = RuleContext.build(
        PlatformInfo("Linux", "6.8", "1", "x86_64"), Interpreter("/env/bin/python", "r"), probes
    )
    finding = next(f for f in evaluate(ctx) if any("build" in fix.summary.lower() for fix in f.fixes))
    fix = next(fix for fix in finding.fixes if fix.commands)
    return fix.summary, fix.commands, finding.code


def test_a_cpu_build_newer_than_the_data_is_replaced_by_its_own_cuda_build_not_downgraded() -> None:
    _, commands, _ = _gpu_machine_fix("2.15.0+cpu")
    assert commands[-1].endswith(
        "install torch==2.15.0 torchvision --index-url https://download.pytorch.org/whl/cu130"
    )
    assert commands[0].endswith(
        "uninstall -y torch torchvision torchaudio"
    )  # 2.15.0+cpu satisfies torch==2.15.0


def test_a_downgrade_says_it_is_one_and_why() -> None:
    result = plan(
        InstallTarget(
            os="linux",
            python="3.11",
            driver_version="535.104.05",
            installed_torch="2.13.0+cu130",
            want_cuda=True,
        )
    )
    assert result.torch == "2.13.0" and result.variant == "cu126"  # same release: no downgrade said
    older = plan(InstallTarget(os="linux", python="3.8", installed_torch="2.13.0+cpu"))
    assert older.torch is not None and knowledge.parse_version(older.torch) < knowledge.parse_version(
        "2.13.0"
    )
    assert (
        f"(a downgrade from the installed 2.13.0+cpu: torch {NEWEST} has no wheels for Python 3.8)"
        in older.reason
    )


def test_check_says_an_installed_release_is_newer_than_the_data() -> None:
    from envdoctor.probes.torch_build import describe

    line = describe(TorchFacts(installed=True, version="2.15.0+cu130", cuda="13.0"))
    assert line.startswith("torch 2.15.0+cu130, CUDA 13.0")
    assert (
        f"(torch 2.15.0 is newer than envdoctor's data (up to {NEWEST}, {knowledge.releases_as_of()}); "
        "`envdoctor update` refreshes it)"
    ) in line
    summary, _, _ = _gpu_machine_fix("2.15.0+cpu")
    assert "torch 2.15.0 is newer than envdoctor's data" in summary and "Unverified" in summary


def test_an_assumed_release_takes_the_newest_known_arch_list_marked_inferred() -> None:
    from envdoctor.knowledge.archs import arch_list

    assumed = knowledge.assumed_release("2.15.0")
    assert assumed is not None
    carried = arch_list(assumed, "cu130", "linux-x86_64")
    newest = arch_list(knowledge.newest_release(), "cu130", "linux-x86_64")
    assert carried is not None and newest is not None
    assert carried.cubins == newest.cubins and carried.inferred


def test_an_installed_release_newer_than_the_data_is_judged_from_its_own_facts() -> None:
    nvml = NvmlFacts(
        status="ok",
        driver_version="535.104.05",
        cuda_driver_version=12020,
        gpus=(Gpu(0, "A10", (8, 6), 24 * 2**30),),
    )
    torch = TorchFacts(
        installed=True,
        dist_version="2.15.0+cu130",
        version="2.15.0+cu130",
        cuda="13.0",
        arch_list=("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"),
        cuda_available=False,
    )
    probes = tuple(
        ProbeResult(n, ProbeStatus.OK, 0, f)
        for n, f in (("python", PYTHON), ("nvml", nvml), ("torch", torch))
    )
    ctx = RuleContext.build(
        PlatformInfo("Linux", "6.8", "1", "x86_64"), Interpreter("/env/bin/python", "r"), probes
    )
    findings = {f.code: f for f in evaluate(ctx)}
    # its own CUDA 13.0 against the driver: too old, whatever the data knows of 2.15.0
    assert "ED101" in findings and "ED301" not in findings
    commands = [c for fix in findings["ED101"].fixes for c in fix.commands]
    # the fix keeps 2.15.0 (a build this driver runs), unverified, instead of a silent downgrade
    assert any(
        c.endswith("install torch==2.15.0 torchvision --index-url https://download.pytorch.org/whl/cu126")
        for c in commands
    )


def test_an_upgrade_of_the_installed_release_says_it_is_one_and_why() -> None:
    """ED201 replaces 2.5.1+cpu with the newest CUDA build: the fix says it moves the release up (as
    a downgrade always said), and how to keep the installed release."""
    summary, commands, code = _gpu_machine_fix("2.5.1+cpu")
    assert code == "ED201"
    assert f"install torch=={NEWEST}" in commands[-1]
    assert (
        f"(an upgrade from the installed 2.5.1+cpu to {NEWEST}, because the plan takes the newest release "
        "that fits; `envdoctor install --torch 2.5.1` keeps the installed release)"
    ) in summary
    same = plan(InstallTarget(os="linux", python="3.11", installed_torch=f"{NEWEST}+cpu", variant="cpu"))
    assert "upgrade" not in same.reason  # the same release: nothing moves
