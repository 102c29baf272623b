"""Packages other than a torch build come from the planner too (issue 20 item 3): routed on the
sources the manager really uses, or no command and the reason; and no rule writes an install
command of its own."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from packaging.version import Version

from envdoctor.install.packages import CondaRequest, PackageRequest, plan_conda, plan_packages
from envdoctor.install.sources import (
    Answer,
    Constraint,
    LocalWheel,
    Reach,
    Source,
    SourceKind,
    Sources,
)
from envdoctor.install.target import InstallTarget
from envdoctor.shell import join

PY = "/home/user/project/.venv/bin/python"
LAUNCHER = (PY, "-m", "pip")
WHEELS = Source("/home/user/wheels", SourceKind.FIND_LINKS, "pip.conf", local=True)
EXTENSION_INDEX = "https://download.pytorch.org/whl/cu124"


def target(sources: Sources | None, manager: str = "pip") -> InstallTarget:
    return InstallTarget(
        os="linux", python="3.11", python_launcher=LAUNCHER, manager=manager, sources=sources
    )


def wheel(project: str, version: str) -> LocalWheel:
    return LocalWheel(
        f"{project}-{version}-cp311-cp311-manylinux_2_28_x86_64.whl",
        project,
        Version(version),
        frozenset({"cp311-cp311-manylinux_2_28_x86_64"}),
        WHEELS,
    )


def texts(plan: object) -> list[str]:
    return [join(list(c.argv), "linux") for c in plan.commands]  # type: ignore[attr-defined]


ONLINE = Sources(answers=(Answer(EXTENSION_INDEX, Reach.REACHABLE, "HTTP 200"),))
SILENT = Sources(answers=(Answer(EXTENSION_INDEX, Reach.UNREACHABLE, "timed out"),))


def test_the_official_index_when_it_answers_with_options_first_and_the_hold_last() -> None:
    request = PackageRequest(
        ("xformers==0.0.28.post3",),
        index=EXTENSION_INDEX,
        hold=("torch==2.5.1+cu124",),
        options=("--no-deps",),
    )
    plan = plan_packages(target(ONLINE), request)
    assert plan.route == "index"
    wanted = "--no-deps xformers==0.0.28.post3 torch==2.5.1+cu124"
    assert texts(plan) == [f"{PY} -m pip install {wanted} --index-url {EXTENSION_INDEX}"]


def test_a_silent_index_gives_no_command_but_how_to_carry_the_wheels_over() -> None:
    plan = plan_packages(target(SILENT), PackageRequest(("xformers==0.0.28.post3",), index=EXTENSION_INDEX))
    assert not plan.possible and plan.route == "none"
    assert plan.reason is not None and "download.pytorch.org did not answer" in plan.reason
    assert "pip download xformers==0.0.28.post3 --no-deps --index-url" in plan.reason


def test_offline_without_local_wheels_says_offline() -> None:
    plan = plan_packages(target(Sources(offline=True)), PackageRequest(("numpy<2",)))
    assert not plan.possible and plan.reason is not None and plan.reason.startswith("offline (--offline)")


def test_local_wheels_that_hold_every_pin_are_taken_without_the_remote_index() -> None:
    local = Sources(wheels=(wheel("torchvision", "0.20.1+cpu"),), offline=True, extra=(WHEELS,))
    request = PackageRequest(("torchvision==0.20.1+cpu",), index="https://download.pytorch.org/whl/cpu")
    plan = plan_packages(target(local), request)
    assert plan.route == "local" and texts(plan) == [f"{PY} -m pip install torchvision==0.20.1+cpu"]
    other = plan_packages(target(local), PackageRequest(("torchvision==0.21.0+cpu",), index=request.index))
    assert not other.possible  # another version is not there: nothing to take


def test_a_constraint_that_rejects_the_pin_is_named_with_its_line() -> None:
    limited = Sources(constraints=(Constraint("numpy", "<2", "/home/user/c.txt", 3, "remove line 3"),))
    plan = plan_packages(target(limited), PackageRequest(("numpy==2.1.0",)))
    assert not plan.possible and plan.reason is not None
    assert "/home/user/c.txt, line 3" in plan.reason and "remove line 3" in plan.reason


def test_the_configured_index_serves_a_package_whose_home_is_the_default_index() -> None:
    plan = plan_packages(target(Sources()), PackageRequest(("ninja",)))
    assert plan.route == "configured" and texts(plan) == [f"{PY} -m pip install ninja"]


def test_uv_installs_into_the_examined_interpreter() -> None:
    plan = plan_packages(target(ONLINE, manager="uv"), PackageRequest(("ninja",), find_links=EXTENSION_INDEX))
    assert texts(plan) == [f"uv pip install --python {PY} ninja --find-links {EXTENSION_INDEX}"]


def test_a_wheel_address_on_a_silent_host_is_no_command() -> None:
    url = f"{EXTENSION_INDEX}/torch-2.1.0a0-cp38-cp38-linux_aarch64.whl"
    assert not plan_packages(target(SILENT), PackageRequest((url,))).possible
    assert plan_packages(target(ONLINE), PackageRequest((url,))).route == "index"


def test_a_broken_configuration_plans_nothing() -> None:
    broken = Sources(broken="pip cannot load /home/user/.config/pip/pip.conf (line 2)")
    plan = plan_packages(target(broken), PackageRequest(("ninja",)))
    assert not plan.possible and plan.reason == broken.broken


def test_conda_offline_installs_from_its_package_cache() -> None:
    request = CondaRequest(("nomkl",), "C:\\Users\\user\\miniconda3\\envs\\ml")
    assert plan_conda(None, request).commands[0].argv == ("conda", "install", "-p", request.prefix, "nomkl")
    offline = plan_conda(Sources(offline=True), CondaRequest(("vc14_runtime>=14.40",), "/env", "conda-forge"))
    assert offline.route == "local"
    assert offline.commands[0].argv == (
        "conda", "install", "-p", "/env", "-c", "conda-forge", "--offline", "vc14_runtime>=14.40",
    )  # fmt: skip


# --- no rule writes an install command --------------------------------------------------------------

RULES = Path(__file__).resolve().parent.parent / "envdoctor" / "rules"
_INSTALL = re.compile(r"\b(pip3?|uv|conda|mamba)\b[^\n]*\binstall\b")
# A piece of an f-string that starts a command (prose quotes its commands in backticks instead).
_COMMAND = re.compile(r"(-m pip|pip3?|conda|mamba|uv pip) install\b")


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


@pytest.mark.parametrize("path", sorted(RULES.rglob("*.py")), ids=lambda p: str(p.relative_to(RULES)))
def test_no_rule_builds_an_install_command_itself(path: Path) -> None:
    """An argv with "install" in it, or a Fix whose commands spell a package install, is the
    planner's to write (install/packages.py, install/plan.py): rules describe the request."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)) and any(
            isinstance(e, ast.Constant) and e.value == "install" for e in node.elts
        ):
            found.append(f"line {node.lineno}: an argv with 'install'")
        if isinstance(node, ast.keyword) and node.arg == "commands":
            found += [f"line {node.value.lineno}: {s!r}" for s in _strings(node.value) if _INSTALL.search(s)]
        if isinstance(
            node, ast.JoinedStr
        ):  # an f-string that spells a command: f"{python} -m pip install ..."
            pieces = [
                v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)
            ]
            if any(_COMMAND.match(piece.lstrip()) for piece in pieces[:2]):
                found.append(f"line {node.lineno}: f-string {''.join(pieces)!r}")
    assert not found, found
