"""A token planted in every place the mirrors probe reads never reaches any output.

Places: a pip file, PIP_* and UV_* and CONDA_* variables, a .condarc (channel, channel_alias,
custom_channels), uv.toml and pyproject.toml. Outputs: the console report (plain and verbose),
the JSON report, a snapshot, and a report re-made from that snapshot; once through the real probes
on recorded files, once through the command line on real files.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envdoctor.cli.root import app
from envdoctor.engine import diagnose, run_probes
from envdoctor.host.fake import CHILD_NOT_FOUND, FakeHost
from envdoctor.model.findings import Interpreter, Report
from envdoctor.probes.base import ProbeContext
from envdoctor.render.console import make_console, render_console
from envdoctor.render.json_report import render_json
from envdoctor.snapshot import Snapshot, dumps, snapshot_from_data
from envdoctor.target import PythonInfo, Target
from tests.real_torch import DEFAULT_RUN, RealTorchChild

# One token per place, so a leak names its source.
TOKENS = {
    "pip-file": "pipfilePLANTED1",
    "pip-var": "pipvarPLANTED2",
    "condarc-channel": "condachanPLANTED3",
    "condarc-alias": "condaaliasPLANTED4",
    "condarc-custom": "condacustomPLANTED5",
    "conda-var": "condavarPLANTED6",
    "uv-toml": "uvtomlPLANTED7",
    "uv-pyproject": "uvpyprojPLANTED8",
    "uv-var": "uvvarPLANTED9",
}


def config_files(home: str, project: str) -> dict[str, str]:
    t = TOKENS
    return {
        f"{home}/.config/pip/pip.conf": "[global]\n"
        f"index-url = https://__token__:{t['pip-file']}@gitlab.example.com/api/v4/simple\n",
        f"{home}/.condarc": f"channels:\n  - https://conda.example.com/t/{t['condarc-channel']}/internal\n"
        f"channel_alias: https://conda.example.com/t/{t['condarc-alias']}\n"
        f"custom_channels:\n  corp: https://user:{t['condarc-custom']}@conda.example.com/cloud\n",
        f"{project}/uv.toml": f'[[index]]\nname = "corp"\nurl = "https://ci:{t["uv-toml"]}@pkgs.example.com/simple"\n',
        f"{home}/pyproject.toml": "[tool.uv]\n"
        f'extra-index-url = ["https://pkgs.example.com/simple?token={t["uv-pyproject"]}"]\n',
    }


def variables() -> dict[str, str]:
    t = TOKENS
    return {
        "PIP_EXTRA_INDEX_URL": f"https://{t['pip-var']}@pkgs.example.com/simple",
        "CONDA_CHANNELS": f"https://conda.example.com/t/{t['conda-var']}/team,defaults",
        "UV_INDEX": f"corp=https://u:{t['uv-var']}@pkgs.example.com/simple",
    }


def assert_no_token(text: str, where: str) -> None:
    leaked = [place for place, token in TOKENS.items() if token in text]
    assert not leaked, f"{where} shows the token planted in {leaked}"
    assert "****" in text, f"{where} shows no masked value at all: the planted settings are missing"


def every_output(report: Report, snapshot_text: str) -> dict[str, str]:
    outputs = {"snapshot": snapshot_text, "json": render_json(report)}
    for verbose in (False, True):
        buffer = io.StringIO()
        render_console(report, make_console(buffer, width=120, no_color=True), verbose)
        outputs[f"console verbose={verbose}"] = buffer.getvalue()
    again = snapshot_from_data(json.loads(snapshot_text), "<snapshot>")
    remade = diagnose(again.platform, again.interpreter, again.probes, source="<snapshot>")
    outputs["json from the snapshot"] = render_json(remade)
    return outputs


@pytest.mark.slow
def test_tokens_never_leak_from_recorded_files() -> None:
    # The uv project file is in the working folder; the pyproject.toml above it is skipped by uv
    # (uv.toml found first), so it is planted a second time where uv does read it.
    # Only the configuration files matter here: everything else on this machine (torch, NVML,
    # toolkits, pip) is missing, on purpose.
    host = FakeHost(
        files=config_files("/home/user", "/home/user/project"),
        environ=variables(),
        absent={
            "/etc/os-release",
            "/usr/lib/os-release",
            "/proc/version",
            "/proc/1/cgroup",
            "/sys/bus/pci/devices",
            "/usr/local",
            *(f"/home/user/project/.venv/{p}" for p in ("conda-meta", "lib", "lib64")),
            "/home/user/project/.venv/lib/python3.11/site-packages",
        },
        programs={"nvcc": None, "nvidia-smi": None},
        children={"nvml_probe.py": CHILD_NOT_FOUND, "torch_probe.py": CHILD_NOT_FOUND},
    )
    host.files["/home/user/other/pyproject.toml"] = host.files["/home/user/pyproject.toml"]
    info = PythonInfo(
        "/home/user/project/.venv/bin/python",
        "3.11.7",
        "CPython",
        64,
        "/home/user/project/.venv",
        True,
        False,
    )
    interpreter = Interpreter(info.executable, "test")
    reports = []
    for cwd in ("/home/user/project", "/home/user/other"):
        host.working_dir = cwd
        probes = run_probes(ProbeContext(host=host, target=Target(interpreter, info)))
        report = diagnose(host.platform(), interpreter, probes)
        reports.append(report)
        assert {"ED505"} <= {f.code for f in report.findings}
        snapshot_text = dumps(Snapshot(host.platform(), interpreter, probes))
        for where, text in every_output(report, snapshot_text).items():
            assert_no_token(text, f"{where} (cwd {cwd})")
    # The facts did hold every token before redaction: the test plants where the probe reads.
    seen = repr([p.facts for r in reports for p in r.probes])
    assert all(token in seen for token in TOKENS.values())


@pytest.fixture
def planted_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    project = home / "project"
    for name, text in config_files(str(home), str(project)).items():
        path = Path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    monkeypatch.chdir(project)
    for name in [n for n in __import__("os").environ if n.startswith(("PIP_", "UV_", "CONDA", "XDG_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    for name, value in variables().items():
        monkeypatch.setenv(name, value)
    return tmp_path


@pytest.mark.early(DEFAULT_RUN)
@pytest.mark.slow
def test_tokens_never_leak_from_the_command_line(
    planted_machine: Path, shared_torch_child: RealTorchChild
) -> None:
    runner = CliRunner()
    snapshot = planted_machine / "snap.json"
    runs = {
        "check -v": ["check", "-v", "--timeout", "60"],
        "snapshot": ["snapshot", "-o", str(snapshot)],
        "check --from --format json": ["check", "--from", str(snapshot), "--format", "json"],
        "check --from -v": ["check", "--from", str(snapshot), "-v"],
    }
    for where, argv in runs.items():
        result = runner.invoke(app, argv)
        assert result.exception is None or isinstance(result.exception, SystemExit), result.output
        text = result.output + (snapshot.read_text(encoding="utf-8") if where == "snapshot" else "")
        assert_no_token(text, where)
        assert "ED505" in text or where == "snapshot"
    assert len(shared_torch_child.asked) == 2  # the live runs examined this machine
