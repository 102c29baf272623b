"""`envdoctor fleet` over many snapshots: groups, findings, unusable files, formats, and the shared
diagnosis of nodes whose facts agree (measurements aside)."""

from __future__ import annotations

import atexit
import dataclasses
import json
import random
import shutil
import tempfile
import typing
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from envdoctor.engine import judge
from envdoctor.fleet.digest import MEASUREMENTS, facts_digest
from envdoctor.fleet.offline import diagnose_files, list_entries
from envdoctor.fleet.render import render
from envdoctor.fleet.report import FleetReport, build_report
from envdoctor.probes import PROBES
from envdoctor.settings import Settings
from envdoctor.snapshot import snapshot_from_data
from tests.cli_support import run_cli
from tests.early import Job
from tests.fixture_support import FIXTURES, fixture_names
from tests.fleet_corpus import Corpus, write_corpus


def _fleet() -> tuple[Corpus, FleetReport]:
    """10,000 generated snapshots, written and judged in the background while other tests run."""
    folder = Path(tempfile.mkdtemp(prefix="envdoctor-fleet-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    corpus = write_corpus(folder / "snaps", 10_000)
    facts = diagnose_files(list_entries([str(corpus.folder)]), Settings())
    return corpus, build_report(facts, Settings(), "test")


FLEET = Job("envdoctor fleet: 10,000 generated snapshots", _fleet)
early_fleet = pytest.mark.early(FLEET)


@pytest.fixture
def corpus() -> Corpus:
    return FLEET.result()[0]


@pytest.fixture
def fleet_report() -> FleetReport:
    return FLEET.result()[1]


@early_fleet
def test_ten_thousand_snapshots_are_grouped_by_stack_and_verdict(
    corpus: Corpus, fleet_report: FleetReport
) -> None:
    facts = fleet_report.facts
    assert facts.node_count == corpus.nodes == 10_000
    sizes = sorted(((len(g.nodes), g.check.exit_code) for g in facts.groups), reverse=True)
    assert sizes == [
        (corpus.healthy, 0),
        (len(corpus.other_torch), 0),
        (len(corpus.extra_gpu), 0),
        (len(corpus.old_driver), 1),
    ]
    by_size = {len(g.nodes): g for g in facts.groups}
    assert list(by_size[len(corpus.other_torch)].nodes) == corpus.other_torch  # natural order
    assert list(by_size[len(corpus.old_driver)].nodes) == corpus.old_driver


@early_fleet
def test_corrupt_and_foreign_files_are_named_and_the_rest_diagnosed(
    corpus: Corpus, fleet_report: FleetReport
) -> None:
    reasons = {u.path: u.reason for u in fleet_report.facts.unreadable}
    assert set(reasons) == {str(corpus.corrupt), str(corpus.foreign)}
    assert reasons[str(corpus.corrupt)].startswith("not valid JSON")
    assert "found 'envdoctor.report/1'" in reasons[str(corpus.foreign)]
    (finding,) = [f for f in fleet_report.findings if f.code == "ED805"]
    assert str(corpus.corrupt) in finding.detail and str(corpus.foreign) in finding.detail
    assert "The other 10,000 nodes were diagnosed" in finding.detail


@early_fleet
def test_ten_thousand_snapshots_findings(corpus: Corpus, fleet_report: FleetReport) -> None:
    found = {(f.code, f.title.split(" differ")[0]): f for f in fleet_report.findings}
    torch = found[("ED801", "torch")]
    assert torch.title.startswith(
        f"torch differs across nodes: 2.4.1+cu124 on {len(corpus.other_torch)} nodes"
    )
    assert all(name in torch.detail for name in corpus.other_torch[:8])
    assert f"Most nodes ({corpus.nodes - len(corpus.other_torch):,} of 10,000): 2.5.1+cu124" in torch.detail
    gpus = found[("ED803", "GPUs")]
    assert "2 × NVIDIA A100-SXM4-80GB" in gpus.detail and corpus.extra_gpu[0] in gpus.detail
    failing = next(f for f in fleet_report.findings if f.code == "ED804")
    assert failing.title.startswith(f"{len(corpus.old_driver)} nodes fail their own check")
    assert "ED101 driver-too-old-for-torch-cuda" in failing.title
    assert all(name in failing.detail for name in corpus.old_driver)
    assert ("ED802", "NVIDIA driver branch") in found and ("ED802", "torchvision") in found
    assert fleet_report.exit_code == 1


@early_fleet
def test_fleet_cli_json_on_a_rack(
    corpus: Corpus, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rack = corpus.folder / "rack00"  # 500 nodes and the damaged file; the whole fleet is tested above
    result = run_cli(capsys, monkeypatch, "fleet", str(rack), "--format", "json", "--ignore", "ED802")
    data = json.loads(result.out)
    assert result.code == data["exit_code"] == 1
    assert data["schema"] == "envdoctor.fleet/1" and data["nodes"] == 500
    assert sum(len(g["nodes"]) for g in data["groups"]) == 500 and "node00001" in data["groups"][0]["nodes"]
    assert "ED802" not in {f["code"] for f in data["findings"]} and data["ignored"] == ["ED802"]
    assert [u["path"] for u in data["unreadable"]] == [str(corpus.corrupt)]


def _perturb(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        return {k: _scale(v, rng) if k in MEASUREMENTS else _perturb(v, rng) for k, v in value.items()}
    if isinstance(value, list):
        return [_perturb(v, rng) for v in value]
    return value


def _scale(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    scaled = value * rng.uniform(0.5, 2.0)
    return int(scaled) if isinstance(value, int) else scaled


@pytest.mark.parametrize("name", fixture_names())
def test_measurements_never_decide_a_finding(name: str) -> None:
    """What nodes.facts_digest sets aside must not change any finding's code, severity or title."""
    original = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    perturbed = _perturb(original, random.Random(name))
    perturbed["created"], perturbed["description"], perturbed["sources"] = "2030-01-01", "another", ["x"]
    assert perturbed != original or name == ""
    texts = [json.dumps(d, indent=1).encode() for d in (original, perturbed)]
    assert facts_digest(texts[0]) == facts_digest(texts[1])

    def summary(data: dict[str, Any]) -> list[tuple[str, str, str]]:
        snap = snapshot_from_data(data, name)
        report = judge(snap.platform, snap.interpreter, snap.probes, Settings())
        return [(f.code, f.severity.value, f.title) for f in report.findings]

    assert summary(original) == summary(perturbed)


def test_digest_sees_every_other_fact() -> None:
    text = (FIXTURES / "linux-a100-healthy.json").read_text(encoding="utf-8")
    assert facts_digest(text.encode()) != facts_digest(text.replace("550.54.15", "550.54.14").encode())
    assert facts_digest(text.encode()) != facts_digest(
        text.replace('"seconds": 0.004', '"seconds": "x"').encode()
    )
    quoted = b'{"a": "x\\"seconds\\": 1", "b\\"seconds": 1}'
    assert facts_digest(quoted) != facts_digest(quoted.replace(b"1}", b"2}"))  # not a key: kept


def _measured_fields(kind: type, seen: set[type]) -> set[str]:
    """Every dataclass field (at any depth of a probe's facts) named like a measurement."""
    if kind in seen or not dataclasses.is_dataclass(kind):
        return set()
    seen.add(kind)
    found = set()
    for field, hint in typing.get_type_hints(kind).items():
        if field in MEASUREMENTS:
            found.add(f"{kind.__name__}.{field}")
        for arg in (
            hint,
            *typing.get_args(hint),
            *(a for b in typing.get_args(hint) for a in typing.get_args(b)),
        ):
            if isinstance(arg, type):
                found |= _measured_fields(arg, seen)
    return found


def test_measurement_names_belong_to_measurements_only() -> None:
    """A new fact named like a measurement (seconds, ...) would be set aside by facts_digest: decide
    whether it is one, then update this list or nodes.MEASUREMENTS."""
    seen: set[type] = set()
    found = set().union(*(_measured_fields(p.facts_type, seen) for p in PROBES))
    assert found == {
        "SystemFacts.memory_available_bytes",
        "SystemFacts.disk_free_bytes",
        "TorchFacts.import_seconds",
        "CompanionLoad.seconds",
        "ExtensionLoad.seconds",  # how long loading a torch extension took
        "ReachCheck.seconds",  # how long reaching a package index took
        "SmokeFacts.seconds",
        "SmokeDevice.seconds",
        "SmokeDevice.memory_free_before",
        "SmokeDevice.memory_free_after",
        "SmokeDevice.peak_allocated",
        "SmokeStep.seconds",
        "SmokeStep.time_per_iter",
        "SmokeStep.max_error",
    }


def _snapshots_only(folder: Path) -> Path:
    """The recorded machines alone, as a fleet's folder holds them (fixtures/ also keeps the corpus,
    whose entries are no snapshots: a fleet run would count each as an unreadable node)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in fixture_names():
        shutil.copyfile(FIXTURES / f"{name}.json", folder / f"{name}.json")
    return folder


@pytest.fixture(scope="module")
def fixture_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _snapshots_only(tmp_path_factory.mktemp("fleet") / "nodes")


@pytest.fixture(scope="module")
def fixtures_report(fixture_folder: Path) -> FleetReport:
    facts = diagnose_files(list_entries([str(fixture_folder)]), Settings())
    return build_report(facts, Settings(), "fixtures")


@pytest.mark.parametrize("fmt", ["console", "json", "markdown", "github", "junit"])
@pytest.mark.slow
def test_every_format_renders_the_fleet(fixtures_report: FleetReport, fmt: str) -> None:
    text = render(fixtures_report, fmt)
    codes = {f.code for f in fixtures_report.findings}
    if fmt == "json":
        data = json.loads(text)
        assert {f["code"] for f in data["findings"]} == codes
    elif fmt == "junit":
        root = ET.fromstring(text)
        nodes = root.find("testsuite[@name='envdoctor.fleet.nodes']")
        assert nodes is not None and int(nodes.get("tests", "0")) == fixtures_report.facts.node_count
        failing = sum(len(g.nodes) for g in fixtures_report.facts.groups if g.check.fails)
        assert int(nodes.get("failures", "0")) == failing
    elif fmt == "github":
        lines = text.splitlines()
        assert lines[-1].startswith("envdoctor fleet: problems found")
        assert sum(line.startswith("::error title=ED8") for line in lines) == sum(
            f.severity.value == "error" for f in fixtures_report.findings
        )
    else:
        assert all(code in text for code in codes)
        assert "linux-a100-healthy" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["fleet", "no/such/place"], "no/such/place: no such file or folder"),
        (["fleet", "--strict", "tests/golden"], "files is a usable snapshot"),
    ],
)
def test_fleet_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    result = run_cli(capsys, monkeypatch, *args)
    assert result.code == 2 and result.err.count("\n") == 1 and message in result.err


def test_an_empty_folder_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_cli(capsys, monkeypatch, "fleet", str(tmp_path))
    assert result.code == 2 and "no *.json snapshot files" in result.err


def test_a_healthy_fleet_exits_0_with_a_progress_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(3):
        (tmp_path / f"n{number}.json").write_bytes((FIXTURES / "linux-a100-healthy.json").read_bytes())
    result = run_cli(capsys, monkeypatch, "fleet", str(tmp_path), "--progress")
    assert result.code == 0, result.out
    assert "No problems found" not in result.out and "Fleet: no problems found" in result.out
    assert "3 nodes  ok" in result.out and "n0, n1, n2" in result.out


@pytest.mark.slow
def test_helper_processes_give_the_same_verdicts(
    monkeypatch: pytest.MonkeyPatch, fixture_folder: Path
) -> None:
    """Past the first files, helper processes digest the rest: the outcome is the same."""
    import envdoctor.fleet.offline as offline

    alone = diagnose_files(list_entries([str(fixture_folder)]), Settings(), workers=1)
    monkeypatch.setattr(offline, "SERIAL", 5)
    monkeypatch.setattr(offline, "CHUNK", 4)
    helped = diagnose_files(list_entries([str(fixture_folder)]), Settings(), workers=2)
    assert helped == alone and alone.node_count == len(fixture_names())
