"""Property tests, one per parser and input file kind (issue 13): whatever the text, each gives a
result or a clean error (ConfigSyntaxError, SettingsError, SnapshotError) or a finding; never
another exception. Bounded: ~100-200 examples each, a deadline per example.

(.condarc YAML has its own in tests/test_condarc_yaml.py.)"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envdoctor.engine import diagnose, registry_names
from envdoctor.host.fake import FakeHost
from envdoctor.model.findings import ProbeResult, ProbeStatus
from envdoctor.model.sources import MirrorFacts
from envdoctor.probes.config_files import ConfigSyntaxError, parse_ini, parse_toml
from envdoctor.settings import KEYS_BY_NAME, Settings, SettingsError, resolve
from envdoctor.snapshot import Snapshot, SnapshotError, load, snapshot_from_data, snapshot_to_data
from tests.fixture_support import FIXTURES, fixture_names
from tests.test_mirrors_probe import probe

BOUNDED = settings(max_examples=150, deadline=3000, suppress_health_check=[HealthCheck.too_slow])

_INI = [
    "[global]", "[install]", "[", "]", "\n", "\n", "index-url", "extra-index-url", "trusted-host",
    "password", " = ", "=", ":", " ", "\t", "https://u:p@m.example/simple", "#", ";", "é", "\x00",
    "\n  ", "%(x)s", "%", "\ufeff", "\r\n", "\udcff",
]  # fmt: skip
_TOML = [
    "[[index]]", "[pip]", "[tool.uv]", "[tool.envdoctor]", "url", "index-url", "extra-index-url",
    "find-links", " = ", "=", '"https://m.example/simple"', "'x'", '"', "'", "[", "]", "{", "}",
    ",", ".", "\n", "\n", "true", "1", "1e400", "-", "default = true", "#", "\ufeff", "é", "\udcff",
]  # fmt: skip
_SETTINGS = [*KEYS_BY_NAME, "min_gpus", "unknown-key"]
_VALUES = [
    "true", "false", "2", "0", "-1", "1" * 60, '"24GiB"', '">=12.1"', '"12.1"', '"²"', "[]",
    '["ED101"]', '["nvml"]', "1.5", "{}", '"a\\nb"', "inf", "nan",
]  # fmt: skip

_text = st.lists(st.sampled_from(_INI), max_size=40).map("".join)
_toml = st.lists(st.sampled_from(_TOML), max_size=40).map("".join)


def _mirrors(files: dict[str, str]) -> MirrorFacts:
    return probe(FakeHost(environ={"HOME": "/home/user"}, files=files))


@BOUNDED
@given(_text)
def test_pip_conf_gives_options_or_a_syntax_error(text: str) -> None:
    try:
        options = parse_ini(text)
    except ConfigSyntaxError as exc:
        assert exc.message and "\n" not in exc.message
    else:
        assert isinstance(options, tuple)
    facts = _mirrors({"/home/user/.config/pip/pip.conf": text})  # the probe itself never raises
    assert any(f.path.endswith("pip.conf") for f in facts.pip.files)


@BOUNDED
@given(_toml)
def test_uv_toml_gives_a_table_or_a_syntax_error(text: str) -> None:
    try:
        assert isinstance(parse_toml(text), dict)
    except ConfigSyntaxError as exc:
        assert exc.message
    facts = _mirrors({"/home/user/.config/uv/uv.toml": text, "/home/user/project/pyproject.toml": text})
    assert any(f.path.endswith("uv.toml") for f in facts.uv.files)


def _config_text(pairs: list[tuple[str, str]], table: bool, noise: str) -> str:
    body = "".join(f"{k} = {v}\n" for k, v in pairs)
    return ("[tool.envdoctor]\n" + body if table else body) + noise


@BOUNDED
@given(
    st.lists(st.tuples(st.sampled_from(_SETTINGS), st.sampled_from(_VALUES)), max_size=6),
    st.sampled_from(["envdoctor.toml", "pyproject.toml"]),
    st.booleans(),
    _toml,
)
def test_envdoctor_toml_and_pyproject_give_settings_or_one_clean_line(
    pairs: list[tuple[str, str]], name: str, table: bool, noise: str
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, name).write_text(
            _config_text(pairs, table, noise), encoding="utf-8", errors="surrogateescape"
        )
        try:
            result = resolve({}, folder, registry_names())
        except SettingsError as exc:
            assert str(exc) and "\n" not in str(exc)
        else:
            assert isinstance(result, Settings)


_SNAPSHOT = load(str(FIXTURES / f"{fixture_names()[0]}.json"))
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replace(copy[path[0]], path[1:], new)
    return copy


_DATA = snapshot_to_data(_SNAPSHOT)
_PATHS = _paths(_DATA)


@BOUNDED
@given(st.sampled_from(_PATHS), _json)
def test_a_snapshot_with_any_value_anywhere_loads_or_is_a_clean_error(
    path: tuple[Any, ...], new: Any
) -> None:
    data = json.loads(json.dumps(_replace(_DATA, path, new)))
    try:
        snap = snapshot_from_data(data, "snap.json")
    except SnapshotError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert isinstance(snap, Snapshot)
    report = diagnose(snap.platform, snap.interpreter, snap.probes)  # rules see only typed facts
    assert isinstance(report.findings, tuple)


@BOUNDED
@given(_json)
def test_any_json_document_is_a_snapshot_or_a_clean_error(data: Any) -> None:
    try:
        snapshot_from_data(data, "snap.json")
    except SnapshotError as exc:
        assert str(exc)


def test_the_probe_results_used_above_are_real() -> None:
    assert any(isinstance(p, ProbeResult) and p.status == ProbeStatus.OK for p in _SNAPSHOT.probes)
