"""The torch child's companion load check and metadata scan, against real torch on this machine.

The end-to-end tests install a stand-in torchvision (a tiny wheel built here) into a fresh venv that
sees this environment's torch through a .pth file: the broken one's extension module fails to load its
library and swallows that, as torchvision's does, then registers a fake kernel for `torchvision::nms`
the way torchvision's _meta_registrations does, so real torch raises the real "operator
torchvision::nms does not exist"; the healthy one's extension module defines the operator in Python.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import subprocess
import sys
import textwrap
import venv
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from envdoctor.child import torch_probe as child
from envdoctor.host.base import ChildOutcome
from envdoctor.host.live import LiveHost
from envdoctor.probes.torch_build import LoadStatus, TorchFacts, facts_from_outcome
from tests.cli_support import run_cli

# Decided without importing torch: an import at collection cost every pytest-xdist worker seconds,
# and these tests need torch only in the children they start.
_TORCH = importlib.util.find_spec("torch")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(_TORCH is None, reason="needs torch")]


def torch_version() -> str:
    """torch.__version__ as the installed distribution states it (the same string, read without
    importing torch)."""
    return metadata.version("torch")


def torch_site() -> Path:
    """The folder torch is installed in (its site-packages)."""
    assert _TORCH is not None and _TORCH.origin is not None
    return Path(_TORCH.origin).resolve().parent.parent


EXTENSION_BROKEN = """\
import os

import torch


def _load_library(name):
    # As torchvision/extension.py does: a library that does not load is swallowed here.
    try:
        torch.ops.load_library(os.path.join(os.path.dirname(__file__), name + ".so"))
        return True
    except (ImportError, OSError):
        return False


_HAS_OPS = _load_library("_C")
"""

BROKEN = """\
import torch

from . import extension

# As torchvision/_meta_registrations.py does at import: a fake kernel for an operator its compiled
# _C library should have registered. Without that library, torch refuses.
@torch.library.register_fake("torchvision::nms")
def meta_nms(dets, scores, iou_threshold):
    return dets.new_empty(0, dtype=torch.long)

from .version import __version__
"""

EXTENSION_HEALTHY = """\
import torch

# What the compiled _C library registers, defined in Python for the stand-in.
_lib = torch.library.Library("torchvision", "DEF")
_lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")


def _nms(dets, scores, iou_threshold):
    keep = []
    for i in scores.argsort(descending=True).tolist():
        x1, y1, x2, y2 = dets[i].tolist()
        ok = True
        for j in keep:
            a1, b1, a2, b2 = dets[j].tolist()
            w = max(0.0, min(x2, a2) - max(x1, a1))
            h = max(0.0, min(y2, b2) - max(y1, b1))
            inter = w * h
            union = (x2 - x1) * (y2 - y1) + (a2 - a1) * (b2 - b1) - inter
            ok = ok and inter / union <= iou_threshold
        if ok:
            keep.append(i)
    return torch.tensor(keep, dtype=torch.long)


_lib.impl("nms", _nms, "CPU")
"""

HEALTHY = """\
from . import extension, ops
from .version import __version__
"""

OPS = """\
import torch


def nms(boxes, scores, iou_threshold):
    return torch.ops.torchvision.nms(boxes, scores, iou_threshold)
