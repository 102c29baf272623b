"""The plan says only what is true of the sources pip will use (issue 10, reviewer's round): the
"newest it allows" sentence, the default index's build of a release an overlay added, and the PyPI
mirror note beside a command that takes the build from a local folder. Real detection and planning
over this machine's scripted FakeHost (tests.machine_sources); the overlay is a real file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from envdoctor.install.plan import Route, plan
from envdoctor.install.session import Given, run
from envdoctor.knowledge import overlay
from envdoctor.knowledge.mirrors import pypi_default_url
from tests.install_support import text
from tests.machine_sources import PYTHON, this_machine

LOOPBACK_INDEX = "http://127.0.0.1:9/simple"  # the index a test's `envdoctor update` was given


def _overlay(folder: Path, default_index: str | None) -> None:
    row = {
        "torch": "2.16.0",
        "torchvision": None,  # this machine caps torchvision too: a torch-only release plans
        "torchaudio": None,
        "python": ["3.11", "3.13"],
        "cuda": ["13.0"],
        "rocm": [],
        "pypi_linux_x86_64_default": "cu130",
        "platforms": {"linux-x86_64": {"variants": ["cpu", "cu130"], "pypi": "cu130"}},
        "assumed": True,
    }
    data = {
        "schema": overlay.SCHEMA,
        "written": "2026-11-30T00:00:00Z",
        "sources": {"pytorch_index": "http://127.0.0.1:9/whl", "default_index": default_index},
        "releases": [row],
    }
    (folder / overlay.FILE_NAME).write_text(json.dumps(data), encoding="utf-8")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path))
    overlay.forget()
    try:
        yield tmp_path
    finally:
        monkeypatch.undo()
        overlay.forget()


def test_the_constraint_sentence_names_what_a_source_holds_and_why_it_was_not_taken(cache: Path) -> None:
    """pip caps torch at 2.14.1; the overlay lists 2.16.0; /opt/pypi-more holds torch 2.14.1, but
    PyPI's unlabelled build, a release envdoctor's data does not list: 2.13.0 is not "the newest it
    allows" of everything, only of envdoctor's data, and the sentence says why 2.14.1 is not it."""
    _overlay(cache, LOOPBACK_INDEX)
    session = run(Given(), this_machine().host)
    assert session.plan.torch == "2.13.0" and session.plan.route is Route.LOCAL
    assert session.plan.warnings[0].startswith(
        "pip's constraint torch<=2.14.1 (/etc/xdg/pip/constraints.txt, line 2) rules out torch 2.16.0; "
        "this is torch 2.13.0, the newest release in envdoctor's data that it allows "
        "(file:///opt/pypi-more/simple holds torch 2.14.1: a release envdoctor's data does not list; "
        "the build without a local label, not the cpu one). To lift it:"
    ), session.plan.warnings[0]


def test_the_default_index_build_of_an_overlay_release_is_claimed_only_for_the_index_it_was_read_from(
    cache: Path,
) -> None:
    """The overlay read 2.16.0's cu130 build from a loopback index; pip uses its default index: the
    plan must not say the default index has that build."""
    _overlay(cache, LOOPBACK_INDEX)
    session = run(Given(torch="2.16.0"), this_machine("3.13.1", constraint="torch<3").host)
    assert session.plan.route is Route.OFFLINE, session.plan.reason
    assert not [s for s in session.plan.suggestions if "the default index answered" in s]
    # the same overlay read from the index pip uses: then the claim is true, and made
    _overlay(cache, pypi_default_url())
    overlay.forget()
    session = run(Given(torch="2.16.0"), this_machine("3.13.1", constraint="torch<3").host)
    assert any(
        "the default index answered and has torch 2.16.0's cu130 build" in s for s in session.plan.suggestions
    )


def test_the_pypi_mirror_note_is_left_out_when_the_build_comes_from_the_find_links_folder() -> None:
    machine = this_machine()
    machine.host.environ["PIP_INDEX_URL"] = "https://alice:secret@pypi.example.org/simple"
    session = run(Given(offline=True), machine.host)
    assert [text(c) for c in session.plan.commands] == [f"{PYTHON} -m pip install torch==2.13.0+cpu"]
    assert not [w for w in session.plan.warnings if "download.pytorch.org" in w], session.plan.warnings


def test_an_installed_torch_the_configured_constraint_rules_out_is_named() -> None:
    """A re-badged torch 2.15.0 installed while pip caps torch at 2.14.1: the plan says pip's next
    torch-related install will not resolve (or moves it); a torch within the cap gets no such note."""
    session = run(Given(), this_machine().host)
    within = plan(replace(session.target, installed_torch="2.13.0+cpu"))
    assert not [w for w in within.warnings if "violates" in w]
    result = plan(replace(session.target, installed_torch="2.15.0+cpu"))
    assert (
        "the installed torch 2.15.0+cpu violates pip's constraint torch<=2.14.1 "
        "(/etc/xdg/pip/constraints.txt, line 2): the next pip install of anything that requires torch "
        "fails to resolve, or replaces it. To lift it:"
    ) in " ".join(result.warnings)
