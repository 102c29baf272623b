"""The rule catalogue `rules` and `explain` read: the registry's words, cached, never stale."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from envdoctor import paths, rule_catalogue
from envdoctor.knowledge.symptoms import symptom
from envdoctor.rule_catalogue import explain_text, fingerprint, from_registry, load, rules_json, rules_text
from envdoctor.rules import RULES


def old_explain(code: str) -> str:
    """`explain` as cli.py printed it straight from the registry before the catalogue."""
    rule = next(r for r in RULES if r.code == code)
    header = (
        f"{rule.code} {rule.name} ({rule.severity.value}; about: {rule_catalogue.AREA_TITLES[rule.area]})"
    )
    lines = [header, f"{rule.summary}\n"]
    for heading, text in (
        ("What it checks", rule.doc.what),
        ("Why it matters", rule.doc.why),
        ("How to fix", rule.doc.fix),
        ("Example", rule.doc.example),
    ):
        lines.append(f"{heading}:\n  {text}\n")
    lines += _usual_causes(code)
    if rule.consequence_of:
        causes = ", ".join(rule.consequence_of)
        lines.append(f"Folded under:\n  {causes}, when one of them is found (one root cause, one finding)\n")
    return "".join(f"{line}\n" for line in lines)


def _usual_causes(code: str) -> list[str]:
    """A symptom rule's causes as knowledge/symptoms.json holds them, for the system the tests run on."""
    found = symptom(code)
    if found is None:
        return []
    here = rule_catalogue.this_system()
    lines = ["Usual causes (a finding puts first what this machine's facts show):"]
    shown = [c for c in found.causes if c.applies_on(here) and c.check_for(here) is not None]
    for number, cause in enumerate(shown, 1):
        lead = " " * len(f"  {number}. ")
        commands = "; ".join(cause.fix.commands_for(here))
        fix = cause.fix.summary + (f" ({commands})" if commands else "")
        lines += [
            f"  {number}. {cause.title}",
            f"{lead}tell: `{cause.check_for(here)}` shows {cause.shows}".replace("{python}", "python"),
            f"{lead}fix: {fix}".replace("{python}", "python"),
        ]
        if cause.named_by:
            lines.append(f"{lead}named exactly by: {', '.join(cause.named_by)}")
    assert len(shown) >= 3, f"{code}: a symptom rule lists its usual causes"
    return [*lines[:-1], lines[-1] + "\n"]


def test_the_catalogue_says_what_the_registry_says() -> None:
    entries = from_registry()
    assert [e[0] for e in entries] == [r.code for r in RULES]
    unwrapped = 10_000  # a terminal wide enough for every paragraph on one line
    for entry in entries:
        docs = f"Docs: {rule_catalogue.docs_url(entry[0])}\n"
        assert explain_text(entry, unwrapped) == old_explain(entry[0]) + docs
    assert rules_text(entries, unwrapped) == "code   severity  what it catches [name]\n" + "".join(
        f"{r.code}  {r.severity.value:<8}  {r.summary} [{r.name}]\n" for r in RULES
    )
    assert json.loads(rules_json(entries)) == [
        {"code": r.code, "name": r.name, "severity": r.severity.value, "area": r.area, "summary": r.summary}
        for r in RULES
    ]


