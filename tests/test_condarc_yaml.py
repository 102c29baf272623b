""".condarc files as conda reads them: envdoctor's reading held against the YAML library's own.

conda loads .condarc with ruamel.yaml. Each realistic file below goes through the mirrors probe
(a FakeHost holds it as ~/.condarc) and, separately, through ruamel.yaml's safe loader; the
channel settings must agree, and a file the library rejects must be a malformed-file fact naming
the line the library names. Each case also states its expected values, so an agreement that is
wrong for both shows.
"""

from __future__ import annotations

import contextlib
import os
import string
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from envdoctor.host.fake import FakeHost
from envdoctor.host.live import LiveHost
from envdoctor.model.findings import Interpreter
from envdoctor.model.sources import LOADED, MALFORMED, UNREADABLE, CondaConfig, ConfigFile
from envdoctor.probes.base import ProbeContext
from envdoctor.probes.config_files import ConfigSyntaxError, parse_yaml
from envdoctor.probes.mirrors import CONFIG_MAX_BYTES, collect, collect_conda
from envdoctor.target import PythonInfo, Target

HOME_RC = "/home/user/.condarc"
TUNA = "https://mirrors.tuna.tsinghua.edu.cn/anaconda"
INFO = PythonInfo(
    executable="/opt/miniconda3/bin/python",
    version="3.11.7",
    implementation="CPython",
    bits=64,
    prefix="/opt/miniconda3",
    is_venv=False,
    is_conda=True,
)


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    channels: list[str] | None = None
    default_channels: list[str] | None = None
    channel_alias: str | None = None
    custom_channels: dict[str, str] = field(default_factory=dict)
    error_line: int | None = None  # set: conda (and envdoctor) reject the file at this line


CASES = [
    Case(
        "mirror help page, with comments",
        "# written by hand\nchannels:\n  - defaults\nshow_channel_urls: true\ndefault_channels:\n"
        f"  - {TUNA}/pkgs/main\n  - {TUNA}/pkgs/r   # the R channel\ncustom_channels:\n"
        f"  conda-forge: {TUNA}/cloud\n  pytorch: '{TUNA}/cloud'  # quoted\nchannel_priority: strict\n",
        channels=["defaults"],
        default_channels=[f"{TUNA}/pkgs/main", f"{TUNA}/pkgs/r"],
        custom_channels={"conda-forge": f"{TUNA}/cloud", "pytorch": f"{TUNA}/cloud"},
    ),
    Case(
        "quoted values, a # inside quotes and inside a URL",
        "channels:\n  - 'pytorch'\n  - \"nvidia\"\n  - 'it''s'\n  - \"https://x.example/a # not a comment\"\n"
        '  - https://x.example/b#frag\nchannel_alias: "https://conda.example.com/"  # a comment\n',
        channels=[
            "pytorch",
            "nvidia",
            "it's",
            "https://x.example/a # not a comment",
            "https://x.example/b#frag",
        ],
        channel_alias="https://conda.example.com/",
    ),
    Case(
        "flow list",
        "channels: [pytorch, 'nvidia', \"conda-forge\"]\n",
        channels=["pytorch", "nvidia", "conda-forge"],
    ),
    Case(
        "flow list over several lines",
        "channels: [pytorch,\n  nvidia,\n  defaults]\ndefault_channels: []\n",
        channels=["pytorch", "nvidia", "defaults"],
        default_channels=[],
    ),
    Case(
        "block list at the key's own column",
        "channels:\n- conda-forge\n- defaults\n",
        channels=["conda-forge", "defaults"],
    ),
    Case(
        "anchor and alias",
        f"default_channels: &mirror\n  - {TUNA}/pkgs/main\n  - {TUNA}/pkgs/r\nchannels: *mirror\n",
        channels=[f"{TUNA}/pkgs/main", f"{TUNA}/pkgs/r"],
        default_channels=[f"{TUNA}/pkgs/main", f"{TUNA}/pkgs/r"],
    ),
    Case(
        "scalar alias and a merge key",
        f"_base: &base\n  pytorch: {TUNA}/cloud\nchannel_alias: &alias {TUNA}\n"
        "custom_channels:\n  <<: *base\n  conda-forge: *alias\n",
        channel_alias=TUNA,
        custom_channels={"pytorch": f"{TUNA}/cloud", "conda-forge": TUNA},
    ),
    Case(
        "UTF-8 byte-order mark (Windows Notepad)",
        "\ufeffchannels:\n  - pytorch\n  - defaults\n",
        channels=["pytorch", "defaults"],
    ),
    Case(
        "CRLF line endings",
        "channels:\r\n  - pytorch\r\n  - defaults\r\nchannel_alias: https://conda.example.com\r\n",
        channels=["pytorch", "defaults"],
        channel_alias="https://conda.example.com",
    ),
    Case("a tab between key and value", "channel_alias:\thttps://conda.example.com\n", error_line=1),
    Case("a trailing tab before a comment", "channels: [defaults]\t# the default\n", error_line=1),
    Case("a tab indenting a list item", "channels:\n\t- pytorch\n", error_line=2),
    Case("duplicate key", "channels: [pytorch]\nchannel_alias: x\nchannels: [nvidia]\n", error_line=3),
    Case("empty file", ""),
    Case("comments and blank lines only", "# nothing set yet\n\n   # indented comment\n"),
    Case("channels: with no value", "channels:\nchannel_alias: ~\ndefault_channels: null\n"),
    Case(
        "nested custom_channels and settings envdoctor does not use",
        "proxy_servers:\n  http: http://proxy.example:3128\ncustom_channels:\n"
        f"  pytorch: {TUNA}/cloud\n  nvidia: https://mirrors.sustech.edu.cn/anaconda-extra/cloud\n"
        "ssl_verify: true\nchannels:\n  - nvidia\n  - pytorch\n",
        channels=["nvidia", "pytorch"],
        custom_channels={
            "pytorch": f"{TUNA}/cloud",
            "nvidia": "https://mirrors.sustech.edu.cn/anaconda-extra/cloud",
        },
    ),
    Case(
        "document markers",
        "%YAML 1.2\n---\nchannels: [defaults]\n...\n",
        channels=["defaults"],
    ),
    Case(
        "folded block scalar",
        "channel_alias: >-\n  https://conda.example.com\nchannels: [defaults]\n",
        channels=["defaults"],
        channel_alias="https://conda.example.com",
    ),
    Case("a list item outside its list", "channels:\n  - defaults\n- pytorch\n", error_line=3),
    Case("an alias without an anchor", "channels: *mirror\n", error_line=1),
    Case("two documents", "channels: [a]\n---\nchannels: [b]\n", error_line=2),
    Case("an unclosed flow list", "channel_alias: x\nchannels: [pytorch, nvidia\n", error_line=2),
]


