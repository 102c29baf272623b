"""The README's and docs' promises that code can check (issue 23): CI runs the README's test
command; every sample output in the README is what that command prints today; docs/rules.md is the
registry; every code fence is closed; the README stays short and its links lead somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README_PATH = ROOT / "README.md"
README = README_PATH.read_text(encoding="utf-8")
DOCS = sorted((ROOT / "docs").glob("*.md"))


def _bash_blocks() -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", README, flags=re.S)]


def test_ci_runs_the_readme_test_command() -> None:
    blocks = _bash_blocks()
    test_command = next(b for b in blocks if "pytest" in b)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci.splitlines()


def test_the_readme_is_what_a_newcomer_needs() -> None:
    assert len(README.splitlines()) <= 250
    for heading in ("## Set-up", "## What it looks like", "## Exit codes", "## Reference", "## Development"):
        assert heading in README
    assert "| 130 |" in README  # Ctrl-C is in the exit-code table
    assert "pip install envdoctor" not in README  # not published: install from a checkout


@pytest.mark.parametrize("path", [README_PATH, *DOCS], ids=lambda p: p.name)
def test_every_code_fence_is_closed(path: Path) -> None:
    fences = [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("```")]
    assert len(fences) % 2 == 0, f"{path.name}: an unclosed code fence"
    # Each block closes with a bare fence: a closing line never opens a new block by accident.
    assert all(f == "```" for f in fences[1::2]), f"{path.name}: a block closes with {fences[1::2]}"


@pytest.mark.slow
def test_readme_samples_are_what_the_commands_print_today() -> None:
    """Regenerate with `python -m tests.regen_docs`."""
    from tests.regen_docs import SAMPLE, run_sample

    found = list(SAMPLE.finditer(README))
    assert len(found) >= 3
    for match in found:
        assert match.group("body") == run_sample(match.group("args")), f"stale sample: {match.group('args')}"


def test_docs_rules_is_the_registry() -> None:
    from tests.regen_docs import RULES_DOC, rules_doc

    assert RULES_DOC.read_text(encoding="utf-8") == rules_doc(), "run `python -m tests.regen_docs`"


@pytest.mark.slow
def test_the_corpus_score_in_the_readme_is_the_tests_score() -> None:
    from tests.regen_docs import SCORE, _score_line

    found = SCORE.search(README)
    assert found is not None and found.group(0) == _score_line(), "run `python -m tests.regen_docs`"


def test_links_in_the_readme_and_docs_lead_to_files_that_exist() -> None:
    for path in [README_PATH, *DOCS]:
        for target in re.findall(r"\]\(((?!https?://|#)[^)#]+)", path.read_text(encoding="utf-8")):
            assert (path.parent / target).exists(), f"{path.name} links to {target}"
