"""The layers point one way: the model names nothing above it; settings ask no registry."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest

from envdoctor.model.findings import Expectations
from envdoctor.settings import KEYS, ExpectationError, Names, from_keywords, resolve

PACKAGE = Path(__file__).resolve().parent.parent / "envdoctor"


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at the top, inside functions or under TYPE_CHECKING."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize(
    ("module", "above"),
    [
        (
            "model/findings.py",
            ("envdoctor.settings", "envdoctor.rules", "envdoctor.probes", "envdoctor.engine"),
        ),
        ("util/sizes.py", ("envdoctor.",)),
        ("settings.py", ("envdoctor.rules", "envdoctor.probes", "envdoctor.engine", "envdoctor.cli")),
    ],
)
def test_a_lower_layer_imports_nothing_above_it(module: str, above: tuple[str, ...]) -> None:
    imported = imported_modules(PACKAGE / module)
    assert not {m for m in imported if m.startswith(above)}, imported


def _names(rules: list[tuple[str, str]] | None = None) -> Names:
    def listed() -> list[tuple[str, str]]:
        if rules is None:
            raise AssertionError("the rules were asked for though no option names a rule")
        return rules

    return Names(probes=("alpha", "beta"), rules=listed)


def test_settings_judge_names_by_what_the_caller_hands_in(tmp_path: Path) -> None:
    names = _names([("ED001", "first-rule"), ("ED002", "second-rule")])
    settings = resolve({"ignore": "first-rule,ed002", "only": "beta"}, cwd=str(tmp_path), names=names)
    assert settings.ignore == ("ED001", "ED002")
    assert settings.only == ("beta",)
    with pytest.raises(
        ExpectationError, match=r"^--skip 'gamma': gamma is not a probe \(known: alpha, beta\)"
    ):
        resolve({"skip": "gamma"}, cwd=str(tmp_path), names=names)
    with pytest.raises(ExpectationError, match=r"^envdoctor.require\(ignore='ED003'\): ED003 is not a rule"):
        from_keywords({"ignore": "ED003"}, names)


def test_the_rules_are_asked_for_only_when_an_option_names_one(tmp_path: Path) -> None:
    settings = resolve({"require-gpu": True, "skip": "alpha"}, cwd=str(tmp_path), names=_names())
    assert settings.expectations.gpu and settings.skip == ("alpha",)


def test_expectation_keys_are_the_models_keys() -> None:
    """settings.KEYS parse into the model's fields; the model names each key as the report shows it."""
    model = {f"expectations.{f.name}": f.metadata["key"] for f in fields(Expectations)}
    parsed = {k.target: k.name for k in KEYS if k.target.startswith("expectations.")}
    assert parsed == model