def _library(text: str) -> dict[str, Any] | int:
    """What ruamel.yaml itself loads (the safe loader, not envdoctor's round-trip path), or the
    1-based line of its error."""
    try:
        data = YAML(typ="safe", pure=True).load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if exc.context_mark is not None and any(
            w in str(exc.problem) for w in ("<stream end>", "end of stream")
        ):
            mark = exc.context_mark
        assert mark is not None
        return int(mark.line) + 1
    return data or {}


def _envdoctor(text: str) -> tuple[ConfigFile, CondaConfig]:
    host = FakeHost(files={HOME_RC: text}, environ={"CONDA_EXE": "/opt/miniconda3/bin/conda"})
    conda = collect_conda(host, "linux", INFO)
    (found,) = [f for f in conda.files if f.path == HOME_RC]
    return found, conda


def _read_back(conda: CondaConfig) -> dict[str, Any]:
    alias = conda.last("channel_alias")
    return {
        "channels": [c for c, _ in conda.merged_list("channels")] or None,
        "default_channels": [c for c, _ in conda.merged_list("default_channels")] or None,
        "channel_alias": alias.value if alias else None,
        "custom_channels": {name: url for name, url, _ in conda.custom_channels()},
    }


def _strings(value: Any) -> list[str] | None:
    return None if value is None else [str(v) for v in value if v is not None] or None


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_condarc_reading_agrees_with_the_library(case: Case) -> None:
    file, conda = _envdoctor(case.text)
    reference = _library(case.text)
    if case.error_line is not None:
        assert reference == case.error_line, "the library rejects the file at this line"
        assert (file.status, file.line) == (MALFORMED, case.error_line)
        assert conda.settings == ()
        return
    assert isinstance(reference, dict), f"the library rejected it at line {reference}"
    assert file.status == LOADED, file.error
    expected = {
        "channels": _strings(reference.get("channels")),
        "default_channels": _strings(reference.get("default_channels")),
        "channel_alias": reference.get("channel_alias"),
        "custom_channels": {str(k): str(v) for k, v in (reference.get("custom_channels") or {}).items()},
    }
    assert _read_back(conda) == expected
    # ... and both say what the file plainly means.
    assert expected == {
        "channels": case.channels or None,
        "default_channels": case.default_channels or None,
        "channel_alias": case.channel_alias,
        "custom_channels": case.custom_channels,
    }


def test_the_cases_cover_what_the_issue_lists() -> None:
    texts = [c.text for c in CASES]
    assert len(CASES) >= 16
    for needle in ("#", "'", '"', "[", "- ", "&", "*", "<<", "\ufeff", "\t", "\r\n"):
        assert any(needle in t for t in texts), needle
    assert any(c.text == "" for c in CASES)
    assert any(c.name == "duplicate key" for c in CASES)


