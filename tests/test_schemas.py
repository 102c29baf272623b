"""The JSON Schemas shipped in envdoctor/schemas describe what envdoctor writes: every fixture (a
snapshot), its snapshot written again, its JSON report, and `install` JSON outputs validate; the
shipped files are what tests/regen_schemas.py makes from the typed model."""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

import jsonschema
import pytest

from envdoctor.engine import diagnose
from envdoctor.install.plan import InstallTarget, plan
from envdoctor.install.session import Input
from envdoctor.knowledge.gpus import parse_gpu
from envdoctor.render.install_report import render_json as render_install
from envdoctor.render.json_report import render_json
from envdoctor.snapshot import dumps, load
from tests.fixture_support import FIXTURES, fixture_names, fixture_report
from tests.regen_schemas import SCHEMA_DIR, schemas
from tests.regen_schemas import dumps as dump_schema


def _shipped(name: str) -> dict[str, Any]:
    # Read as an installed package would: the files must be package data, not just in the repo.
    text = resources.files("envdoctor").joinpath("schemas", name).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


@functools.cache
def _validator(name: str) -> jsonschema.protocols.Validator:
    schema = _shipped(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("name", sorted(schemas()))
def test_shipped_schemas_are_made_from_the_model(name: str) -> None:
    assert (SCHEMA_DIR / name).read_text(encoding="utf-8") == dump_schema(schemas()[name]), (
        f"envdoctor/schemas/{name} is stale: run `python -m tests.regen_schemas`"
    )


@pytest.mark.parametrize("name", fixture_names())
def test_every_fixture_snapshot_and_report_validates(name: str) -> None:
    snapshot_schema = _validator("snapshot-1.json")
    report_schema = _validator("report-1.json")
    path = FIXTURES / f"{name}.json"
    snapshot_schema.validate(json.loads(path.read_text(encoding="utf-8")))
    snap = load(str(path))
    snapshot_schema.validate(json.loads(dumps(snap)))
    report = diagnose(snap.platform, snap.interpreter, snap.probes, source=name)
    report_schema.validate(json.loads(render_json(report)))
    # As `check --from` renders it, with the fixture's project expectations when it has some.
    report_schema.validate(json.loads(render_json(fixture_report(name))))


INSTALL_TARGETS = {
    "linux-gpu": InstallTarget(os="linux", driver_version="570.86", python="3.11"),
    "windows-cpu": InstallTarget(os="windows", python="3.12"),
    "uv": InstallTarget(os="linux", driver_version="550.54.14", manager="uv"),
    "conda-aarch64": InstallTarget(os="linux", machine="aarch64", driver_version="570.86", manager="conda"),
    "nothing-fits": InstallTarget(os="macos", machine="x86_64", torch="2.5.1"),
}


@pytest.mark.parametrize("name", list(INSTALL_TARGETS))
def test_install_outputs_validate(name: str) -> None:
    target = INSTALL_TARGETS[name]
    gpu = parse_gpu("sm_86")
    if target.driver_version and gpu is not None:
        target = InstallTarget(**{**target.__dict__, "gpu_capabilities": (gpu.capability,)})
    inputs = (Input("OS", target.os, "given"), Input("Mirror", "https://u:tok@h.example/simple", "detected"))
    data = json.loads(render_install(plan(target), inputs, target.os))
    _validator("install-1.json").validate(data)


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("snapshot-1.json", lambda d: d.update(sources=5)),
        ("snapshot-1.json", lambda d: d["probes"][0].update(status="ok", facts=None)),
        ("snapshot-1.json", lambda d: d["platform"].pop("machine")),
        ("report-1.json", lambda d: d.update(exit_code=3)),
        ("report-1.json", lambda d: d["findings"].append({"code": "X1"})),
    ],
)
def test_schemas_reject_what_does_not_fit(name: str, change: Any) -> None:
    snap = load(str(FIXTURES / "linux-a100-healthy.json"))
    if name.startswith("snapshot"):
        data = json.loads(dumps(snap))
    else:
        data = json.loads(render_json(diagnose(snap.platform, snap.interpreter, snap.probes)))
    change(data)
    with pytest.raises(jsonschema.ValidationError):
        _validator(name).validate(data)
