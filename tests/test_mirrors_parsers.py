"""The config-file parsers: pip's INI as pip reads it, uv's TOML (.condarc YAML: test_condarc_yaml.py)."""

from __future__ import annotations

import configparser

import pytest

from envdoctor.probes.config_files import ConfigSyntaxError, parse_ini, parse_toml


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
