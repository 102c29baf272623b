"""A token planted in every place a credential can hide never reaches any output format.

Places: pip files (URL passwords with quotes, "<", ">", "/", a tab; `password =` and `token =`
keys; secret query parameters), PIP_* variables (a BOM and a tab in the userinfo, PIP_PASSWORD),
uv.toml and pyproject.toml indexes, a .condarc (token channel, netrc-style custom channel) and
CONDA_*/UV_* variables. Outputs: console, -v, json, junit, github (and its step summary),
markdown, the snapshot, `report` in both formats and `install`; all through the real command line.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envdoctor.cli.root import app
from tests.cli_support import run_cli
from tests.real_torch import NO_SMOKE_RUN, RealTorchChild

pytestmark = pytest.mark.slow

TOKENS = {
    "pip-file-url": "pipUrlPLANTED01",
    "pip-file-password": "pipPasswordPLANTED02",
    "pip-file-token": "pipTokenPLANTED03",
    "pip-file-query": "pipQueryPLANTED04",
    "pip-var-bom": "pipBomPLANTED05",
    "pip-var-password": "pipVarPasswordPLANTED06",
    "pip-var-tab": "pipTabPLANTED07",
    "uv-toml": "uvTomlPLANTED08",
    "uv-pyproject": "uvPyprojectPLANTED09",
    "uv-var": "uvVarPLANTED10",
    "condarc-token": "condaTokenPLANTED11",
    "condarc-netrc": "condaNetrcPLANTED12",
    "conda-var": "condaVarPLANTED13",
}


def _files(home: Path, project: Path) -> dict[Path, str]:
    t = TOKENS
    return {
        home / ".config/pip/pip.conf": "[global]\n"
        f'index-url = https://alice:p"w0rd/<{t["pip-file-url"]}>@pypi.example.org/simple\n'
        f"extra-index-url = https://pkgs.example.com/simple?pass={t['pip-file-query']}&pwd=x\n"
        f"password = {t['pip-file-password']}\n"
        f"token = {t['pip-file-token']}\n",
        home / ".condarc": f"channels:\n  - https://conda.example.com/t/{t['condarc-token']}/internal\n"
        f"custom_channels:\n  corp: https://user:{t['condarc-netrc']}@conda.example.com/cloud\n",
        project / "uv.toml": '[[index]]\nname = "corp"\n'
        f'url = "https://ci:it\'s/{t["uv-toml"]}@pkgs.example.com/simple"\n',
        project / "sub/pyproject.toml": "[tool.uv]\n"
        f'extra-index-url = ["https://pkgs.example.com/simple?token={t["uv-pyproject"]}"]\n',
    }


def _variables() -> dict[str, str]:
    t = TOKENS
    return {
        "PIP_EXTRA_INDEX_URL": f"https://\ufeffbob:{t['pip-var-bom']}@pkgs.example.com/simple",
        "PIP_TRUSTED_HOST": f"https://bob:a\t{t['pip-var-tab']}@pkgs.example.com",
        "PIP_PASSWORD": t["pip-var-password"],
        "UV_INDEX": f"corp=https://u:<{t['uv-var']}>@pkgs.example.com/simple",
        "CONDA_CHANNELS": f"https://conda.example.com/t/{t['conda-var']}/team,defaults",
    }


def _assert_clean(text: str, where: str) -> None:
    leaked = [place for place, token in TOKENS.items() if token in text]
    assert not leaked, f"{where} shows the token planted in {leaked}"


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    project = home / "project"
    for path, text in _files(home, project).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for name in [n for n in os.environ if n.startswith(("PIP_", "UV_", "CONDA", "XDG_", "GITHUB_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    for name, value in _variables().items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(project)
    return tmp_path


# The live runs share one real torch child (it reads no credential: of the environment only
# CUDA_VISIBLE_DEVICES), started in the background after collection.
@pytest.mark.early(NO_SMOKE_RUN)
def test_no_planted_token_reaches_any_output(
    planted: Path, monkeypatch: pytest.MonkeyPatch, shared_torch_child: RealTorchChild
) -> None:
    runner = CliRunner()
    snapshot = planted / "snap.json"
    summary = planted / "summary.md"
    result = runner.invoke(app, ["snapshot", "--no-smoke", "-o", str(snapshot)])
    assert result.exit_code == 0, result.output
    snapshot_text = snapshot.read_text(encoding="utf-8")
    _assert_clean(snapshot_text + result.output, "snapshot")
    # The snapshot did record the planted settings (masked): the test plants where probes read.
    assert snapshot_text.count("****") >= len(TOKENS) - 1
    assert '"password"' in snapshot_text and '"token"' in snapshot_text

    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    runs = {
        "check live -v": ["check", "--no-smoke", "-v"],
        "check live json": ["check", "--no-smoke", "--format", "json"],
        "report live": ["report"],
        "install": ["install", "--os", "linux", "--python", "3.11", "--cuda", "cpu"],
        "install json": ["install", "--os", "linux", "--python", "3.11", "--cuda", "cpu", "-f", "json"],
        "report --from json": ["report", "--from", str(snapshot), "--format", "json"],
    }
    for fmt in ("console", "json", "markdown", "github", "junit"):
        for verbose in ((), ("-v",)):
            runs[f"check --from {fmt} {verbose}"] = ["check", "--from", str(snapshot), "-f", fmt, *verbose]
    for where, argv in runs.items():
        result = runner.invoke(app, argv)
        assert isinstance(result.exception, (SystemExit, type(None))), (where, result.output)
        _assert_clean(result.output, where)
        assert "****" in result.output, f"{where}: the planted credentials are not shown at all"
    _assert_clean(summary.read_text(encoding="utf-8"), "the GitHub step summary")
    output = planted / "out.txt"
    result = runner.invoke(app, ["check", "--from", str(snapshot), "-f", "markdown", "-o", str(output)])
    _assert_clean(output.read_text(encoding="utf-8"), "--output")


def test_credentials_in_settings_values_never_reach_error_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    token = "cfgPLANTED99"
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    cases = {
        "envdoctor.toml": f'require-cuda = "https://u:{token}@h.example/x"\n',
        "pyproject.toml": f'[tool.envdoctor]\nmin-gpus = "https://u:p/{token}@h"\n',
    }
    for name, text in cases.items():
        for other in cases:
            (tmp_path / other).unlink(missing_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
        result = runner.invoke(app, ["check", "--no-smoke"])
        assert result.exit_code == 2, result.output
        assert token not in result.output and "****" in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1, result.output
    for argv in (
        ["check", "--require-torch", f"https://u:{token}@h"],
        ["check", "--timeout", f"https://u:{token}@h"],
        ["install", "--mirror", f"nowhere?token={token}"],
        ["check", "--config", f"a\nb://u:{token}@h"],
    ):
        run = run_cli(capsys, monkeypatch, *argv)  # the real entry point: click's errors included
        assert run.code == 2, (argv, run.err)
        assert token not in run.err, run.err
        assert len(run.err.strip().splitlines()) == 1, run.err
