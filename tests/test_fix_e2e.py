"""`envdoctor fix` for real: fresh venvs, this machine's pip configuration, the real engine and pip.

A torch-less venv gets the planner's command exactly as printed (torch from the configured
find-links). In the companion tests the companion is a stand-in torchvision (a tiny wheel built
here, as in test_companion_child.py): its operator is defined in Python, so it loads beside this
machine's CPU torch. The good one is labelled `0.28.0+cpu` and lies in a find-links folder added to
the configured ones, as a machine whose find-links hold the CPU companion would have it; pip
prefers it to PyPI's unlabelled 0.28.0 (a CUDA build that does not load beside a CPU torch) the way
it does on PyTorch's CPU index. PyTorch's wheel host is unreachable here: in those tests pip is told
to give up on it at once (no retries).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.early import Job
from tests.test_companion_child import (
    _TORCH,
    EXTENSION_HEALTHY,
    HEALTHY,
    OPS,
    _record_line,
    torch_site,
    torch_version,
)

# Decided without importing torch (an import at collection cost every pytest-xdist worker seconds).
pytestmark = [pytest.mark.slow, pytest.mark.skipif(_TORCH is None, reason="needs torch")]

SLOW = os.environ.get("ENVDOCTOR_SLOW_TESTS") == "1"
# Taken at import: REPAIR runs in the background (tests/early.py) while in-process tests change
# os.environ (PATH, PYTHONPATH, HOME) and the working folder for a moment.
_ENVIRON = dict(os.environ)
_CWD = os.getcwd()
TORCH = torch_version() if _TORCH is not None else ""  # 2.13.0+cpu on this machine


def stand_in(folder: Path, version: str, torch_pin: str) -> Path:
    """A pure-Python torchvision wheel whose metadata requires `torch_pin`; its operator loads."""
    files = {
        "torchvision/__init__.py": HEALTHY.encode(),
        "torchvision/extension.py": EXTENSION_HEALTHY.encode(),
        "torchvision/version.py": f"__version__ = '{version}'\n".encode(),
        "torchvision/ops.py": OPS.encode(),
    }
    info = f"torchvision-{version}.dist-info"
    files[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: torchvision\nVersion: {version}\n"
        f"Requires-Dist: torch (=={torch_pin})\n\n"
    ).encode()
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: envdoctor-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = [_record_line(name, data) for name, data in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"torchvision-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def fresh_venv(tmp_path: Path, see_this_torch: bool) -> Path:
    """A venv with its own pip; with `see_this_torch`, this environment's site-packages (torch) on
    its path through a .pth file, so that no 190 MB wheel is installed for the test."""
    home = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(home)
    python = home / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    if see_this_torch:
        purelib = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout
        outer = torch_site()
        (Path(purelib.strip()) / "outer-environment.pth").write_text(f"{outer}\n", encoding="utf-8")
    return python


def run(
    argv: list[str], env: dict[str, str] | None = None, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    env = dict(_ENVIRON) if env is None else env
    return subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=_CWD, timeout=timeout, check=False
    )


def pip_env(tmp_path: Path, links: Path | None, quick_give_up: bool = True) -> dict[str, str]:
    env = dict(_ENVIRON)
    if links is not None:  # the configured find-links, and the companion's folder
        env["PIP_FIND_LINKS"] = " ".join(filter(None, [_ENVIRON.get("PIP_FIND_LINKS", ""), str(links)]))
    if quick_give_up:  # the unreachable host: fail at once, not after minutes of retries
        env["PIP_RETRIES"] = "0"
        env["PIP_DEFAULT_TIMEOUT"] = "3"
    env["ENVDOCTOR_CACHE_DIR"] = str(tmp_path / "cache")
    env.pop("VIRTUAL_ENV", None)
    return env


def fix(python: Path, env: dict[str, str], *options: str) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "envdoctor", "fix", "--python", str(python), *options], env=env)


def version_in(python: Path, name: str) -> str | None:
    script = (
        f"from importlib import metadata as m\ntry: print(m.version({name!r}))\nexcept Exception: print('')"
    )
    return run([str(python), "-c", script]).stdout.strip() or None


def recorded(tmp_path: Path) -> dict[str, object]:
    (state,) = (tmp_path / "cache" / "fix").glob("state-*.json")
    data: dict[str, object] = json.loads(state.read_text(encoding="utf-8"))
    return data


class Repair(NamedTuple):
    folder: Path
    python: Path
    installed: subprocess.CompletedProcess[str]
    fixed: subprocess.CompletedProcess[str] | None


def _repair() -> Repair:
    """A venv with a torchvision built for torch 2.12, then `envdoctor fix --yes` (most of a minute:
    a venv with pip, pip runs and two checks), run in the background after collection."""
    folder = Path(tempfile.mkdtemp(prefix="envdoctor-fix-e2e-"))
    python = fresh_venv(folder, see_this_torch=True)
    old = stand_in(folder / "old", "0.27.0+cpu", "2.12.0")
    installed = run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(old)])
    if installed.returncode != 0:
        return Repair(folder, python, installed, None)
    good = folder / "links"
    stand_in(good, "0.28.0+cpu", TORCH.split("+")[0])
    return Repair(folder, python, installed, fix(python, pip_env(folder, good), "--yes", "--no-smoke"))


REPAIR = Job("envdoctor fix: a torchvision built for another torch", _repair)


@pytest.fixture
def repaired() -> Iterator[Repair]:
    done = REPAIR.result()
    yield done
    shutil.rmtree(done.folder, ignore_errors=True)


@pytest.mark.early(REPAIR)
def test_a_torchvision_built_for_another_torch_is_repaired(repaired: Repair) -> None:
    tmp_path, python, installed, result = repaired
    assert installed.returncode == 0, installed.stderr
    assert result is not None
    assert result.returncode == 0, result.stdout + result.stderr
    assert "error (ED202)" in result.stdout and "Fixed." in result.stdout
    assert "upgrade torchvision 0.27.0+cpu -> " in result.stdout  # the plan named the change first
    assert version_in(python, "torchvision") == "0.28.0+cpu"
    state = recorded(tmp_path)
    family = {d["name"]: d["version"] for d in state["family"]}  # type: ignore[attr-defined]
    assert family["torchvision"] == "0.27.0+cpu" and family["torch"] == TORCH


@pytest.mark.skipif(not SLOW, reason="a second venv and check (about 40 s); the unit tests cover the restore")
def test_a_real_failing_step_leaves_the_environment_as_recorded(tmp_path: Path) -> None:
    python = fresh_venv(tmp_path, see_this_torch=True)
    old = stand_in(tmp_path / "old", "0.27.0+cpu", "2.12.0")
    assert (
        run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(old)]).returncode == 0
    )
    env = pip_env(tmp_path, None)
    env["PIP_NO_INDEX"] = "1"  # and no find-links: pip finds no torchvision at all and exits 1
    env["PIP_FIND_LINKS"] = str(tmp_path / "empty")
    (tmp_path / "empty").mkdir()

    result = fix(python, env, "--yes", "--no-smoke")

    assert result.returncode == 1, result.stdout + result.stderr
    assert "Failed: " in result.stdout and "exit status 1" in result.stdout
    assert "the environment is as before" in result.stdout or "Restored" in result.stdout
    assert version_in(python, "torchvision") == "0.27.0+cpu"
    assert recorded(tmp_path)["python"] == str(python)


@pytest.mark.skipif(not SLOW, reason="installs the 190 MB CPU wheel (minutes here); ENVDOCTOR_SLOW_TESTS=1")
def test_a_venv_without_torch_gets_it_offline_and_the_check_after_passes(tmp_path: Path) -> None:
    """The planner's command as printed, with this machine's pip configuration untouched."""
    python = fresh_venv(tmp_path, see_this_torch=False)

    result = fix(python, pip_env(tmp_path, None, quick_give_up=False), "--yes")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "error (ED001)" in result.stdout and "After:  ok" in result.stdout and "Fixed." in result.stdout
    assert f"add torch {TORCH}" in result.stdout
    assert version_in(python, "torch") == TORCH
    assert recorded(tmp_path)["family"] == []
