"""The config-file parsers: pip's INI as pip reads it, the .condarc YAML subset, uv's TOML."""

from __future__ import annotations

import configparser
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envdoctor.probes.config_files import ConfigSyntaxError, parse_ini, parse_toml, parse_yaml

# A .condarc as the TUNA-family help pages publish it (mirror_facts.md 4.2), with comments.
TUNA_CONDARC = """\
# written by hand
channels:
  - defaults
show_channel_urls: true
default_channels:
  - https://mirrors.tuna.tsinghua.edu.cn/anaconda/pkgs/main
  - https://mirrors.tuna.tsinghua.edu.cn/anaconda/pkgs/r   # the R channel
custom_channels:
  conda-forge: https://mirrors.tuna.tsinghua.edu.cn/anaconda/cloud
  pytorch: 'https://mirrors.tuna.tsinghua.edu.cn/anaconda/cloud'
channel_priority: strict
"""


def test_condarc_as_mirror_help_pages_write_it() -> None:
    doc = parse_yaml(TUNA_CONDARC)
    assert doc.values["channels"] == ["defaults"]
    assert doc.values["default_channels"][1] == "https://mirrors.tuna.tsinghua.edu.cn/anaconda/pkgs/r"
    assert doc.values["custom_channels"] == {
        "conda-forge": "https://mirrors.tuna.tsinghua.edu.cn/anaconda/cloud",
        "pytorch": "https://mirrors.tuna.tsinghua.edu.cn/anaconda/cloud",
    }
    assert doc.values["channel_priority"] == "strict"
    assert doc.lines == {
        "channels": 2,
        "show_channel_urls": 4,
        "default_channels": 5,
        "custom_channels": 8,
        "channel_priority": 11,
    }


@pytest.mark.parametrize(
    ("text", "channels"),
    [
        ("channels:\n- pytorch\n- defaults\n", ["pytorch", "defaults"]),  # list at the key's column
        ("channels: [pytorch, 'nvidia', \"defaults\"]\n", ["pytorch", "nvidia", "defaults"]),
        ("channels: [pytorch,\n  defaults]\n", ["pytorch", "defaults"]),  # a flow list over two lines
        ("---\nchannels:\n  - 'it''s'\n...\n", ["it's"]),
        (
            "channels:\n  - https://x/anaconda/cloud/pytorch/ # the # after a blank is a comment\n",
            ["https://x/anaconda/cloud/pytorch/"],
        ),
        ("channels:\n  - https://x/a#b\n", ["https://x/a#b"]),  # no blank before #: part of the URL
        ("channels: []\n", []),
    ],
)
def test_list_styles(text: str, channels: list[str]) -> None:
    assert parse_yaml(text).values["channels"] == channels


def test_empty_and_null_values() -> None:
    doc = parse_yaml("# only a comment\n\nchannel_alias:\nchannels: ~\n")
    assert doc.values == {"channel_alias": None, "channels": None}
    assert parse_yaml("").values == {}


def test_nested_mapping_and_items_with_keys() -> None:
    doc = parse_yaml("m: {a: 1, b: [x, y]}\nseq:\n  - name: a\n    url: b\n  - [1, 2]\n")
    assert doc.values["m"] == {"a": "1", "b": ["x", "y"]}
    assert doc.values["seq"] == [{"name": "a", "url": "b"}, ["1", "2"]]


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("channels:\n  - defaults\n- pytorch\n", 3, "list item"),
        ("channels: [a, b\n", 1, "not closed"),
        ('channel_alias: "https://x\n', 1, "unterminated"),
        ("channels: [a]\nchannels: [b]\n", 2, "duplicate key"),
        ("channel_alias: x\n   channels: [b]\n", 2, "indentation"),
        ("channels:\n\t- a\n", 2, "tab"),
        ("password = s3cret words\n", 1, "key: value"),
        ("- a\n- b\n", 1, "is a list"),
    ],
)
def test_yaml_errors_name_the_line(text: str, line: int, words: str) -> None:
    with pytest.raises(ConfigSyntaxError) as caught:
        parse_yaml(text)
    assert caught.value.line == line
    assert words in caught.value.message
    assert str(caught.value).startswith(f"line {line}: ")
    assert "s3cret" not in str(caught.value)  # the line's content is never quoted


# An unquoted `null` is YAML's null, not a channel name; the generator leaves that word out.
_NAME = st.text(alphabet=string.ascii_lowercase + string.digits + "-_", min_size=1, max_size=12).filter(
    lambda name: name != "null"
)
_URL = st.builds(lambda host, path: f"https://{host}.example/{path}", _NAME, _NAME)
_CHANNEL = st.one_of(_NAME, _URL)


@settings(max_examples=60, deadline=None)
@given(
    channels=st.lists(_CHANNEL, max_size=6),
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
    doc = parse_yaml(text)
    assert doc.values["channels"] == channels
    assert doc.values.get("custom_channels", {}) == custom


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab:-# '\"[]{},\n\t|>&*!~")), max_size=60))
def test_any_text_parses_or_raises_a_syntax_error(text: str) -> None:
    try:
        doc = parse_yaml(text)
    except ConfigSyntaxError as exc:
        assert exc.line is None or exc.line >= 1
    else:
        assert isinstance(doc.values, dict)


def test_ini_reads_what_pip_reads() -> None:
    text = (
        "[global]\nindex-url = https://mirrors.aliyun.com/pypi/simple/\n"
        "extra-index-url =\n    https://a.example/simple\n    https://b.example/simple\n"
        "; a comment\n[install]\nTrusted_Host: mirrors.aliyun.com\n"
    )
    options = parse_ini(text)
    assert [(o.section, o.key, o.line) for o in options] == [
        ("global", "index-url", 2),
        ("global", "extra-index-url", 3),
        ("install", "trusted_host", 8),
    ]
    assert options[1].value.split() == ["https://a.example/simple", "https://b.example/simple"]
    # Same values as the parser pip builds (configparser.RawConfigParser), value for value.
    reference = configparser.RawConfigParser()
    reference.read_string(text)
    assert {(o.section, o.key): o.value for o in options} == {
        (s, k): v for s in reference.sections() for k, v in reference.items(s)
    }


def test_ini_keeps_an_inline_comment_as_pip_does() -> None:
    # pip's parser has no inline comments: the text after # stays in the value.
    (option,) = parse_ini("[global]\nindex-url = https://x.example/simple # mirror\n")
    assert option.value == "https://x.example/simple # mirror"


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("index-url = https://x.example/simple\n", 1, "before any [section] header"),
        ("[global]\nindex-url\n", 2, "not a `key = value` line"),
        ("[global]\na = 1\na = 2\n", 3, "appears twice"),
        ("[global]\n[global]\n", 2, "appears twice"),
    ],
)
def test_ini_errors_name_the_line(text: str, line: int, words: str) -> None:
    with pytest.raises(ConfigSyntaxError) as caught:
        parse_ini(text)
    assert caught.value.line == line and words in caught.value.message


def test_toml_and_its_errors() -> None:
    assert parse_toml('[tool.uv]\nindex-url = "https://x.example/simple"\n') == {
        "tool": {"uv": {"index-url": "https://x.example/simple"}}
    }
    with pytest.raises(ConfigSyntaxError) as caught:
        parse_toml('[tool.uv]\nindex-url = "https://x.example/simple\n')
    assert caught.value.line == 2
