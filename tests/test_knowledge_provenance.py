"""Provenance inside the repository: every knowledge record cites a public reference, and no
internal marker (a private notes file, "[weak]") ever reaches what a user reads."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from envdoctor import knowledge
from envdoctor.host.fake import CHILD_NOT_FOUND, FakeHost
from envdoctor.install.request import Given
from envdoctor.install.session import run
from envdoctor.knowledge import DATA_DIR, load_table, mirrors
from envdoctor.knowledge.archs import arch_list
from envdoctor.knowledge.provenance import PUBLIC_REFERENCE, Provenance, references
from envdoctor.knowledge.windows import runtime_minimum
from envdoctor.render.install_report import render_json, render_text
from envdoctor.render.markdown import render_markdown
from envdoctor.rules import RULES
from envdoctor.rules.base import RuleContext
from envdoctor.rules.fixes import install_target
from envdoctor.snapshot import load
from tests.fixture_support import FIXTURES, console_text, fixture_names, fixture_report, stable_json

TABLES = sorted(path.name for path in DATA_DIR.glob("*.json"))
# What must never appear in the data or in output: private notes files and their markers.
INTERNAL = re.compile(r"[\w-]*_facts\.md|shared/docs|\[weak\]|\[derived\]")


def _walk(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, f"{path}/{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}/{index}")
    else:
        yield path, value


def _records(value: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(value, dict):
        yield path, value
        for key, item in value.items():
            yield from _records(item, f"{path}/{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _records(item, f"{path}/{index}")


def _source_fields(table: dict[str, Any]) -> Iterator[tuple[str, str, Any]]:
    for path, record in _records(table):
        for key, value in record.items():
            if key == "source" or key.endswith("_source"):
                yield path, key, value


def test_the_tables_are_the_ones_this_test_knows() -> None:
    assert len(TABLES) >= 9 and "mirrors.json" in TABLES and "releases.json" in TABLES


@pytest.mark.parametrize("name", TABLES)
def test_every_source_is_a_public_reference(name: str) -> None:
    table = load_table(name)
    fields = list(_source_fields(table))
    assert fields, f"{name} cites nothing"
    assert "source" in table, f"{name} has no table-level source"
    for path, key, value in fields:
        assert isinstance(value, (str, list)) and value, f"{name}{path}/{key} is empty"
        for reference in references(value):
            where = f"{name}{path}/{key}: {reference!r}"
            assert PUBLIC_REFERENCE.match(reference), f"not a URL or owner/repo@commit:path: {where}"
            assert not INTERNAL.search(reference), where
            if not reference.startswith(("http://", "https://")):
                # A file in a repository: a commit pins what was read, a path names the file.
                repo, _, rest = reference.partition("@")
                commit, _, file_path = rest.partition(":")
                assert repo.count("/") == 1 and re.fullmatch(r"[0-9a-f]{7,40}", commit) and file_path, where


@pytest.mark.parametrize("name", TABLES)
def test_no_string_in_the_data_names_private_notes(name: str) -> None:
    for path, value in _walk(load_table(name)):
        if isinstance(value, str):
            assert not INTERNAL.search(value), f"{name}{path}: {value!r}"
    raw = (DATA_DIR / name).read_text(encoding="utf-8")
    assert not INTERNAL.search(raw)


@pytest.mark.parametrize("name", TABLES)
def test_unverified_facts_say_so_and_still_cite_a_public_page(name: str) -> None:
    for path, record in _records(load_table(name)):
        for key, value in record.items():
            if key != "verified" and not key.endswith("_verified"):
                continue
            assert isinstance(value, bool), f"{name}{path}/{key}"
            prefix = key[: -len("verified")]
            assert record.get(f"{prefix}source"), f"{name}{path}: unverified, yet no public page cited"
            if not value and prefix == "" and name == "mirrors.json":
                assert record["status"] == "unverified", f"{name}{path}"


def test_every_known_index_cites_its_source_and_says_whether_it_is_confirmed() -> None:
    indexes = mirrors.known_indexes()
    assert indexes
    for index in indexes:
        assert index.source and all(PUBLIC_REFERENCE.match(s) for s in index.source), index.name
        assert not INTERNAL.search(index.note), index.name
    unconfirmed = {i.name for i in indexes if not i.verified}
    assert unconfirmed == {"aliyun-pytorch", "aliyun-conda", "huawei-conda"}


def test_typed_queries_carry_provenance() -> None:
    newest = knowledge.releases()[-1]
    inferred = arch_list(newest, "cu130", "linux-x86_64")
    assert inferred is not None and inferred.inferred
    assert inferred.provenance.verified is False and inferred.provenance.source
    older = knowledge.release("2.7.1")
    assert older is not None
    published = arch_list(older, "cu128", "linux-x86_64")
    assert published is not None and published.provenance.verified
    assert any("146265" in s for s in published.provenance.source)
    floor = runtime_minimum("2.9.1+cu128")
    assert floor is not None and any("196987" in s for s in floor.provenance.source)
    platform = knowledge.platform_source("windows-x86_64")
    assert isinstance(platform, Provenance) and platform.basis and "CPU-only" in platform.basis
    assert knowledge.platform_source("solaris-sparc") is None


def _fixture_install_output(name: str) -> str:
    snap = load(str(FIXTURES / f"{name}.json"))
    from envdoctor.install.plan import plan

    result = plan(install_target(RuleContext.build(snap.platform, snap.interpreter, snap.probes)))
    return render_text(result, (), "linux") + render_json(result, (), "linux")


@pytest.mark.parametrize("name", fixture_names())
def test_no_check_or_install_output_of_a_fixture_shows_internal_markers(name: str) -> None:
    report = fixture_report(name)
    outputs = {
        "console": console_text(report, verbose=True),
        "json": stable_json(report),
        "markdown": render_markdown(report, verbose=True),
        "install": _fixture_install_output(name),
    }
    for kind, text in outputs.items():
        found = INTERNAL.search(text)
        assert found is None, f"{name} {kind} output shows {found.group(0)!r}"


MIRROR_CHOICES = [*mirrors.pytorch_wheel_mirror_names(), "https://mirrors.aliyun.com/pypi/simple"]


@pytest.mark.parametrize("mirror", MIRROR_CHOICES)
@pytest.mark.parametrize("manager", ["pip", "uv", "conda"])
def test_install_with_any_mirror_never_shows_internal_markers(mirror: str, manager: str) -> None:
    torch = "2.5.1" if manager == "conda" else None  # the last release the conda channel has
    given = Given(
        torch=torch,
        os="linux",
        python="3.11",
        driver="560.94",
        gpus=("sm_86",),
        manager=manager,
        mirror=mirror,
    )
    session = run(given, FakeHost(children={"python_info.py": CHILD_NOT_FOUND}))
    os_name = session.target.os
    text = render_text(session.plan, session.inputs, os_name) + render_json(
        session.plan, session.inputs, os_name
    )
    found = INTERNAL.search(text)
    assert found is None, f"install --mirror {mirror} --manager {manager} shows {found.group(0)!r}"


def test_the_unverified_aliyun_mirror_is_called_unverified_in_plain_words() -> None:
    host = FakeHost(children={"python_info.py": CHILD_NOT_FOUND})  # no Python to examine: --python given
    session = run(Given(os="linux", python="3.11", mirror="aliyun"), host)
    text = render_text(session.plan, session.inputs, session.target.os)
    (note,) = [
        line for line in text.splitlines() if line.startswith("Note: Alibaba Cloud PyTorch wheel mirror")
    ]
    assert "is marked unverified in envdoctor's data: widely used in public scripts" in note
    assert json.loads(render_json(session.plan, session.inputs, session.target.os))["warnings"]


def test_rule_docs_cite_nothing_private() -> None:
    for rule in RULES:
        for text in (rule.summary, *(str(value) for value in vars(rule.doc).values())):
            assert not INTERNAL.search(text), rule.code
