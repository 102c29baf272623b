"""The registries are complete and every entry is finished.

Rules: every rule module's rules are registered, codes and names are well formed, a rule's area is
its package, its docs are sentences with an example, some fixture triggers it, `envdoctor explain`
prints it. Probes: every probe is registered and some test module runs it.
"""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import envdoctor.probes
import envdoctor.rules
from envdoctor.cli.lean import explain as explain_body
from envdoctor.probes import PROBES
from envdoctor.probes.base import ProbeSpec
from envdoctor.rule_catalogue import AREA_TITLES
from envdoctor.rules import RULES
from envdoctor.rules.base import Rule
from envdoctor.rules.expectations.requirements import AREA as EXPECTATIONS_AREA
from envdoctor.rules.expectations.requirements import RULE_OF_KEY
from tests.cli_support import run_cli

TESTS = Path(__file__).resolve().parent
GOLDEN = TESTS / "golden"

# The hundreds of a code name its area (the numbering envdoctor/rules/__init__.py describes).
AREA_OF_HUNDREDS = {
    "0": "torch",  # is torch installed and importable
    "1": "nvml",  # the driver
    "2": "torch",  # the build
    "3": "torch",  # GPU architecture, the smoke test
    "4": "toolkit",
    "5": "mirrors",
    "6": "windows",
    "7": EXPECTATIONS_AREA,
    "8": "fleet",  # many nodes judged together (envdoctor fleet, envdoctor cluster)
    "9": "envdoctor",  # envdoctor's own trouble: a probe that failed
}
# Ranges inside a hundred that belong to another area, by their first two digits.
AREA_OF_TENS = {
    "14": "gpu_vendors",  # AMD, Intel and Apple GPUs, beside NVIDIA's driver rules
    "15": "gpu_vendors",
    "16": "environment",  # variables that steer CUDA and torch (CUDA_VISIBLE_DEVICES, ...)
}
SENTENCE_END = (".", "!", "?", ".)", ".'", '."')


def _modules(package: ModuleType) -> Iterator[ModuleType]:
    """Every module below `package`, imported."""
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        yield importlib.import_module(info.name)


def _registered(rule: Rule) -> bool:
    return any(rule is known for known in RULES)


def _rule_id(rule: Rule) -> str:
    return rule.code


# --- rules: registered ---------------------------------------------------------------------------


def test_every_rule_in_every_module_is_registered() -> None:
    """A rule module left out of its area's list, or an area left out of envdoctor.rules, fails here."""
    seen = 0
    for module in _modules(envdoctor.rules):
        for name, value in vars(module).items():
            if isinstance(value, Rule):
                seen += 1
                assert _registered(value), f"{module.__name__}.{name} ({value.code}) is not in RULES"
    assert seen >= len(RULES), "the walk found fewer rules than are registered"


def test_every_area_package_is_in_the_registry() -> None:
    areas = sorted(info.name for info in pkgutil.iter_modules(envdoctor.rules.__path__) if info.ispkg)
    assert areas, "no area packages found under envdoctor.rules"
    for area in areas:
        package = importlib.import_module(f"envdoctor.rules.{area}")
        rules: tuple[Rule, ...] = getattr(package, "RULES", ())
        assert rules, f"envdoctor.rules.{area} lists no rules"
        assert all(_registered(r) for r in rules), f"envdoctor.rules.{area} is not in envdoctor.rules.RULES"
    assert {r.area for r in RULES} == set(areas)


def test_registered_rules_are_declared_in_their_area_package() -> None:
    for rule in RULES:
        module = rule.check.__module__
        parts = module.split(".")
        assert len(parts) == 4 and parts[:2] == ["envdoctor", "rules"], f"{rule.code} is defined in {module}"
        assert rule.area == parts[2], f"{rule.code}: area {rule.area!r}, package {parts[2]!r}"
        # The decorator replaces the function: the module name holds the Rule, next to its check.
        assert getattr(importlib.import_module(module), rule.check.__name__) is rule, rule.code


# --- rules: well formed --------------------------------------------------------------------------


def test_codes_and_names_are_well_formed_and_unique() -> None:
    codes = [r.code for r in RULES]
    names = [r.name for r in RULES]
    assert len(set(codes)) == len(codes), "duplicate codes"
    assert len(set(names)) == len(names), "duplicate names"
    assert codes == sorted(codes), "RULES is listed by code"
    for rule in RULES:
        assert re.fullmatch(r"ED\d{3}", rule.code), rule.code
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", rule.name), (
            f"{rule.code}: {rule.name!r} is not kebab-case"
        )
        area = AREA_OF_TENS.get(rule.code[2:4]) or AREA_OF_HUNDREDS.get(rule.code[2])
        assert area == rule.area, f"{rule.code} in area {rule.area}"


def test_areas_are_probe_names() -> None:
    """One vocabulary: a rule's area is the probe whose facts it judges, or one of three own areas
    (the fleet's rules judge many nodes' facts at once)."""
    probes = {p.name for p in PROBES}
    for rule in RULES:
        assert rule.area in probes | {EXPECTATIONS_AREA, "envdoctor", "fleet"}, (
            f"{rule.code}: area {rule.area!r}"
        )


def test_every_expectation_key_is_judged_by_an_expectations_rule() -> None:
    by_code = {r.code: r for r in RULES}
    for key, code in RULE_OF_KEY.items():
        assert code in by_code and by_code[code].area == EXPECTATIONS_AREA, f"{key} -> {code}"