def test_settings_keep_the_line_of_their_key() -> None:
    text = "# mirror\nchannels:\n  - pytorch\n\ncustom_channels:\n  pytorch: https://m.example/cloud\n"
    _, conda = _envdoctor(text)
    assert [(s.key, s.line) for s in conda.settings] == [("channels", 2), ("custom_channels", 5)]


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("channels: defaults\n", 1, "channels must be a list of channel names or URLs"),
        ("channels:\n  - [a, b]\n", 1, "channels must be a list of channel names or URLs"),
        ("x: 1\ncustom_channels: [a]\n", 2, "custom_channels must map channel names to URLs"),
        ("custom_channels:\n  pytorch: {a: b}\n", 1, "custom_channels must map channel names to URLs"),
        ("channel_alias: [a]\n", 1, "channel_alias must be a single value"),
        ("channel_priority: {a: 1}\n", 1, "channel_priority must be a single value"),
        ("- pytorch\n- defaults\n", 1, "the file is a list"),
        ("# a note\npassword = s3cret words\n", 2, "expected `key: value` settings"),
        ("channels: [a]\nchannels: [s3cret]\n", 2, "duplicate key 'channels'"),
        ("channels:\n\t- a\n", 2, "tab"),
        ('channel_alias: "https://s3cret\n', 1, "quoted string is not closed"),
        ("channel_alias: x\n   channels: [b]\n", 2, "indentation"),
    ],
)
def test_wrong_shapes_and_types_are_findings_with_a_line(text: str, line: int, words: str) -> None:
    file, conda = _envdoctor(text)
    assert (file.status, file.line) == (MALFORMED, line)
    assert words in str(file.error)
    assert "s3cret" not in str(file.error)  # the file's values are never quoted: they may be tokens
    assert conda.settings == ()


def test_control_characters_and_deep_nesting_are_findings() -> None:
    file, _ = _envdoctor("channel_alias: x\nchannels: [a\x01]\n")
    assert (file.status, file.line, file.error) == (
        MALFORMED,
        2,
        "a control character YAML does not allow (U+0001)",
    )
    file, _ = _envdoctor("channels: " + "[" * 5000 + "]" * 5000 + "\n")
    assert (file.status, file.error) == (MALFORMED, "lists or mappings nested more than 64 deep")
    nested = "".join(" " * i + f"k{i}:\n" for i in range(sys.getrecursionlimit()))
    file, _ = _envdoctor(nested)  # by indentation: the parser's own recursion gives out
    assert (file.status, file.error) == (MALFORMED, "lists or mappings nested more than 64 deep")


def test_unknown_keys_and_non_string_keys_are_left_alone() -> None:
    doc = parse_yaml("? [a, b]\n: c\n1: x\nchannels: [d]\n")
    assert list(doc.values) == ["channels"] and doc.lines == {"channels": 4}


