"""Every command and format prints to a stdout that is not UTF-8 (issue 13 item 14): cp1252 (what
`envdoctor report > report.md` writes on Windows), latin-1 and ASCII. Glyphs get ASCII stand-ins;
JSON and XML keep their data exactly, escaped in their own syntax."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from envdoctor.stream_text import GLYPHS, for_stream, protect
from tests.fixture_support import FIXTURES

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


def _run(args: list[str], encoding: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CI", "GITHUB"))}
    env.update(PYTHONIOENCODING=encoding, COLUMNS="100", NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "envdoctor", *args], capture_output=True, env=env, timeout=60, check=False
    )


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_prints_under_a_narrow_encoding(name: str, encoding: str) -> None:
    result = _run(COMMANDS[name], encoding)
    assert b"Traceback" not in result.stderr and b"UnicodeEncodeError" not in result.stderr, result.stderr
    assert result.returncode in (0, 1), result.stderr
    text = result.stdout.decode(encoding)  # what the stream holds is valid in its own encoding
    assert text.strip()
    if name in ("json", "rules-json"):
        data = json.loads(text)
        same = json.loads(_run(COMMANDS[name], "utf-8").stdout.decode("utf-8"))
        assert data == same  # escaped, not replaced: no data lost
    if name == "junit":
        ET.fromstring(result.stdout)
    if encoding == "ascii":
        assert "?" not in text.replace("?)", "").replace("? ", "") or name in ("json", "rules-json", "junit")


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
