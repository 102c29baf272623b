"""The Windows probe on recorded registry/file-version/DLL-load answers, its child script, its rules."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from envdoctor.engine import diagnose
from envdoctor.host.base import ChildOutcome
from envdoctor.host.live import CHILD_DIR, LiveHost
from envdoctor.knowledge import windows as knowledge
from envdoctor.model.findings import Finding, Severity
from envdoctor.probes import windows
from envdoctor.probes.base import NotApplicable, ProbeContext
from envdoctor.probes.windows import WindowsFacts
from envdoctor.rules import RULES_BY_CODE
from tests.host_builder import LINUX
from tests.scenario_fixtures import REDIST_KEY, SCENARIOS, SYSTEM32, Scenario

CHILD = CHILD_DIR / "dll_probe.py"


def _facts(scenario: Scenario) -> WindowsFacts:
    return windows.collect(ProbeContext(host=scenario.host, target=scenario.target))


def _findings(scenario: Scenario) -> dict[str, Finding]:
    snap = scenario.snapshot()
    return {f.code: f for f in diagnose(snap.platform, snap.interpreter, snap.probes).findings}


def _standalone(scenario: Scenario, code: str) -> Finding:
    """A rule's finding as it reads on its own, before the report folds it under its cause."""
    snap = scenario.snapshot()
    (found,) = diagnose(snap.platform, snap.interpreter, snap.probes, rules=[RULES_BY_CODE[code]]).findings
    return found


def test_other_systems_cost_nothing() -> None:
    scenario = SCENARIOS["linux-cuda13-toolkit-no-driver-cpu-torch"]()
    assert scenario.platform == LINUX
    with pytest.raises(NotApplicable):
        _facts(scenario)
    assert scenario.host.calls == []  # no child, no registry, no file listing


def test_registry_both_views_and_version_forms() -> None:
    scenario = SCENARIOS["win11-torch291-vc-redist-1436-winerror-1114"]()
    facts = _facts(scenario)
    assert [(r.view, r.installed, r.version) for r in facts.redist] == [
        (64, True, "14.36.32532.0"),
        (32, True, "14.36.32532.0"),
    ]
    # Only the DWORDs (no Version string): still read.
    scenario.host.registry[(REDIST_KEY, 64)] = {
        "Installed": 1,
        "Major": 14,
        "Minor": 44,
        "Bld": 35208,
        "Rbld": 0,
    }
    del scenario.host.registry[(REDIST_KEY, 32)]
    again = _facts(scenario)
    assert [(r.view, r.version) for r in again.redist] == [(64, "14.44.35208.0")]
    assert again.redist_version == "14.44.35208.0"


def test_runtime_copies_carry_version_and_search_origin() -> None:
    facts = _facts(SCENARIOS["win11-conda-vc14-runtime-1438-loads-first"]())
    msvcp = {(f.origin, f.version) for f in facts.runtime("msvcp140.dll")}
    assert msvcp == {("app_dir", "14.38.33135.0"), ("system32", "14.44.35208.0")}
    loaded = facts.dll_load.module("msvcp140.dll")
    assert loaded is not None and (loaded.origin, loaded.version) == ("app_dir", "14.38.33135.0")
    assert [(f.origin, f.version) for f in facts.openmp_files] == [
        ("torch_lib", "5.0.2023.0"),
        ("dll_directory", "5.0.2024.0"),
    ]


def test_1114_with_an_old_redistributable() -> None:
    findings = _findings(SCENARIOS["win11-torch291-vc-redist-1436-winerror-1114"]())
    assert {"ED602", "ED604"} <= set(findings) and "ED603" not in findings
    ed602 = findings["ED602"]
    assert ed602.severity is Severity.ERROR
    assert "Caveat: Not documented by PyTorch" in ed602.detail
    first = ed602.fixes[0]
    assert first.link == "https://aka.ms/vc14/vc_redist.x64.exe"
    assert "'/install','/passive','/norestart'" in first.commands[1]
    assert any("torch==2.8.0" in c for fix in ed602.fixes for c in fix.commands)
    # One root cause, one finding: the DLL failure and the import failure fold under ED602.
    assert findings["ED604"].folded_under == "ED602" and findings["ED002"].folded_under == "ED602"
    assert findings["ED604"].fixes == () and ed602.folded_under is None
    ed604 = _standalone(SCENARIOS["win11-torch291-vc-redist-1436-winerror-1114"](), "ED604")
    assert "c10.dll" in ed604.title and "WinError 1114" in ed604.title
    # Fixes in the order experienced users try them: redistributable, (PATH), clean reinstall.
    assert "redistributable" in ed604.fixes[0].summary
    assert "Reinstall torch cleanly" in ed604.fixes[-1].summary
    assert ed604.fixes[-1].commands[0].endswith("-m pip uninstall -y torch torchvision torchaudio")


