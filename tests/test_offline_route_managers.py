"""The offline route (no reachable source has the build: the exact wheel files, where to download
them, and the command that installs the files) in each manager's own words: `uv pip install
--python <examined>` for uv, pip inside the environment for conda, pip through the examined
interpreter for pip (issue 10)."""

from __future__ import annotations

from envdoctor.install.plan import InstallTarget, Route, plan
from envdoctor.install.session import Given, run
from envdoctor.install.sources import Answer, CondaChannels, Reach, Sources
from tests.install_support import text
from tests.machine_sources import PYTHON, this_machine

ENV = "/home/user/miniconda3/envs/ml/bin/python"
CONDA = CondaChannels(channels=(("defaults", "/home/user/.condarc"),))
TORCH = "./torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
VISION = "./torchvision-0.28.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"


def _target(
    manager: str, launcher: tuple[str, ...] = (PYTHON, "-m", "pip"), **fields: object
) -> InstallTarget:
    return InstallTarget(
        os="linux",
        python="3.11",
        python_launcher=launcher,
        manager=manager,
        **fields,  # type: ignore[arg-type]
    )


def test_pip_installs_the_files_through_the_examined_interpreter() -> None:
    offline = plan(_target("pip", sources=Sources(offline=True)))
    assert offline.route is Route.OFFLINE
    assert [text(c) for c in offline.commands] == [f"{PYTHON} -m pip install {TORCH} {VISION}"]


def test_uv_installs_the_files_with_uv_into_the_examined_interpreter() -> None:
    offline = plan(_target("uv", sources=Sources(manager="uv", offline=True)))
    assert offline.route is Route.OFFLINE
    assert [(c.manager, text(c)) for c in offline.commands] == [
        ("uv", f"uv pip install --python {PYTHON} {TORCH} {VISION}")
    ]
    assert "No reachable source has torch 2.13.0 (cpu) for Python 3.11" in (offline.source or "")


def test_uv_without_an_examined_interpreter_names_none() -> None:
    offline = plan(_target("uv", ("pip3",), sources=Sources(manager="uv", offline=True)))
    assert [text(c) for c in offline.commands] == [f"uv pip install {TORCH} {VISION}"]


def test_conda_past_its_channel_installs_the_files_with_pip_inside_the_environment() -> None:
    offline = plan(
        _target("conda", (ENV, "-m", "pip"), sources=Sources(manager="conda", offline=True, conda=CONDA))
    )
    assert offline.route is Route.OFFLINE
    assert [(c.manager, text(c)) for c in offline.commands] == [
        ("pip", f"{ENV} -m pip install {TORCH} {VISION}")
    ]
    source = offline.source or ""
    assert source.startswith("With pip inside the conda environment, because PyTorch's own conda channel")
    assert "no reachable source has torch 2.13.0 (cpu)" in source
    assert "envdoctor is --offline" in source


def test_conda_offline_only_when_the_index_did_not_answer() -> None:
    """Online with PyTorch's index answering (or nothing asked), conda's pip command is as before."""
    answered = Sources(
        manager="conda", conda=CONDA, answers=(Answer("https://download.pytorch.org/", Reach.REACHABLE),)
    )
    for sources in (Sources(manager="conda", conda=CONDA), answered):
        result = plan(_target("conda", (ENV, "-m", "pip"), sources=sources))
        assert result.route is Route.INDEX
        assert text(result.commands[-1]).endswith("--index-url https://download.pytorch.org/whl/cpu")
    silent = Sources(
        manager="conda", conda=CONDA, answers=(Answer("https://download.pytorch.org/", Reach.UNREACHABLE),)
    )
    assert plan(_target("conda", (ENV, "-m", "pip"), sources=silent)).route is Route.OFFLINE


def test_conda_channel_releases_keep_the_conda_command() -> None:
    """Up to torch 2.5.1 the pytorch channel has the build: conda's own command, never a wheel file."""
    result = plan(
        _target(
            "conda",
            (ENV, "-m", "pip"),
            torch="2.5.1",
            sources=Sources(manager="conda", offline=True, conda=CONDA),
        )
    )
    assert [c.manager for c in result.commands] == ["conda"]


def test_install_manager_uv_on_a_machine_whose_pytorch_host_does_not_answer() -> None:
    """`envdoctor install --manager uv` for a Python 3.13 venv: nothing reachable has the cp313 CPU
    build, so the files, installed with uv into the examined interpreter, and PyPI's build with uv."""
    session = run(Given(manager="uv"), this_machine("3.13.1").host)
    assert session.plan.route is Route.OFFLINE
    (command,) = session.plan.commands
    wheels = "torch-2.13.0+cpu-cp313-cp313-manylinux_2_28_x86_64.whl"
    assert text(command).startswith(f"uv pip install --python {PYTHON} ./{wheels} ")
    assert not any(" -m pip " in text(c) for c in session.plan.commands)
    (default,) = session.plan.suggestions
    assert default.endswith(f"uv pip install --python {PYTHON} torch==2.13.0 torchvision==0.28.0")
