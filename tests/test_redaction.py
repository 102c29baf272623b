"""redact_text masks credentials the way pip does; has_secret recognises them, masked or not."""

from __future__ import annotations

import pytest

from envdoctor.util.redact import has_secret, redact, redact_text


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("https://user:s3cret@pkgs.example.com/simple", "https://user:****@pkgs.example.com/simple"),
        ("https://glpat-abc@pkgs.example.com/simple", "https://****@pkgs.example.com/simple"),
        ("https://user:p@ss@pkgs.example.com/simple", "https://user:****@pkgs.example.com/simple"),
        ("https://conda.example.com/t/tk-123/internal", "https://conda.example.com/t/****/internal"),
        ("https://conda.example.com/t/tk-123", "https://conda.example.com/t/****"),  # a channel_alias
        ("a https://x.example/t/tk-1\nb", "a https://x.example/t/****\nb"),
        ("https://x.example/simple?token=abc&page=2", "https://x.example/simple?token=****&page=2"),
        ("https://s3.example/w.whl?X-Amz-Signature=abc", "https://s3.example/w.whl?X-Amz-Signature=****"),
        (
            "extra https://a:b@one.example/s https://c@two.example/s",
            "extra https://a:****@one.example/s https://****@two.example/s",
        ),
        ("https://mirrors.aliyun.com/pypi/simple/", "https://mirrors.aliyun.com/pypi/simple/"),
        ("file:///srv/pypi/simple", "file:///srv/pypi/simple"),
    ],
)
def test_redact_text(text: str, masked: str) -> None:
    assert redact_text(text) == masked
    assert redact_text(masked) == masked  # idempotent: reports get redacted more than once
    assert has_secret(text) == (text != masked)
    assert has_secret(masked) == (text != masked)  # still seen once masked (snapshots)


def test_a_t_folder_outside_a_url_is_no_secret() -> None:
    assert not has_secret("/srv/t/wheels")


def test_redact_walks_dataclasses_tuples_and_mappings() -> None:
    from envdoctor.model.findings import Fix

    fix = Fix("use https://u:pw@h.example/s", ("pip install --index-url https://u:pw@h.example/s torch",))
    clean = redact({"API_TOKEN": "abc", "plain": "https://tok@h.example/"})
    assert clean == {"API_TOKEN": "****", "plain": "https://****@h.example/"}
    assert redact([fix])[0].commands == ("pip install --index-url https://u:****@h.example/s torch",)
