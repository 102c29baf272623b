"""A configuration file with bytes that are not UTF-8 (issue 13 item 21): pip refuses to run
("Configuration file could not be loaded ... contains invalid ... characters"), so envdoctor says
ED506 naming the file instead of showing it loaded with a mangled URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from envdoctor.engine import diagnose
from envdoctor.host.fake import FakeHost
from envdoctor.host.live import LiveHost
from envdoctor.model.findings import ProbeResult, ProbeStatus
from envdoctor.model.sources import LOADED, MALFORMED
from envdoctor.probes.mirrors import CONFIG_MAX_BYTES
from envdoctor.snapshot import load
from tests.fixture_support import FIXTURES
from tests.test_mirrors_probe import probe

BAD = b"[global]\nindex-url = https://mirror.example/simple/\xff\xfe\n"
PIP_CONF = "/home/user/.config/pip/pip.conf"


def _fake(raw: bytes) -> FakeHost:
    # A file's undecodable bytes, as Python keeps them: surrogate escapes.
    return FakeHost(environ={"HOME": "/home/user"}, files={PIP_CONF: raw.decode("utf-8", "surrogateescape")})


def test_invalid_utf8_pip_conf_is_ed506_naming_the_file() -> None:
    facts = probe(_fake(BAD))
    file = next(f for f in facts.pip.files if f.path == PIP_CONF)
    assert file.status == MALFORMED and "not valid UTF-8" in (file.error or "")
    assert not any(s.path == PIP_CONF for s in facts.pip.effective)  # no mangled URL
    snap = load(str(FIXTURES / "linux-rtx4090-driver535-cu121-healthy.json"))
    mirrors = ProbeResult("mirrors", ProbeStatus.OK, 0.01, facts)
    probes = (*(p for p in snap.probes if p.probe != "mirrors"), mirrors)
    findings = diagnose(snap.platform, snap.interpreter, probes).findings
    ed506 = [f for f in findings if f.code == "ED506"]
    assert ed506 and PIP_CONF in ed506[0].title + ed506[0].detail


def test_a_valid_utf8_file_still_loads() -> None:
    facts = probe(_fake("[global]\nindex-url = https://mirror.example/simple/ # café\n".encode()))
    assert next(f for f in facts.pip.files if f.path == PIP_CONF).status == LOADED


@pytest.mark.parametrize("limit", [None, CONFIG_MAX_BYTES])
def test_the_live_host_decodes_strictly_when_asked(tmp_path: Path, limit: int | None) -> None:
    path = tmp_path / "pip.conf"
    path.write_bytes(BAD)
    host = LiveHost()
    assert "\ufffd" in host.read_text(str(path), max_bytes=limit)  # lenient by default
    with pytest.raises(UnicodeDecodeError):
        host.read_text(str(path), max_bytes=limit, strict=True)