@pytest.mark.parametrize("rule", RULES, ids=_rule_id)
def test_docs_are_sentences_with_an_example(rule: Rule) -> None:
    assert rule.summary.strip() and "\n" not in rule.summary, f"{rule.code}: summary is one line"
    for part in ("what", "why", "fix"):
        text = getattr(rule.doc, part).strip()
        assert len(text.split()) >= 4, f"{rule.code} doc.{part} is not a sentence: {text!r}"
        assert text.endswith(SENTENCE_END), f"{rule.code} doc.{part} does not end a sentence: {text!r}"
    assert rule.doc.example.strip(), f"{rule.code} has no example"


# --- rules: triggered and explained ---------------------------------------------------------------


def _golden_codes() -> set[str]:
    """The codes in the fixtures' findings goldens (tests/test_fixtures.py holds them to the reports)."""
    files = sorted(GOLDEN.glob("*.findings.json"))
    assert files, "no findings goldens"
    return {line.split()[0] for path in files for line in json.loads(path.read_text(encoding="utf-8"))}


def _why_corpus_codes() -> set[str]:
    """Rules only an error text can show (a runtime error no probe sees, the corpus's "why" mode):
    their situations are the corpus entries that `envdoctor why` diagnoses right."""
    from tests.corpus_support import entries, report_of, verdict

    return {e.expect.code for e in entries() if e.mode == "why" and verdict(e, report_of(e)) is None}


def test_every_rule_is_triggered_by_some_fixture() -> None:
    from tests.fleet_scenarios import triggered_codes  # fleet rules: their situations span nodes
    from tests.test_plugins import plugin_codes  # ED902: what loading a plugin that fails gives

    triggered = _golden_codes() | triggered_codes() | _why_corpus_codes() | plugin_codes()
    missing = sorted(r.code for r in RULES if r.code not in triggered)
    assert not missing, f"rules no fixture triggers (add a fixture under fixtures/): {missing}"
    unknown = sorted(triggered - {r.code for r in RULES})
    assert not unknown, f"goldens hold codes no rule has: {unknown}"


@pytest.mark.slow
def test_explain_prints_every_rule(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for rule in RULES:
        by_code = run_cli(capsys, monkeypatch, "explain", rule.code.lower())
        assert by_code.code == 0, f"{rule.code}: {by_code.err}"
        title = AREA_TITLES[rule.area]  # the area in words, not its package name
        assert by_code.out.startswith(f"{rule.code} {rule.name} ({rule.severity.value}; about: {title})")
        for heading, text in (
            ("What it checks:", rule.doc.what),
            ("Why it matters:", rule.doc.why),
            ("How to fix:", rule.doc.fix),
            ("Example:", rule.doc.example),
        ):
            # wrapped to the terminal: the paragraph's words follow its heading
            assert f"{heading} {text}" in " ".join(by_code.out.split()), f"{rule.code}: {heading}"
        # By name: the same command body cli.py calls; the command line itself takes one name below
        # (each in-process run builds typer's whole command tree again: half this test's CPU).
        assert explain_body(rule.name) == explain_body(rule.code.lower()), rule.name
    rule = RULES[0]
    by_name = run_cli(capsys, monkeypatch, "explain", rule.name)
    assert by_name.code == 0 and by_name.out == run_cli(capsys, monkeypatch, "explain", rule.code).out


# --- probes ----------------------------------------------------------------------------------------


def test_every_probe_module_is_registered() -> None:
    seen = 0
    for module in _modules(envdoctor.probes):
        for name, value in vars(module).items():
            if isinstance(value, ProbeSpec):
                seen += 1
                assert any(value is p for p in PROBES), f"{module.__name__}.{name} is not in PROBES"
    assert seen >= len(PROBES)
    names = [p.name for p in PROBES]
    assert len(set(names)) == len(names)


# A test runs a probe when it calls its collector or uses its spec or describe.
_PROBE_ENTRY_POINTS = {"collect", "PROBE", "describe"}


def _probe_modules_run_by(tree: ast.Module) -> set[str]:
    """The probe modules a test module reaches through one of their entry points."""
    reached: set[str] = set()
    aliases: dict[str, str] = {}  # local name -> envdoctor.probes.<module>
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "envdoctor.probes":
                for alias in node.names:
                    aliases[alias.asname or alias.name] = f"envdoctor.probes.{alias.name}"
            elif node.module.startswith("envdoctor.probes.") and any(
                alias.name in _PROBE_ENTRY_POINTS for alias in node.names
            ):
                reached.add(node.module)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("envdoctor.probes.") and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in _PROBE_ENTRY_POINTS
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        ):
            reached.add(aliases[node.value.id])
    return reached


def _probe_module(spec: ProbeSpec[Any]) -> str:
    return spec.collect.__module__


@pytest.mark.slow
def test_every_probe_has_a_test_module_that_runs_it() -> None:
    reached: dict[str, list[str]] = {}
    for path in sorted(TESTS.glob("test_*.py")):
        for module in _probe_modules_run_by(ast.parse(path.read_text(encoding="utf-8"))):
            reached.setdefault(module, []).append(path.name)
    untested = [f"{p.name} ({_probe_module(p)})" for p in PROBES if _probe_module(p) not in reached]
    assert not untested, f"probes no tests/test_*.py runs (call its collect, PROBE or describe): {untested}"


def test_the_probe_test_finder_sees_each_way_in() -> None:
    """The finder above must be able to say no: module aliases, direct imports, facts-only imports."""
    text = (
        "from envdoctor.probes import nvml, system as s\n"
        "from envdoctor.probes.mirrors import collect\n"
        "from envdoctor.probes.toolkit import ToolkitFacts\n"
        "import envdoctor.probes.windows as w\n"
        "nvml.collect(ctx); s.describe(f); w.PROBE\n"
    )
    found = _probe_modules_run_by(ast.parse(text))
    assert found == {
        "envdoctor.probes.nvml",
        "envdoctor.probes.system",
        "envdoctor.probes.mirrors",
        "envdoctor.probes.windows",
    }