"""


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(
    folder: Path, init: str, extension: str, version: str = "0.28.0", label: str = "+cu130"
) -> Path:
    """A pure-Python wheel named torchvision: the package, its version.py and a stand-in _C.so."""
    files = {
        "torchvision/__init__.py": init.encode(),
        "torchvision/extension.py": extension.encode(),
        "torchvision/version.py": f"__version__ = '{version}{label}'\n".encode(),
        "torchvision/ops.py": OPS.encode(),
        "torchvision/_C.so": b"not a shared library: the stand-in has no compiled code\n",
    }
    info = f"torchvision-{version}.dist-info"
    files[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: torchvision\nVersion: {version}\n"
        f"Requires-Dist: torch (=={torch_version().split('+')[0]})\nRequires-Dist: numpy\n\n"
        "A stand-in for envdoctor's tests.\n"
    ).encode()
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: envdoctor-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = [_record_line(name, data) for name, data in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = folder / f"torchvision-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def venv_with(tmp_path: Path, wheel: Path) -> Path:
    """A fresh venv that sees this environment's packages (torch) through a .pth file, with only
    the stand-in installed into it, by pip as a user would."""
    home = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(home)
    python = home / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    outer = torch_site()
    (Path(purelib) / "outer-environment.pth").write_text(f"{outer}\n", encoding="utf-8")
    # This environment's pip, writing into the venv's site-packages: no pip to bootstrap there.
    install = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", purelib]
    subprocess.run([*install, str(wheel)], check=True, timeout=120)
    return python


def child_facts(python: Path) -> tuple[TorchFacts, ChildOutcome]:
    outcome = LiveHost().python_json(str(python), "torch_probe.py", ("--no-smoke",), 90.0)
    return facts_from_outcome(outcome, smoke=False), outcome


# -- end to end --------------------------------------------------------------------------------


def test_a_torchvision_without_its_operators_is_an_error_through_the_real_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    python = venv_with(tmp_path, build_wheel(tmp_path, BROKEN, EXTENSION_BROKEN))
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    run = run_cli(capsys, monkeypatch, "check", "--python", str(python), "--no-smoke", "--format", "json")
    report = json.loads(run.out)
    ed204 = [f for f in report["findings"] if f["code"] == "ED204"]
    assert run.code == 1 and len(ed204) == 1, run.out[-2000:]
    assert ed204[0]["title"] == f"torchvision 0.28.0 fails to load beside torch {torch_version()}"
    assert "operator torchvision::nms does not exist" in ed204[0]["detail"]
    assert "its own version string is 0.28.0+cu130" in ed204[0]["detail"]

    facts = report["facts"]["torch"]
    (load,) = facts["extensions"]["loads"]
    assert (load["status"], load["step"]) == ("failed", "import")
    assert load["error"]["message"] == "operator torchvision::nms does not exist"
    assert load["module_version"] == "0.28.0+cu130"  # read from version.py: the import itself failed
    assert load["cause"].startswith("_C.so: ")  # the dynamic loader's own words about the library
    stand_in = next(d for d in facts["extensions"]["distributions"] if d["name"] == "torchvision")
    assert stand_in["installer"] == "pip"
    assert stand_in["requires"] == [f"torch (=={torch_version().split('+')[0]})"]  # numpy is not watched


def test_a_torchvision_whose_operator_runs_passes(tmp_path: Path) -> None:
    label = "+" + torch_version().split("+")[1] if "+" in torch_version() else ""
    python = venv_with(tmp_path, build_wheel(tmp_path, HEALTHY, EXTENSION_HEALTHY, label=label))
    facts, outcome = child_facts(python)
    assert facts.extensions is not None, outcome.stderr_tail
    (load,) = facts.extensions.loads
    assert load.status is LoadStatus.OK, load
    assert load.module_version == f"0.28.0{label}" and load.seconds is not None
    assert load.location is not None and Path(load.location).name == "torchvision"


def test_a_hung_companion_import_is_stopped_by_the_watchdog(tmp_path: Path) -> None:
    # The real child, with torchvision's check replaced by a sleep and a 1 s limit.
    script = textwrap.dedent(
        """
        import sys, time; sys.path.insert(0, sys.argv[1]); import torch_probe as c
        c.COMPANION_TIMEOUT = 1.0
        c.companions = lambda: [{"name": "torchvision", "version": "0.28.0"}]
        c.COMPANION_CHECKS["torchvision"] = lambda torch: time.sleep(60)
        sys.exit(c.main(["--budget", "50"]))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(Path(child.__file__).parent)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    outcome = ChildOutcome(
        records=tuple(records), returncode=proc.returncode, stderr_tail=proc.stderr[-4000:]
    )
    facts = facts_from_outcome(outcome)
    assert facts.imported  # the torch record came first: the build is still reported
    assert facts.extensions is not None
    (load,) = facts.extensions.loads
    assert load.status is LoadStatus.TIMEOUT and load.error is not None
    assert "within 1 s" in load.error.message
    assert "Timeout (" in proc.stderr  # faulthandler's watchdog, not the parent, stopped it
    assert facts.smoke is None  # it never started: nothing after the hang


# -- the metadata scan -------------------------------------------------------------------------


def test_metadata_headers_stop_at_the_body_and_skip_folded_lines() -> None:
    text = (
        "Metadata-Version: 2.1\nName: xformers\nVersion: 0.0.30\nLicense: BSD\n"
        "        Requires-Dist: folded-not-a-header\nRequires-Dist: torch==2.12.0\n"
        "Requires-Dist: numpy\n\nRequires-Dist: in-the-body\n"
    )
    assert child.metadata_headers(text) == ("xformers", "0.0.30", ["torch==2.12.0", "numpy"])


def test_watched_names_follow_pep503() -> None:
    assert child.watched("Torch") and child.watched("pytorch_triton-rocm") and child.watched("triton")
    assert not child.watched("torch-scatter") and not child.watched("torchmetrics")


def test_this_environment_is_scanned_without_importing_anything() -> None:
    from importlib import metadata

    before = set(sys.modules)
    found = child.distributions()
    assert found is not None
    names = {child.normalize(entry["name"]): entry for entry in found}
    imported = {m.split(".")[0].replace("_", "-") for m in set(sys.modules) - before}
    assert not imported & {"pip", "pytest", "typer", "rich", "packaging", "numpy", "envdoctor-tests"}
    assert names["torch"]["version"] == metadata.version("torch")
    assert names["torch"].get("installer") == "pip"
    # only what matters is kept: watched names, their dependents, and the nvidia-* wheels
    assert all(child.watched(e["name"]) or e["requires"] or e["name"].startswith("nvidia-") for e in found)
