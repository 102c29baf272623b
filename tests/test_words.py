"""Wording a reviewer read as a new user: whole sentences, no doubled "Or", no stray breaks."""

from __future__ import annotations

import json
from pathlib import Path

from envdoctor.cli.help import COMMAND_HELP
from envdoctor.rules.torch.install import _not_importable

GOLDEN = Path(__file__).parent / "golden"


def test_ed001_from_an_isolated_install_reads_as_sentences() -> None:
    reason = (
        "the project environment ./.venv; envdoctor's own environment (an environment without "
        "torch) has no torch (--python chooses another)"
    )
    assert _not_importable(reason) == (
        "The examined environment is the project environment ./.venv, and it cannot import torch. "
        "It was chosen because envdoctor's own environment (an environment without torch) has no "
        "torch; --python examines another interpreter."
    )
    assert _not_importable("given with --python") == (
        "The examined environment, given with --python, cannot import torch."
    )


def test_no_fix_text_starts_with_or() -> None:
    """The console puts "Or:" before every fix after the first: a summary saying "Or" again
    stutters ("Or: Or remove ...")."""
    files = sorted(GOLDEN.glob("*.json")) + sorted((GOLDEN / "rules").glob("*.json"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert "Or: Or " not in text and "Fix: Or " not in text, path.name
        assert '"summary": "Or ' not in text, path.name
        json.loads(text)


def test_command_help_has_no_stray_line_breaks() -> None:
    """A line break inside a sentence ("with\\ncredentials") shows as a broken line in --help."""
    for name, text in COMMAND_HELP.items():
        for paragraph in text.split("\n\n"):
            for line in paragraph.split("\n")[:-1]:
                assert line.endswith((";", ".", ":")), (name, line)


def test_as_asked_only_when_the_user_asked() -> None:
    """`install --cuda cpu` asked for the CPU build; a rule's fix that picks it (ED305) did not."""
    import dataclasses

    from envdoctor.install import plan as install

    asked = install.InstallTarget(os="linux", python="3.11", variant="cpu")
    assert "the CPU build, as asked" in install.plan(asked).reason
    chosen = install.plan(dataclasses.replace(asked, variant=None, want_cuda=False, asked=False))
    assert "the CPU build" in chosen.reason and "as asked" not in chosen.reason
