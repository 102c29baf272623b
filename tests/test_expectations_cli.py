"""`check` with expectations, as a new user types it: every bad value is one line and exit 2, before
any probe runs; good ones change the verdict and the exit code."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.cli_support import run_cli
from tests.fixture_support import FIXTURES
from tests.real_torch import DEFAULT_RUN, NO_SMOKE_RUN, SMALL_SMOKE_RUN, RealTorchChild

V100 = str(FIXTURES / "linux-v100-cu118-below-project-expectations.json")
HEALTHY = str(FIXTURES / "linux-rtx4090-driver535-cu121-healthy.json")

BAD = [
    (
        ["--require-cuda", "12.1"],
        "--require-cuda '12.1': a bare version is not a specifier (did you mean \">=12.1\"?)",
    ),
    (["--require-cuda", "=>12.1"], "--require-cuda '=>12.1': not a version specifier"),
    (["--require-torch", "2.4-2.6"], "--require-torch '2.4-2.6': not a version specifier"),
    (["--require-capability", "sm_80"], "--require-capability 'sm_80': not a version specifier"),
    (["--min-gpus", "two"], "--min-gpus 'two': not a whole number"),
    (["--min-gpus", "0"], "--min-gpus '0': must be at least 1"),
    (["--min-gpu-memory", "24"], "--min-gpu-memory '24': not a size with a unit"),
    (["--ignore", "ED999"], "--ignore 'ED999': ED999 is not a rule"),
    (["--only", "gpu"], "--only 'gpu': gpu is not a probe"),
    (["--only", "torch", "--skip", "nvml"], "--only and --skip cannot be combined"),
    (["--config", "missing.toml"], "--config missing.toml: no such file"),
    (["--format", "xml"], "Invalid value for '--format'"),
    (["--min-gpus"], "Option '--min-gpus' requires an argument"),
    (["--require-gpus"], "No such option: --require-gpus"),
]


@pytest.mark.parametrize(("argv", "says"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_values_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    argv: list[str],
    says: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli(capsys, monkeypatch, "check", "--from", HEALTHY, *argv)
    assert result.code == 2
    assert result.out == ""
    assert result.err.count("\n") == 1, result.err
    assert result.err.startswith("envdoctor: error: ")
    assert says in result.err


def test_a_bad_project_config_is_one_line_naming_the_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.envdoctor]\nrequire-cuda = "cu121"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = run_cli(capsys, monkeypatch, "check", "--from", HEALTHY)
    assert result.code == 2
    assert result.err == (
        "envdoctor: error: pyproject.toml [tool.envdoctor] require-cuda = 'cu121': not a version "
        'specifier; expected e.g. ">=12.1"\n'
    )
    # the command line replaces the bad value, so the check runs
    fixed = run_cli(capsys, monkeypatch, "check", "--from", HEALTHY, "--require-cuda", ">=12.1")
    assert fixed.code == 0


def test_the_project_config_is_applied(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.envdoctor]\nmin-gpus = 2\nrequire-capability = ">=8.0"\n', encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    result = run_cli(capsys, monkeypatch, "check", "--from", V100)
    assert result.code == 1
    assert "ED702" in result.out and "ED705" in result.out
    assert "[✗] Project expectations — 2 of 2 not met (min-gpus, require-capability)" in result.out
    ignored = run_cli(capsys, monkeypatch, "check", "--from", V100, "--ignore", "ED702", "--ignore", "ED705")
    assert ignored.code == 0


def test_expectations_met_exit_0_and_strict_counts_warnings(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    ok = run_cli(
        capsys, monkeypatch, "check", "--from", HEALTHY, "--require-gpu", "--min-gpu-memory", "24GiB",
        "--require-cuda", ">=12.1", "--require-torch", ">=2.3,<2.4", "--require-capability", ">=8.9",
    )  # fmt: skip
    assert ok.code == 0, ok.out
    assert "all 5 met" in ok.out
    compat = str(FIXTURES / "linux-driver550-cu126-minor-compat.json")
    assert run_cli(capsys, monkeypatch, "check", "--from", compat).code == 0
    assert run_cli(capsys, monkeypatch, "check", "--from", compat, "--strict").code == 1
    (tmp_path / "envdoctor.toml").write_text("strict = true\n", encoding="utf-8")
    assert run_cli(capsys, monkeypatch, "check", "--from", compat).code == 1
    assert run_cli(capsys, monkeypatch, "check", "--from", compat, "--no-strict").code == 0


def test_only_and_skip_select_probes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli(capsys, monkeypatch, "check", "--from", HEALTHY, "--only", "nvml,system", "-f", "json")
    assert '"name": "nvml"' in result.out and '"name": "torch"' not in result.out
    result = run_cli(capsys, monkeypatch, "check", "--from", HEALTHY, "--skip", "torch", "--require-gpu")
    assert result.code == 1
    assert "the torch probe did not run (--only/--skip)" in result.out


def _documented_commands() -> list[list[str]]:
    """Every `envdoctor check|report ...` the README, the docs and the example workflow show."""
    root = Path(__file__).resolve().parent.parent
    texts = []
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        texts += re.findall(r"```(?:bash|yaml)\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)
    texts += [p.read_text(encoding="utf-8") for p in (root / ".github" / "workflows").glob("*.yml")]
    found = []
    for text in texts:
        for line in text.splitlines():
            line = re.split(r"\s(?:\|\||>>?)\s", line)[0]  # drop "|| exit 1" and redirections
            match = re.search(r"(?:^|[\s/])envdoctor (check|report)(.*)$", line)
            if match:
                found.append([match.group(1), *shlex.split(match.group(2), comments=True)])
    return found


DOCUMENTED = _documented_commands()


def test_the_docs_show_the_ci_commands() -> None:
    shown = [" ".join(argv) for argv in DOCUMENTED]
    assert any("--format github" in c for c in shown)
    assert any("--format junit --output envdoctor.xml" in c for c in shown)
    assert "check --require-gpu" in shown  # the Slurm line
    assert any(c.startswith("report") for c in shown)


@pytest.mark.early(NO_SMOKE_RUN, SMALL_SMOKE_RUN)
@pytest.mark.parametrize("argv", DOCUMENTED, ids=[" ".join(a) for a in DOCUMENTED])
def test_documented_commands_are_valid(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    shared_torch_child: RealTorchChild,
    argv: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    # Smoke options steer a live run and are refused with --from: those commands run live here, and
    # their options must reach the torch child. The real child answers at a small size: this test
    # is about the command line; the smoke tests run the child's sizes.
    live = any(a in ("--no-smoke", "--smoke-size") for a in argv)
    shared_torch_child.max_smoke_size = 64
    result = (
        run_cli(capsys, monkeypatch, *argv) if live else run_cli(capsys, monkeypatch, *argv, "--from", V100)
    )
    assert result.code in (0, 1), result.err
    if live:
        (asked,) = shared_torch_child.asked
        if "--no-smoke" in argv:
            assert asked == ("--no-smoke",)
        if "--smoke-size" in argv:
            size = argv[argv.index("--smoke-size") + 1]
            assert asked[asked.index("--smoke-size") + 1] == size
    else:
        assert shared_torch_child.asked == []


@pytest.mark.early(DEFAULT_RUN)
def test_the_docs_python_example_raises_on_this_gpu_less_machine(
    shared_torch_child: RealTorchChild,
) -> None:
    import envdoctor

    page = Path(__file__).resolve().parent.parent / "docs" / "ci.md"
    (example,) = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)
    with pytest.raises(envdoctor.EnvironmentNotReady) as caught:
        exec(compile(example, "docs/ci.md", "exec"), {})
    assert "ED701" in [f.code for f in caught.value.findings]
    assert shared_torch_child.asked, "the example examined this machine for real"
