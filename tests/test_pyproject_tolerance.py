"""A pyproject.toml that cannot be read or parsed does not stop `check` (issue 13 item 17): like
uv, one warning line and on; only a broken [tool.envdoctor] table itself is exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import run_cli
from tests.fixture_support import FIXTURES

V100 = str(FIXTURES / "linux-v100-cu118-below-project-expectations.json")
HEALTHY = str(FIXTURES / "linux-rtx4090-driver535-cu121-healthy.json")

TOLERATED = {
    "malformed": b'[project]\nname = "x\n',
    "bom-no-table": b"\xef\xbb\xbf[project]\nname = 'x'\n",
    "invalid-utf8": b"[project]\nname = '\xff\xfe'\n",
    "duplicate-table": b"[project]\nname='x'\n[project]\nname='y'\n",
    "malformed-elsewhere": b"[project]\nname = \n[tool.ruff]\nline-length = 1\n",
}


@pytest.mark.parametrize("name", sorted(TOLERATED))
def test_an_unparsable_pyproject_warns_and_check_goes_on(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_bytes(TOLERATED[name])
    monkeypatch.chdir(tmp_path)
    result = run_cli(capsys, monkeypatch, "check", "--from", HEALTHY)
    assert result.code == 0, result.err
    lines = result.err.splitlines()
    if name == "bom-no-table":
        assert lines == []  # a BOM is read past, as uv and pip do
    else:
        assert len(lines) == 1 and lines[0].startswith("envdoctor: warning: pyproject.toml"), lines
        assert "ignored" in lines[0]


def test_an_unreadable_pyproject_warns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.envdoctor]\nmin-gpus = 2\n", encoding="utf-8")
    from envdoctor.util import limits

    real = limits.read_bytes

    def refuse(name: str, limit: int = limits.CONFIG_FILE_LIMIT) -> bytes:
        # root reads every file: chmod 0 would not reproduce it
        if Path(name).name == "pyproject.toml":
            raise PermissionError(13, "Permission denied", name)
        return real(name, limit)

    monkeypatch.setattr(limits, "read_bytes", refuse)
    monkeypatch.chdir(tmp_path)
    result = run_cli(capsys, monkeypatch, "check", "--from", V100)
    assert result.code == 0  # min-gpus = 2 was not applied
    assert result.err == (
        "envdoctor: warning: pyproject.toml: cannot be read (Permission denied); "
        "its [tool.envdoctor] table, if any, is ignored\n"
    )


def test_a_bom_prefixed_table_is_applied(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_bytes(b"\xef\xbb\xbf[tool.envdoctor]\nmin-gpus = 2\n")
    monkeypatch.chdir(tmp_path)
    result = run_cli(capsys, monkeypatch, "check", "--from", V100)
    assert result.code == 1 and "ED702" in result.out


def test_a_good_table_in_a_file_broken_elsewhere_still_applies(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = \n\n[tool.envdoctor]\nmin-gpus = 2\n\n[tool.other]\nx = 1\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    result = run_cli(capsys, monkeypatch, "check", "--from", V100)
    assert result.code == 1 and "ED702" in result.out
    assert result.err.count("\n") == 1 and "warning: pyproject.toml" in result.err


@pytest.mark.parametrize(
    "text",
    [
        "[tool.envdoctor]\nmin-gpus = \n",
        '[project]\nname = "x"\n[tool.envdoctor]\nrequire-cuda = ">=12\n',
        "[tool.envdoctor]\nmin-gpus = 2\n[tool.envdoctor]\nmin-gpus = 3\n",
    ],
)
def test_a_malformed_envdoctor_table_is_exit_2(
    text: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = run_cli(capsys, monkeypatch, "check", "--from", HEALTHY)
    assert result.code == 2
    assert result.err.startswith("envdoctor: error: pyproject.toml [tool.envdoctor]")
    assert result.err.count("\n") == 1
