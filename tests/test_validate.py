"""`envdoctor validate` and the pre-commit hook that runs it (issue 21 §4): a bad expectations file is
one line naming the file and the key; a good one, or a pyproject.toml without envdoctor settings,
passes; no check runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.cli_support import run_cli

ROOT = Path(__file__).resolve().parent.parent


def test_a_valid_file_passes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "envdoctor.toml").write_text('require-gpu = true\nrequire-cuda = ">=12.1"\nplugins = false\n')
    done = run_cli(capsys, monkeypatch, "validate")
    assert (done.code, done.out, done.err) == (0, "", "")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("require-gpus = true\n", "unknown key 'require-gpus'"),
        ('require-cuda = "twelve"\n', "require-cuda"),
        ('min-gpu-memory = "lots"\n', "min-gpu-memory"),
        ("require-gpu = [\n", "envdoctor.toml"),
    ],
    ids=["unknown-key", "bad-version", "bad-size", "not-toml"],
)
def test_a_bad_file_is_one_line_naming_it_and_the_key(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str, said: str
) -> None:
    (tmp_path / "envdoctor.toml").write_text(text)
    done = run_cli(capsys, monkeypatch, "validate", str(tmp_path / "envdoctor.toml"))
    assert done.code == 1 and done.out == ""
    (line,) = done.err.splitlines()
    assert line.startswith("envdoctor: error: ") and "envdoctor.toml" in line and said in line
    assert "Traceback" not in done.err


def test_pyproject_files_as_the_hook_passes_them(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    plain = tmp_path / "a" / "pyproject.toml"
    plain.parent.mkdir()
    plain.write_text('[project]\nname = "a"\n')
    bad = tmp_path / "b" / "pyproject.toml"
    bad.parent.mkdir()
    bad.write_text("[tool.envdoctor]\nstrict = 3\n")
    assert run_cli(capsys, monkeypatch, "validate", str(plain)).code == 0  # nothing of envdoctor's
    done = run_cli(capsys, monkeypatch, "validate", str(plain), str(bad), str(tmp_path / "gone.toml"))
    assert done.code == 1
    lines = done.err.splitlines()
    assert len(lines) == 2 and "strict" in lines[0] and str(bad) in lines[0]
    assert lines[1].endswith("gone.toml: no such file")


def test_nothing_to_validate_is_bad_usage(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    done = run_cli(capsys, monkeypatch, "validate")
    assert done.code == 2 and "nothing to validate" in done.err


def test_the_hook_runs_validate_on_the_files_it_reads() -> None:
    (hook,) = YAML(typ="safe").load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert hook["id"] == "envdoctor-expectations" and hook["entry"] == "envdoctor validate"
    assert hook["language"] == "python" and hook["pass_filenames"] is True
    files = re.compile(hook["files"])
    assert all(files.search(p) for p in ("envdoctor.toml", "pyproject.toml", "svc/pyproject.toml"))
    assert not any(files.search(p) for p in ("setup.cfg", "my-envdoctor.toml.bak", "README.md"))