def test_redistributable_fine_but_older_copy_loads_first() -> None:
    findings = _findings(SCENARIOS["win11-conda-vc14-runtime-1438-loads-first"]())
    assert "ED602" not in findings
    ed603 = findings["ED603"]
    assert "The system's copy is fine (14.44.35208.0)" in ed603.detail
    assert "does not help" in ed603.detail
    assert 'vc14_runtime>=14.40"' in ed603.fixes[0].commands[0]
    assert not any("aka.ms" in (f.link or "") for f in ed603.fixes)  # the redist cannot help here
    # ED604 is folded under ED603; on its own it puts the known cause's fix first.
    assert findings["ED604"].folded_under == "ED603"
    ed604 = _standalone(SCENARIOS["win11-conda-vc14-runtime-1438-loads-first"](), "ED604")
    assert ed604.fixes[0] == ed603.fixes[0]
    assert "ED607" in findings


def test_older_copy_reached_through_path() -> None:
    """An old msvcp140.dll in a PATH folder that the DLL check saw loaded: remove it from PATH."""
    scenario = SCENARIOS["win11-torch291-vc-redist-1436-winerror-1114"]()
    tool = "C:\\Program Files\\SomeTool\\bin"
    host = scenario.host
    host.environ["PATH"] = f"{tool};" + host.environ["PATH"]
    for view in (64, 32):
        host.registry[(REDIST_KEY, view)] = {"Installed": 1, "Version": "v14.44.35208.00"}
    for name in ("msvcp140.dll", "vcruntime140.dll", "vcruntime140_1.dll"):
        host.file_versions[f"{SYSTEM32}\\{name}"] = "14.44.35208.0"
    scenario.machine.file(f"{tool}\\msvcp140.dll", version="14.29.30133.0")
    child = host.children["dll_probe.py"]
    assert isinstance(child, ChildOutcome)
    record = dict(child.records[0])
    record["modules"] = [f"{tool}\\MSVCP140.dll", *record["modules"][1:]]
    host.children["dll_probe.py"] = dataclasses.replace(child, records=(record,))
    findings = _findings(scenario)
    ed603 = findings["ED603"]
    assert "reached through PATH" in ed603.detail
    assert "SomeTool" in ed603.fixes[0].summary
    removal = [c for f in ed603.fixes for c in f.commands if "-notin" in c]
    assert removal and "C:\\Program Files\\SomeTool\\bin" in removal[0]
    assert "ED602" not in findings


def test_missing_runtime_store_python_and_long_paths() -> None:
    findings = _findings(SCENARIOS["win11-store-python-no-vc-redist"]())
    assert findings["ED601"].title.endswith("msvcp140.dll")  # python ships vcruntime140(_1)
    assert findings["ED604"].title.startswith("torch's c10.dll does not load: [WinError 126]")
    assert "261 characters" in findings["ED606"].title
    assert "LongPathsEnabled -Value 1" in findings["ED606"].fixes[0].commands[0]
    assert findings["ED605"].severity is Severity.WARNING