def test_found_by_code_in_any_case_or_by_name() -> None:
    entries = from_registry()
    first = RULES[0]
    assert rule_catalogue.find(entries, f" {first.code.lower()} ") == rule_catalogue.find(entries, first.name)
    assert rule_catalogue.find(entries, "ED000") is None


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A stand-in package tree: what the fingerprint watches."""
    root = tmp_path / "pkg"
    (root / "rules").mkdir(parents=True)
    (root / "rules" / "a.py").write_text("x = 1\n")
    (root / "knowledge.json").write_text("{}\n")
    return root


def test_a_second_run_reads_the_cache_and_an_edit_rebuilds_it(
    package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    environ = {"ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache")}
    built = load(environ, str(package))
    assert built == from_registry()
    assert len(list((tmp_path / "cache").iterdir())) == 1

    def no_registry() -> tuple[rule_catalogue.Entry, ...]:
        raise AssertionError("the registry was imported although the cache matched")

    monkeypatch.setattr(rule_catalogue, "from_registry", no_registry)
    assert load(environ, str(package)) == built

    source = package / "rules" / "a.py"
    before = fingerprint(str(package))
    source.write_text("x = 22\n")  # another size
    os.utime(source, ns=(1, 1))
    assert fingerprint(str(package)) != before
    edited = (("ED999", "edited", "error", "area", "summary", "w", "y", "f", "e", "", "", ""),)
    monkeypatch.setattr(rule_catalogue, "from_registry", lambda: edited)
    assert load(environ, str(package)) == edited
    monkeypatch.setattr(rule_catalogue, "from_registry", no_registry)
    assert load(environ, str(package)) == edited  # and the rebuilt catalogue was cached


@pytest.mark.parametrize(
    "content",
    ["not json", "[]", '{"schema": "envdoctor.rule-catalogue/1", "key": "KEY", "rules": [["ED1"]]}'],
    ids=["garbage", "not-a-table", "short-row"],
)
def test_a_damaged_cache_is_rebuilt(content: str, package: Path, tmp_path: Path) -> None:
    environ = {"ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache")}
    load(environ, str(package))
    (cached,) = (tmp_path / "cache").iterdir()
    cached.write_text(content.replace("KEY", fingerprint(str(package))))
    assert load(environ, str(package)) == from_registry()
    assert json.loads(cached.read_text())["key"] == fingerprint(str(package))


def test_an_unwritable_cache_costs_only_time(package: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    environ = {"ENVDOCTOR_CACHE_DIR": str(blocker / "cache")}  # a folder inside a file: no way
    assert load(environ, str(package)) == from_registry()


@pytest.mark.parametrize(
    ("platform", "environ", "expected"),
    [
        ("linux", {"HOME": "/h"}, ("/h", ".cache", "envdoctor")),
        ("linux", {"HOME": "/h", "XDG_CACHE_HOME": "/x"}, ("/x", "envdoctor")),
        ("darwin", {"HOME": "/h"}, ("/h", "Library", "Caches", "envdoctor")),
        ("win32", {"LOCALAPPDATA": "L"}, ("L", "envdoctor", "Cache")),
        ("win32", {}, None),
        ("linux", {"HOME": "/h", "ENVDOCTOR_CACHE_DIR": "/e"}, ("/e",)),
    ],
)
def test_cache_folder_per_platform(
    platform: str, environ: dict[str, str], expected: tuple[str, ...] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(paths.sys, "platform", platform)
    assert paths.cache_dir(environ) == (None if expected is None else os.path.join(*expected))


def test_explain_names_the_area_in_words_and_suggests_a_near_code() -> None:
    """Issue 13 item 25: no package names ("area: nvml"), and "did you mean" for a near miss."""
    from envdoctor.cli.lean import CommandError, explain

    assert set(rule_catalogue.AREA_TITLES) == {r.area for r in RULES} | {"plugins"}
    text = explain("ED101")
    assert "(error; about: NVIDIA driver)" in text.splitlines()[0] and "area:" not in text
    for typed, meant in (
        ("ED1011", "ED101"),
        ("ed10", "ED101"),
        ("ED1O3", "ED103"),
        ("edl04", "ED104"),
        ("ED60", "ED601"),
        ("driver-to-old-for-torch-cuda", None),
    ):
        with pytest.raises(CommandError) as caught:
            explain(typed)
        assert "did you mean" in str(caught.value)
        if meant:
            assert f"did you mean {meant}?" in str(caught.value)
    with pytest.raises(CommandError) as far:
        explain("completely-unrelated")
    assert "did you mean" not in str(far.value)
