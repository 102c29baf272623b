"""Windows load errors that the VC++ redistributable does not cure: the page file (ED609), torch
2.4.0's fbgemm.dll (ED610), an older copy of one of torch's DLLs loading first (ED611), and ED604
no longer prescribing a redistributable that is new enough."""

from __future__ import annotations

import dataclasses

from envdoctor.engine import diagnose
from envdoctor.model.findings import Finding, Interpreter, ProbeResult, ProbeStatus
from envdoctor.probes.torch_build import PythonError, TorchFacts
from envdoctor.rules import RULES_BY_CODE
from envdoctor.rules.base import RuleContext
from envdoctor.rules.windows.load_errors import load_failures
from tests.host_builder import WINDOWS_11
from tests.scenario_fixtures import SCENARIOS, Scenario
from tests.support import PYTHON


def _findings(scenario: Scenario) -> dict[str, Finding]:
    snap = scenario.snapshot()
    return {f.code: f for f in diagnose(snap.platform, snap.interpreter, snap.probes).findings}


def _alone(scenario: Scenario, code: str) -> Finding:
    snap = scenario.snapshot()
    (found,) = diagnose(snap.platform, snap.interpreter, snap.probes, rules=[RULES_BY_CODE[code]]).findings
    return found


def _all_commands(findings: dict[str, Finding]) -> list[str]:
    return [c for f in findings.values() for fix in f.fixes for c in fix.commands]


def test_paging_file_is_the_cause_not_the_redistributable() -> None:
    findings = _findings(SCENARIOS["win10-paging-file-winerror-1455-cudnn"]())
    cause = findings["ED609"]
    assert "[WinError 1455]" in cause.title and "16.0 GiB of RAM" in cause.detail
    assert "AutomaticManagedPagefile" in cause.fixes[0].commands[0]
    assert cause.fixes[1].commands == ("SystemPropertiesPerformance.exe",)
    assert "num_workers" in cause.fixes[2].summary
    assert findings["ED604"].folded_under == "ED609" and findings["ED002"].folded_under == "ED609"
    assert not any("vc_redist" in c or "VCRedist" in c for c in _all_commands(findings))


def test_paging_file_from_import_torch_alone() -> None:
    """Without the Windows probe (it failed, or an older snapshot), torch's own message is enough."""
    message = (
        "[WinError 1455] The paging file is too small for this operation to complete. Error loading "
        '"C:\\env\\Lib\\site-packages\\torch\\lib\\caffe2_detectron_ops_gpu.dll" or one of its dependencies.'
    )
    torch = TorchFacts(
        installed=True, dist_version="1.13.1+cu117", import_error=PythonError("OSError", message)
    )
    probes = (
        ProbeResult("python", ProbeStatus.OK, 0.0, PYTHON),
        ProbeResult("torch", ProbeStatus.OK, 0.0, torch),
    )
    ctx = RuleContext.build(WINDOWS_11, Interpreter("C:\\env\\python.exe", "r"), probes)
    (failure,) = load_failures(ctx)
    assert (failure.dll, failure.winerror, failure.said) == (
        "caffe2_detectron_ops_gpu.dll",
        1455,
        "import torch",
    )
    report = diagnose(WINDOWS_11, Interpreter("C:\\env\\python.exe", "r"), probes)
    codes = {f.code: f.folded_under for f in report.findings}
    assert codes == {"ED609": None, "ED002": "ED609"}


def test_fbgemm_in_torch_240_is_a_known_regression_with_the_fixed_release() -> None:
    findings = _findings(SCENARIOS["win11-torch240-fbgemm-libomp140-winerror-126"]())
    cause = findings["ED610"]
    assert "libomp140.x86_64.dll" in cause.title and "fixed in 2.4.1" in cause.detail
    first, newest, older = cause.fixes
    assert "torch==2.4.1" in first.commands[0] and "torch==2.13.0" in newest.commands[0]
    # Going back to the release before the regression works too (LykosAI/StabilityMatrix#777).
    assert "torch==2.3.1" in older.commands[0] and "from before the regression" in older.summary
    assert findings["ED604"].folded_under == "ED610"
    # The redistributable 14.40 is there and new enough: ED604 on its own no longer prescribes it.
    alone = _alone(SCENARIOS["win11-torch240-fbgemm-libomp140-winerror-126"](), "ED604")
    assert "new enough for this torch, so the redistributable is not the fix" in alone.detail
    assert not any("vc_redist" in c or "VCRedist" in c for f in alone.fixes for c in f.commands)


def test_fbgemm_failure_in_another_release_is_not_the_regression() -> None:
    scenario = SCENARIOS["win11-torch240-fbgemm-libomp140-winerror-126"]()
    scenario.torch = dataclasses.replace(scenario.torch, dist_version="2.4.1+cu121")
    findings = _findings(scenario)
    assert "ED610" not in findings and findings["ED604"].folded_under is None


def test_an_older_copy_on_path_is_named_and_its_folder_removed() -> None:
    findings = _findings(SCENARIOS["win11-old-libiomp5md-on-path-winerror-127"]())
    cause = findings["ED611"]
    assert "libiomp5md.dll (5.0.2019.0)" in cause.title and "torch's own 5.0.2023.0" in cause.detail
    assert "IntelSWTools" in cause.fixes[0].summary and "-notin" in cause.fixes[0].commands[0]
    assert findings["ED604"].folded_under == "ED611" and findings["ED002"].folded_under == "ED611"


def test_an_older_copy_without_a_load_failure_is_not_ed611() -> None:
    scenario = SCENARIOS["win11-old-libiomp5md-on-path-winerror-127"]()
    child = scenario.host.children["dll_probe.py"]
    record = dict(child.records[0], status="ok", failures=[])
    scenario.host.children["dll_probe.py"] = dataclasses.replace(child, records=(record,))
    scenario.torch = dataclasses.replace(scenario.torch, import_error=None, version="2.5.1+cu124")
    assert "ED611" not in _findings(scenario)


def test_the_classic_vc_runtime_cases_still_prescribe_the_redistributable() -> None:
    for name in ("win11-store-python-no-vc-redist", "win11-torch291-vc-redist-1436-winerror-1114"):
        findings = _findings(SCENARIOS[name]())
        assert any("vc_redist" in c for c in _all_commands(findings)), name
        assert not {"ED609", "ED610", "ED611"} & set(findings), name