def test_short_install_folders_do_not_warn_about_long_paths() -> None:
    scenario = SCENARIOS["win11-store-python-no-vc-redist"]()
    scenario.host.registry[(next(k for k in scenario.host.registry if "FileSystem" in k[0]))] = {
        "LongPathsEnabled": 0
    }
    child = scenario.host.children["dll_probe.py"]
    assert isinstance(child, ChildOutcome)
    short = "C:\\venvs\\t\\Lib\\site-packages\\torch\\lib"
    scenario.machine.folder(short)
    scenario.host.dirs[short] = scenario.host.dirs[child.records[0]["torch_lib"]]  # the same DLLs
    record = {**child.records[0], "torch_lib": short}
    scenario.host.children["dll_probe.py"] = dataclasses.replace(child, records=(record,))
    assert "ED606" not in _findings(scenario)


def test_cuda_dlls_on_path_with_torchs_names() -> None:
    findings = _findings(SCENARIOS["win11-conda-cuda118-bin-before-env-cu124"]())
    ed608 = findings["ED608"]
    assert "cublas64_12.dll 6.14.11.12010" in ed608.detail and "torch's 6.14.11.12040" in ed608.detail
    assert "cudnn64_8" not in ed608.detail  # another name cannot shadow torch's cudnn64_9.dll
    assert "v12.1\\bin')" in ed608.fixes[0].commands[0]
    assert "ED409" in findings and "v11.8\\bin')" in findings["ED409"].fixes[0].commands[0]


def test_crashing_or_hanging_child_is_reported() -> None:
    scenario = SCENARIOS["win11-torch291-vc-redist-1436-winerror-1114"]()
    scenario.host.children["dll_probe.py"] = ChildOutcome(
        records=({"record": "stage", "stage": "load", "dll": "c10.dll"},),
        returncode=3221225477,
        stderr_tail="Windows fatal exception: access violation",
    )
    facts = _facts(scenario)
    assert (facts.dll_load.status, facts.dll_load.last_dll) == ("crashed", "c10.dll")
    assert "ED604" in _findings(scenario)
    scenario.host.children["dll_probe.py"] = ChildOutcome(records=(), returncode=None, timed_out=True)
    assert _facts(scenario).dll_load.status == "timeout"


def test_knowledge_minimum_and_versions() -> None:
    assert knowledge.runtime_minimum("2.8.1+cu128") is None
    minimum = knowledge.runtime_minimum("2.9.0+cu128")
    assert minimum is not None and str(minimum.minimum) == "14.40"
    assert knowledge.file_version("v14.40.33810.00") == knowledge.file_version("14.40.33810.0")
    assert knowledge.loads_before_system32("app_dir") and not knowledge.loads_before_system32("path")
    assert knowledge.winerror_meaning(127) is not None


def _child_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dll_probe_under_test", CHILD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_child_is_stdlib_only_python36_syntax() -> None:
    source = Path(CHILD).read_text(encoding="utf-8")
    tree = ast.parse(source, feature_version=(3, 6))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
    }
    stdlib = getattr(sys, "stdlib_module_names", None)  # Python 3.10+
    if stdlib is not None:
        assert imported <= set(stdlib)
    assert not imported & {"envdoctor", "torch", "numpy", "packaging"}


def test_child_orders_and_locates_like_torch() -> None:
    child = _child_module()
    assert child.load_order(["torch_cpu.dll", "asmjit.dll", "C10.dll", "readme.txt", "c10_cuda.dll"]) == [
        "C10.dll",
        "asmjit.dll",
        "c10_cuda.dll",
        "torch_cpu.dll",
    ]
    present = {"/env/lib/torch/lib", "/base/Library/bin"}
    found = child.dll_directories("/env/lib/torch", "/env", "/base", None, exists=present.__contains__)
    assert found == ["/env/lib/torch/lib", "/base/Library/bin"]
    assert child.is_watched("C:\\x\\MSVCP140.dll") and not child.is_watched("C:\\x\\kernel32.dll")


@pytest.mark.skipif(sys.platform == "win32", reason="checks the off-Windows answer")
def test_child_runs_in_a_real_interpreter() -> None:
    """Off Windows the child says so and exits cleanly: the live host runs it for real."""
    outcome = LiveHost().python_json(sys.executable, "dll_probe.py", (), 30.0)
    assert outcome.returncode == 0
    assert outcome.records[-1]["status"] == "not_windows"
    assert outcome.records[-1]["executable"] == sys.executable
