"""Every command and format prints to a stdout that is not UTF-8 (issue 13 item 14): cp1252 (what
`envdoctor report > report.md` writes on Windows), latin-1 and ASCII. Glyphs get ASCII stand-ins;
JSON and XML keep their data exactly, escaped in their own syntax.

Every command x every encoding runs in this process through the console entry point, its stdout a
pipe-like stream of that encoding (tests/cli_support.run_entry). A few real processes, one per
writer (rich's console, the JSON and XML escapes, click's help), check that a process started with
PYTHONIOENCODING gets the stream the in-process runs stand in for."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from envdoctor.util.stream_text import GLYPHS, for_stream, protect
from tests.cli_support import EncodedRun, run_entry
from tests.fixture_support import FIXTURES

pytestmark = pytest.mark.slow

NO_DRIVER = str(FIXTURES / "linux-gpu-present-no-driver.json")
WINDOWS = str(FIXTURES / "win11-rtx4070-pypi-cpu-torch.json")
ENCODINGS = ("cp1252", "latin-1", "ascii")
COMMANDS = {
    "check": ["check", "--from", NO_DRIVER, "-v"],
    "check-windows": ["check", "--from", WINDOWS],
    "markdown": ["check", "--from", NO_DRIVER, "-f", "markdown"],
    "json": ["check", "--from", NO_DRIVER, "-f", "json"],
    "github": ["check", "--from", NO_DRIVER, "-f", "github"],
    "junit": ["check", "--from", NO_DRIVER, "-f", "junit"],
    "report": ["report", "--from", NO_DRIVER],
    "rules": ["rules"],
    "rules-json": ["rules", "-f", "json"],
    "explain": ["explain", "ED101"],
    "install": ["install", "--gpu", "RTX 4090", "--driver", "560.94"],
    "help": ["check", "--help"],
}
# One real process per way output is written: rich's console with stand-ins (check -v), JSON and
# XML escapes (json, junit), click's help; each in a different encoding.
IN_A_PROCESS = (("check", "ascii"), ("json", "latin-1"), ("junit", "cp1252"), ("help", "ascii"))


def _env(encoding: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CI", "GITHUB"))}
    env.update(PYTHONIOENCODING=encoding, COLUMNS="100", NO_COLOR="1")
    return env


def _in_process(monkeypatch: pytest.MonkeyPatch, name: str, encoding: str) -> EncodedRun:
    with monkeypatch.context() as inner:
        for key in [k for k in os.environ if k.startswith(("CI", "GITHUB"))]:
            inner.delenv(key)
        inner.setenv("COLUMNS", "100")
        inner.setenv("NO_COLOR", "1")
        return run_entry(inner, *COMMANDS[name], encoding=encoding)


# The console entry point under the program name the in-process runs have (help's usage line).
ENTRY_POINT = "import sys; sys.argv[0] = 'envdoctor'; from envdoctor.cli.launch import main; main()"


def _in_a_process(name: str, encoding: str) -> EncodedRun:
    done = subprocess.run(
        [sys.executable, "-c", ENTRY_POINT, *COMMANDS[name]],
        capture_output=True,
        env=_env(encoding),
        timeout=60,
        check=False,
    )
    return EncodedRun(done.returncode, done.stdout, done.stderr)


def _assert_prints(name: str, encoding: str, result: EncodedRun, utf8: EncodedRun) -> None:
    assert b"Traceback" not in result.err and b"UnicodeEncodeError" not in result.err, result.err
    assert result.code in (0, 1), result.err
    assert result.code == utf8.code
    text = result.out.decode(encoding)  # what the stream holds is valid in its own encoding
    assert text.strip()
    if name in ("json", "rules-json"):
        assert json.loads(text) == json.loads(utf8.out.decode("utf-8"))  # escaped, not replaced
    if name == "junit":
        ET.fromstring(result.out)
    if encoding == "ascii":
        assert "?" not in text.replace("?)", "").replace("? ", "") or name in ("json", "rules-json", "junit")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_prints_under_a_narrow_encoding(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    utf8 = _in_process(monkeypatch, name, "utf-8")
    assert utf8.code in (0, 1), utf8.err
    for encoding in ENCODINGS:
        _assert_prints(name, encoding, _in_process(monkeypatch, name, encoding), utf8)


@pytest.mark.parametrize(("name", "encoding"), IN_A_PROCESS)
def test_a_real_process_prints_under_a_narrow_encoding(
    name: str, encoding: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = _in_a_process(name, encoding)
    _assert_prints(name, encoding, real, _in_process(monkeypatch, name, "utf-8"))
    # The in-process stream stands in for the real one: the same bytes.
    assert real.out == _in_process(monkeypatch, name, encoding).out


def test_the_stand_ins_are_ascii_and_the_escapes_are_exact() -> None:
    assert all(v.isascii() for v in GLYPHS.values())
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    protect(stream)
    stream.write("[✓] ok · 23.5 GiB → fine… café\n")
    stream.flush()
    assert raw.getvalue() == b"[ok] ok - 23.5 GiB -> fine... cafe\n"
    text = json.dumps({"gpu": "RTX · 4090 😀"}, ensure_ascii=False)
    assert json.loads(for_stream(text, stream)) == {"gpu": "RTX · 4090 😀"}
    assert for_stream(text, stream).isascii()
