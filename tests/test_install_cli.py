"""`envdoctor install` on the command line: invalid targets exit 2 with one line naming what is valid;
a plan for a described machine prints the command and the reason; JSON has the documented keys."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from envdoctor.cli.root import app

RUNNER = CliRunner()
# Another machine, fully described: nothing on this one is detected.
ELSEWHERE = ["--os", "windows", "--python", "3.10"]


def _run(*args: str):  # type: ignore[no-untyped-def]
    return RUNNER.invoke(app, ["install", *args])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--torch", "9.9"],
            "--torch 9.9: not in envdoctor's data yet (data as of 2026-08-21); "
            "known releases: 1.12.0 to 2.13.0",
        ),
        (["--cuda", "10.0", "--torch", "2.5"], "--cuda 10.0 (cu100): torch 2.5.1 has no cu100 build for"),
        (
            ["--python", "2.7"],
            "--python 2.7: no torch release in envdoctor's data has wheels for Python 2.7; "
            "expected 3.7 to 3.14",
        ),
        (
            ["--python", "3.8", "--torch", "2.5.1", "--os", "linux"],
            "torch 2.5.1 has wheels for Python 3.9-3.13",
        ),
        (["--torch", "banana"], "--torch banana: expected a version such as 2.5.1 or 2.5"),
        (["--cuda", "twelve"], "--cuda twelve: expected auto, cpu, a CUDA version"),
        (["--os", "beos"], "--os beos: expected linux, windows or macos"),
        (["--driver", "new", *ELSEWHERE], "--driver new: expected an NVIDIA driver version"),
        (["--mirror", "nowhere"], "--mirror nowhere: expected one of"),
        (["--os", "macos", "--cuda", "12.4"], "macOS has no CUDA or ROCm builds"),
        (["--os", "windows", "--cuda", "rocm6.2"], "ROCm builds exist for Linux x86_64 only"),
        (
            ["--os", "macos", "--arch", "x86_64", "--torch", "2.5"],
            "torch 2.5.1 has no wheels for macos-x86_64",
        ),
    ],
)
def test_invalid_targets_exit_2_with_one_line(args: list[str], message: str) -> None:
    result = _run(*args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("envdoctor: error: ")
    assert message in lines[0]


def test_plan_for_another_machine() -> None:
    result = _run("--torch", "2.5.1", "--cuda", "12.1", *ELSEWHERE, "--manager", "pip")
    assert result.exit_code == 0, result.output
    assert (
        "$ pip3 install torch==2.5.1 torchvision==0.20.1 torchaudio==2.5.1 --index-url https://download.pytorch.org/whl/cu121"
        in result.output
    )
    assert "torch          2.5.1  [given]" in result.output
    assert "Why: cu121 as asked: torch 2.5.1 (cu121)" in result.output  # the chain in words


def test_json_output_has_the_documented_keys() -> None:
    result = _run("--driver", "535.104.05", "--gpu", "RTX 3090", *ELSEWHERE, "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert {"torch", "torchvision", "torchaudio", "variant", "reason", "commands", "warnings"} <= set(data)
    assert data["variant"] == "cu126" and data["torch"] == "2.13.0"
    assert data["commands"] == [
        {
            "manager": "pip",
            "command": "pip3 install torch==2.13.0 torchvision==0.28.0 --index-url https://download.pytorch.org/whl/cu126",
        }
    ]
    assert data["inputs"]["NVIDIA driver"] == {"value": "535.104.05", "origin": "given"}
    assert data["inputs"]["GPUs"] == {"value": "RTX 3090 (sm_86)", "origin": "given"}


def test_nothing_fits_exits_1_and_says_what_to_change() -> None:
    result = _run("--torch", "2.6", "--gpu", "RTX 5090", "--driver", "570.86", *ELSEWHERE)
    assert result.exit_code == 1, result.output
    assert (
        "No torch build fits: torch 2.6.0: "
        "no build this driver runs includes RTX 5090 (sm_120)" in result.output
    )
    assert "Instead: use torch 2.11.0 (cu128), the newest that fits: --torch 2.11.0" in result.output


@pytest.mark.slow
def test_install_does_not_import_torch() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from envdoctor.cli.root import app; from typer.testing import CliRunner; "
        "CliRunner().invoke(app, ['install', '--os', 'windows', '--python', '3.10', '--driver', '560.94']); "
        "print(sorted(m for m in ('torch', 'pynvml', 'rich') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("args", "read"),
    [
        # Another platform: nothing of this machine is read, so no probe module is imported.
        (["--os", "windows", "--python", "3.10", "--driver", "560.94"], set()),
        # This platform, driver and GPU given: pip's configuration and sources are read, the GPUs not.
        (["--python", "3.11", "--driver", "550.54.14", "--gpu", "RTX 3090"], {"mirrors", "sources"}),
    ],
    ids=["another platform", "this platform described"],
)
@pytest.mark.slow
def test_install_imports_only_the_probe_modules_it_reads(args: list[str], read: set[str]) -> None:
    """The probe registry is built on first use, and install imports a probe where it reads with it:
    `install` must not pay for importing every probe, nor the GPU probes when --driver is given."""
    import subprocess
    import sys

    if read and sys.platform == "darwin":
        pytest.skip("macOS takes no --driver: the request is refused before anything is read")
    code = (
        "import sys; from envdoctor.cli.lean import answer; "
        f"answer(['install', *{args!r}, '--offline']); "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('envdoctor.probes.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    loaded = set(out.stdout.split())
    wanted = {f"envdoctor.probes.{name}" for name in read}
    assert wanted <= loaded, out.stdout  # the test sees what install reads
    unread = ("environment", "python_env", "system", "toolkit", "torch_build", "torch_smoke", "windows")
    unread += ("nvml", "gpu_vendors")
    assert not loaded & {f"envdoctor.probes.{name}" for name in unread}, out.stdout
    if not read:
        assert not loaded, out.stdout
