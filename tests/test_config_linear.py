"""uv.toml with tens of thousands of indexes parses in linear time, and a file past the size cap is
reported, not read (issue 13 item 10)."""

from __future__ import annotations

import time

import pytest

from envdoctor.host.fake import FakeHost
from envdoctor.model.sources import LOADED, UNREADABLE
from envdoctor.probes.mirrors import CONFIG_MAX_BYTES
from tests.test_mirrors_probe import probe

pytestmark = pytest.mark.slow

UV_TOML = "/home/user/.config/uv/uv.toml"


def _indexes(count: int) -> str:
    return "".join(f'[[index]]\nurl = "https://m{i}.example/simple"\n' for i in range(count))


def _timed(text: str) -> tuple[float, object]:
    host = FakeHost(environ={"HOME": "/home/user"}, files={UV_TOML: text})
    start = time.perf_counter()
    facts = probe(host)
    return time.perf_counter() - start, facts


@pytest.mark.exclusive
def test_many_indexes_parse_in_linear_time() -> None:
    small, _ = _timed(_indexes(2_000))
    large, facts = _timed(_indexes(20_000))  # about 0.95 MB, under the cap
    # Quadratic line lookups took 1.9 s and ~190 s here; linear is ~10x, with room for noise.
    assert large < max(30 * small, 1.0) and large < 15, (small, large)
    uv = facts.uv  # type: ignore[attr-defined]
    assert [f.status for f in uv.files if f.path == UV_TOML] == [LOADED]
    urls = [i for i in uv.indexes if i.origin == UV_TOML]
    assert len(urls) == 20_000
    assert urls[12_345].line == 2 * 12_345 + 2  # the url's own line, found by the index


def test_a_file_past_the_cap_is_reported_not_read() -> None:
    text = _indexes(28_000)
    assert len(text.encode()) > CONFIG_MAX_BYTES
    seconds, facts = _timed(text)
    uv = facts.uv  # type: ignore[attr-defined]
    file = next(f for f in uv.files if f.path == UV_TOML)
    assert file.status == UNREADABLE and seconds < 5
