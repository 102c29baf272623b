"""`check --no-smoke / --smoke-size N` as a user types them: validation, and one real run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.fixture_support import FIXTURES


def envdoctor(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "envdoctor", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--smoke-size", "0"), "--smoke-size 0: expected a matrix size between 16 and 16384"),
        (("--smoke-size", "100000"), "--smoke-size 100000: expected a matrix size between 16 and 16384"),
        (("--smoke-size", "big"), "Invalid value for '--smoke-size'"),
        (
            ("--from", str(FIXTURES / "linux-a100-healthy.json"), "--no-smoke"),
            "--from cannot be combined with --no-smoke or --smoke-size",
        ),
    ],
)
def test_bad_smoke_options_are_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    result = envdoctor("check", *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_check_passes_the_smoke_size_to_the_real_child() -> None:
    result = envdoctor("check", "--format", "json", "--smoke-size", "64", "--python", sys.executable)
    assert result.returncode in (0, 1), result.stderr
    smoke = json.loads(result.stdout)["facts"]["torch"]["smoke"]
    assert smoke["ran"] and smoke["completed"]
    cpu = smoke["devices"][0]
    assert cpu["device"] == "cpu" and cpu["size"] == 64
    assert {s["status"] for s in cpu["steps"]} == {"ok"}


def test_rule_commands_do_not_import_torch() -> None:
    code = "import sys; import envdoctor.cli, envdoctor.rules; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "False"
    explained = envdoctor("explain", "ED301")
    assert explained.returncode == 0 and "gpu-arch-not-in-build" in explained.stdout