def test_a_file_over_the_size_cap_is_unreadable_not_parsed() -> None:
    big = "channels:\n" + "  - c\n" * (CONFIG_MAX_BYTES // 6 + 1)
    file, conda = _envdoctor(big)
    assert file.status == UNREADABLE and "KiB" in str(file.error)
    assert conda.settings == ()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX thing")
def test_a_fifo_named_as_condarc_is_reported_not_read(tmp_path: Path) -> None:
    """A FIFO would block an open() for reading forever; the live host must refuse it at once."""
    rc = tmp_path / "condarc"
    os.mkfifo(rc)
    host = LiveHost(environ={"CONDARC": str(rc), "HOME": str(tmp_path / "home")})
    conda = collect_conda(host, "linux", INFO)
    (found,) = [f for f in conda.files if f.path == str(rc)]
    assert (found.status, found.error) == (UNREADABLE, "not a regular file (a FIFO)")


def test_the_live_host_reads_a_condarc_as_conda_does(tmp_path: Path) -> None:
    rc = tmp_path / "condarc"
    rc.write_bytes(b"\xef\xbb\xbfchannels:\r\n  - pytorch\r\nchannel_alias: https://c.example\r\n")
    host = LiveHost(environ={"CONDARC": str(rc), "HOME": str(tmp_path / "home")})
    conda = collect_conda(host, "linux", INFO)
    assert [c for c, _ in conda.merged_list("channels")] == ["pytorch"]
    alias = conda.last("channel_alias")
    assert alias is not None and (alias.value, alias.line) == ("https://c.example", 3)


def test_ruamel_is_imported_only_once_a_condarc_exists() -> None:
    """`--help`, `install` and a probe run without conda files never pay for the YAML import."""
    import subprocess

    script = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from envdoctor.cli.root import app\n"
        "from envdoctor.host.fake import FakeHost\n"
        "from envdoctor.model.findings import Interpreter\n"
        "from envdoctor.probes.base import ProbeContext\n"
        "from envdoctor.probes.mirrors import collect\n"
        "from envdoctor.target import PythonInfo, Target\n"
        "seen = []\n"
        "SITE = '/v/lib/python3.11/site-packages'  # the examined environment has no packages\n"
        "CliRunner().invoke(app, ['--help'])\n"
        "CliRunner().invoke(app, ['install', '--os', 'linux', '--python', '3.11', '--driver', '560.94'])\n"
        "seen.append('ruamel.yaml' in sys.modules)\n"
        "info = PythonInfo('/v/bin/python', '3.11.7', 'CPython', 64, '/v', True, False)\n"
        "target = Target(Interpreter('/v/bin/python', 't'), info)\n"
        "collect(ProbeContext(host=FakeHost(absent={SITE}), target=target))\n"
        "seen.append('ruamel.yaml' in sys.modules)\n"
        "host = FakeHost(files={'/home/user/.condarc': 'channels: [a]\\n'}, absent={SITE})\n"
        "collect(ProbeContext(host=host, target=target))\n"
        "seen.append('ruamel.yaml' in sys.modules)\n"
        "print(seen)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[False, False, True]"


# Characters that make YAML interesting: indicators, quotes, flow brackets, anchors, tags, tabs,
# CR, a BOM, a control character, and enough letters to build keys conda reads.
_YAML_ALPHABET = [*"ab:-#'\"[]{},\n\t\r|>&*!~?%@` ", "\ufeff", "\x01", "channels", "custom_channels"]


@settings(max_examples=200, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_YAML_ALPHABET), max_size=40).map("".join))
def test_any_text_is_a_result_or_a_finding_never_an_exception(text: str) -> None:
    file, conda = _envdoctor(text)
    if file.status == MALFORMED:
        assert file.error and (file.line is None or file.line >= 1)
        assert conda.settings == ()
    else:
        assert file.status == LOADED
        for setting in conda.settings:
            assert all(isinstance(item, str) for item in setting.items)
    # And the library itself either loads it or raises its own error: no third outcome.
    with contextlib.suppress(YAMLError, RecursionError):
        YAML(typ="safe", pure=True).load(text)


# Channel names start with a letter, as real ones do (an unquoted `0_` is the integer 0 in YAML).
_NAME = st.builds(
    lambda first, rest: first + rest,
    st.sampled_from(string.ascii_lowercase),
    st.text(alphabet=string.ascii_lowercase + string.digits + "-_", max_size=11),
).filter(lambda name: name not in ("null", "true", "false"))
_URL = st.builds(lambda host, path: f"https://{host}.example/{path}", _NAME, _NAME)
_CHANNEL = st.one_of(_NAME, _URL)


@settings(max_examples=60, deadline=2000)
@given(
    channels=st.lists(_CHANNEL, max_size=6, unique=True),
    custom=st.dictionaries(_NAME, _URL, max_size=4),
    style=st.sampled_from(["block", "indented", "flow"]),
    quote=st.sampled_from(["", "'", '"']),
)
def test_round_trip_of_what_conda_users_write(
    channels: list[str], custom: dict[str, str], style: str, quote: str
) -> None:
    def q(value: str) -> str:
        return f"{quote}{value}{quote}"

    if style == "flow" or not channels:
        text = "channels: [" + ", ".join(q(c) for c in channels) + "]\n"
    else:
        pad = "  " if style == "indented" else ""
        text = "channels:\n" + "".join(f"{pad}- {q(c)}  # note\n" for c in channels)
    if custom:
        text += "custom_channels:\n" + "".join(f"  {k}: {q(v)}\n" for k, v in custom.items())
    file, conda = _envdoctor(text)
    assert file.status == LOADED
    assert [c for c, _ in conda.merged_list("channels")] == channels
    assert {n: u for n, u, _ in conda.custom_channels()} == custom


def test_parse_errors_keep_the_config_syntax_error_form() -> None:
    with pytest.raises(ConfigSyntaxError) as caught:
        parse_yaml("channels: [a]\nchannels: [b]\n")
    assert str(caught.value) == "line 2: duplicate key 'channels'"


def test_a_condarc_reaches_the_probe_facts_through_collect() -> None:
    host = FakeHost(
        files={HOME_RC: "\ufeffchannels: [pytorch, nvidia]\n"}, absent={"/v/lib/python3.11/site-packages"}
    )
    info = PythonInfo("/v/bin/python", "3.11.7", "CPython", 64, "/v", True, False)
    facts = collect(ProbeContext(host=host, target=Target(Interpreter("/v/bin/python", "t"), info)))
    assert [c for c, _ in facts.conda.merged_list("channels")] == ["pytorch", "nvidia"]
