"""`check --no-smoke / --smoke-size N` as a user types them: validation, and one real run."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import pytest

from tests.cli_support import Run
from tests.fixture_support import FIXTURES
from tests.real_torch import SMALL_SMOKE, SMALL_SMOKE_RUN, RealTorchChild

Cli = Callable[..., Run]


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
def test_bad_smoke_options_are_one_line_and_exit_2(cli: Cli, args: tuple[str, ...], message: str) -> None:
    result = cli("check", *args)
    assert result.code == 2
    assert message in result.err
    assert len(result.err.strip().splitlines()) == 1, result.err


@pytest.mark.early(SMALL_SMOKE_RUN)
def test_check_passes_the_smoke_size_to_the_real_child(cli: Cli, shared_torch_child: RealTorchChild) -> None:
    result = cli("check", "--format", "json", "--smoke-size", "64", "--python", sys.executable)
    assert result.code in (0, 1), result.err
    assert shared_torch_child.asked == [SMALL_SMOKE]
    smoke = json.loads(result.out)["facts"]["torch"]["smoke"]
    assert smoke["ran"] and smoke["completed"]
    cpu = smoke["devices"][0]
    assert cpu["device"] == "cpu" and cpu["size"] == 64
    assert {s["status"] for s in cpu["steps"]} == {"ok"}


@pytest.mark.slow
def test_rule_commands_do_not_import_torch(cli: Cli) -> None:
    code = "import sys; import envdoctor.cli.root, envdoctor.rules; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "False"
    explained = cli("explain", "ED301")
    assert explained.code == 0 and "gpu-arch-not-in-build" in explained.out
