"""The long tail of Windows DLL failures: what other packages bring into torch's process (bundled
msvcp140.dll, other frameworks' CUDA DLLs, MKL in a user scheme, two OpenMP runtimes) and torch
releases that load their DLLs the old way. The probe runs on recorded machines (FakeHost); the rules
on snapshots that differ from a recorded machine in the facts each test names."""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from envdoctor.engine import diagnose
from envdoctor.host.base import ChildOutcome
from envdoctor.host.live import CHILD_DIR
from envdoctor.knowledge import windows as knowledge
from envdoctor.model.findings import Finding
from envdoctor.probes import windows
from envdoctor.probes.base import ProbeContext
from envdoctor.probes.windows import PACKAGE, SCOPE_ENVIRONMENT, SCOPE_TARGET, SCOPE_USER, WindowsFacts
from envdoctor.snapshot import snapshot_from_data
from tests.fixture_support import FIXTURES
from tests.scenario_fixtures import SCENARIOS, Scenario

BASE = FIXTURES / "corpus" / "bases" / "win11-rtx4070-cu128-venv-healthy.json"
VENV = "C:\\Users\\user\\project\\.venv"
SITE = f"{VENV}\\Lib\\site-packages"
TORCH_LIB = f"{SITE}\\torch\\lib"
USER_BASE = "C:\\Users\\user\\AppData\\Roaming\\Python"
USER_SITE = f"{USER_BASE}\\Python312\\site-packages"


# --- the probe, on a recorded machine ----------------------------------------------------------


def _collect(scenario: Scenario) -> WindowsFacts:
    return windows.collect(ProbeContext(host=scenario.host, target=scenario.target))


def _with_child(scenario: Scenario, **record: object) -> None:
    child = scenario.host.children["dll_probe.py"]
    assert isinstance(child, ChildOutcome)
    scenario.host.children["dll_probe.py"] = dataclasses.replace(
        child, records=({**child.records[0], **record},)
    )


def test_the_probe_finds_what_other_packages_bring_into_the_process() -> None:
    scenario = SCENARIOS["win11-torch291-vc-redist-1436-winerror-1114"]()
    machine = scenario.machine
    machine.file(f"{SITE}\\PyQt6\\Qt6\\bin\\msvcp140.dll", version="14.29.30139.0")
    machine.file(f"{SITE}\\pyzmq.libs\\msvcp140.dll", version="14.29.30139.0")
    machine.file(f"{SITE}\\pyzmq.libs\\libzmq-v141-mt-4_3_5.dll")
    machine.file(f"{SITE}\\nvidia\\cudnn\\bin\\cudnn64_9.dll", version="9.7.1.26")
    machine.file(f"{SITE}\\nvidia\\cudnn\\bin\\README.txt")
    cudnn = "C:\\Program Files\\NVIDIA\\CUDNN\\v9.6\\bin\\12.6"
    machine.file(f"{cudnn}\\cudnn64_9.dll", version="9.6.0.74")
    scenario.host.environ["KMP_DUPLICATE_LIB_OK"] = "TRUE"
    _with_child(scenario, distributions={"onnxruntime-gpu": "1.21.0", "paddlepaddle-gpu": "3.0.0rc1"})
    facts = _collect(scenario)
    assert [(f.package, f.version) for f in facts.bundled_runtime] == [
        ("PyQt6", "14.29.30139.0"),
        ("pyzmq", "14.29.30139.0"),
    ]
    assert {(f.path, f.origin, f.package) for f in facts.package_cuda_dlls} == {
        (f"{SITE}\\nvidia\\cudnn\\bin\\cudnn64_9.dll", PACKAGE, "nvidia"),
        (f"{cudnn}\\cudnn64_9.dll", "other", None),
    }
    assert facts.dll_load.distribution("onnxruntime_gpu") == "1.21.0"
    assert facts.openmp_workaround == "TRUE"
    assert facts.install_scope == SCOPE_ENVIRONMENT
    # The child is asked about exactly the frameworks windows.json knows.
    assert next(f.dist for f in knowledge.frameworks().packages) == "onnxruntime-gpu"


def test_the_probe_tells_the_install_scheme_and_finds_the_user_schemes_mkl() -> None:
    scenario = SCENARIOS["win11-torch291-vc-redist-1436-winerror-1114"]()
    user_lib = f"{USER_SITE}\\torch\\lib"
    scenario.machine.files(user_lib, "c10.dll", "shm.dll")
    scenario.machine.files(
        f"{USER_BASE}\\Python312\\Library\\bin", "mkl_core.2.dll", "mkl_intel_thread.2.dll", "x.txt"
    )
    _with_child(scenario, torch_lib=user_lib, userbase=f"{USER_BASE}\\Python312", user_site=USER_SITE)
    facts = _collect(scenario)
    assert facts.install_scope == SCOPE_USER
    assert sorted(f.name for f in facts.mkl_files) == ["mkl_core.2.dll", "mkl_intel_thread.2.dll"]
    target = "D:\\addon\\deps"
    scenario.machine.files(f"{target}\\torch\\lib", "c10.dll")
    _with_child(scenario, torch_lib=f"{target}\\torch\\lib")
    assert _collect(scenario).install_scope == SCOPE_TARGET


# --- the child script ------------------------------------------------------------------------


def _child() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dll_probe_long_tail", CHILD_DIR / "dll_probe.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_child_searches_the_folders_the_installed_release_searches() -> None:
    child = _child()
    assert child.release_of("2.3.0+cu121") == (2, 3, 0)
    assert child.release_of("2.13.0.dev20260424+cu132") == (2, 13, 0)
    assert child.release_of("nonsense") is None
    everything = {"/t/lib", "/env/Library/bin", "/base/Library/bin", "/user/Library/bin"}.__contains__
    today = child.dll_directories("/t", "/env", "/base", "/user", exists=everything)
    assert today == ["/t/lib", "/env/Library/bin", "/base/Library/bin", "/user/Library/bin"]
    # torch 2.3.0 did not search the user scheme (2.3.1 does), torch 1.5 not the base's under a venv.
    assert "/user/Library/bin" not in child.dll_directories(
        "/t", "/env", "/base", "/user", exists=everything, release=(2, 3, 0)
    )
    assert child.dll_directories("/t", "/env", "/base", "/user", exists=everything, release=(1, 5, 0)) == [
        "/t/lib",
        "/env/Library/bin",
    ]


def test_the_child_reads_versions_from_metadata_without_importing() -> None:
    child = _child()
    found = child.distribution_versions(["packaging", "no-such-distribution-here"])
    assert set(found) == {"packaging"} and found["packaging"][:1].isdigit()
    assert "no_such_module" not in sys.modules


# --- the rules, on snapshots ---------------------------------------------------------------------


def _base() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(BASE).read_text(encoding="utf-8"))
    return data


def _probe(data: dict[str, Any], name: str) -> dict[str, Any]:
    facts: dict[str, Any] = next(p for p in data["probes"] if p["probe"] == name)["facts"]
    return facts


def _findings(data: dict[str, Any]) -> dict[str, Finding]:
    snap = snapshot_from_data(copy.deepcopy(data), "test")
    return {f.code: f for f in diagnose(snap.platform, snap.interpreter, snap.probes).findings}


def _text(finding: Finding) -> str:
    return "\n".join([finding.title, finding.detail, *(f.summary for f in finding.fixes)])


def _commands(finding: Finding) -> list[str]:
    return [c for f in finding.fixes for c in f.commands]


def test_a_healthy_windows_base_has_nothing_to_say() -> None:
    assert {c: f.severity.value for c, f in _findings(_base()).items()} == {}


def _bundled(version: str, package: str = "PyQt5", folder: str = "PyQt5\\Qt5\\bin") -> dict[str, Any]:
    return {
        "name": "msvcp140.dll",
        "path": f"{SITE}\\{folder}\\msvcp140.dll",
        "version": version,
        "origin": "package",
        "path_index": None,
        "package": package,
    }


def test_a_package_bundling_an_old_runtime_says_import_torch_first() -> None:
    data = _base()
    _probe(data, "windows")["bundled_runtime"] = [_bundled("14.26.28720.3")]
    found = _findings(data)["ED603"]
    assert "PyQt5 bundles an older msvcp140.dll (14.26.28720.3)" in found.title
    assert found.fixes[0].summary.startswith("Import torch before PyQt5")
    assert "import torch; import PyQt5" in found.fixes[0].commands[0]
    assert "VersionInfo.FileVersion" in found.fixes[1].summary
    assert not any("vc_redist" in c for c in _commands(found))  # System32's 14.44 is fine
    # A new enough copy, or a torch before 2.9 (no floor known), is no finding.
    _probe(data, "windows")["bundled_runtime"] = [_bundled("14.42.34433.0")]
    assert "ED603" not in _findings(data)
    _probe(data, "windows")["bundled_runtime"] = [_bundled("14.26.28720.3")]
    _probe(data, "torch").update(dist_version="2.8.0+cu128", version="2.8.0+cu128")
    assert "ED603" not in _findings(data)


def _two_openmp(data: dict[str, Any], prefix: str) -> None:
    python = _probe(data, "python")
    python.update(prefix=prefix, is_conda=True, is_venv=False, executable=f"{prefix}\\python.exe")
    _probe(data, "windows")["openmp_files"] = [
        {"name": "libiomp5md.dll", "path": f"{prefix}\\Lib\\site-packages\\torch\\lib\\libiomp5md.dll",
         "version": None, "origin": "torch_lib", "path_index": None},
        {"name": "libiomp5md.dll", "path": f"{prefix}\\Library\\bin\\libiomp5md.dll", "version": None,
         "origin": "dll_directory", "path_index": None},
    ]  # fmt: skip


def test_two_openmp_runtimes_get_the_real_fix_and_the_workaround_is_named_so() -> None:
    data = _base()
    _two_openmp(data, "C:\\Users\\user\\miniconda3\\envs\\ml")
    found = _findings(data)["ED607"]
    first, rename, workaround = found.fixes
    assert first.commands == ("conda install -p C:\\Users\\user\\miniconda3\\envs\\ml nomkl",)
    assert rename.commands[0].startswith(
        "Rename-Item -LiteralPath 'C:\\Users\\user\\miniconda3\\envs\\ml\\Library"
    )
    assert workaround.summary.startswith("Workaround, not a fix")
    assert "unsafe, unsupported, undocumented workaround" in workaround.summary
    # Already set: the finding says it hides the abort, and the fix is to unset it, not to set it.
    _probe(data, "windows")["openmp_workaround"] = "TRUE"
    found = _findings(data)["ED607"]
    assert "suppressed, not solved" in found.detail
    assert _commands(found)[-2:] == [
        "Remove-Item Env:KMP_DUPLICATE_LIB_OK",
        "[Environment]::SetEnvironmentVariable('KMP_DUPLICATE_LIB_OK', $null, 'User')",
    ]
    assert not any("= 'TRUE'" in c for c in _commands(found))


def test_a_venv_with_one_openmp_runtime_is_quiet() -> None:
    data = _base()
    assert "ED607" not in _findings(data)


def _cuda(
    folder: str, name: str, version: str | None, origin: str, package: str | None = None
) -> dict[str, Any]:
    return {"name": name.lower(), "path": f"{folder}\\{name}", "version": version, "origin": origin,
            "path_index": 0 if origin == "path" else None, "package": package}  # fmt: skip


def test_another_frameworks_cudnn_of_another_version_is_named() -> None:
    data = _base()
    windows_facts = _probe(data, "windows")
    windows_facts["dll_load"]["distributions"] = [{"name": "paddlepaddle-gpu", "version": "3.0.0rc1"}]
    windows_facts["torch_cuda_dlls"] = [_cuda(TORCH_LIB, "cudnn64_9.dll", "9.5.1.17", "torch_lib")]
    theirs = f"{SITE}\\nvidia\\cudnn\\bin"
    windows_facts["package_cuda_dlls"] = [_cuda(theirs, "cudnn64_9.dll", "9.7.1.26", "package", "nvidia")]
    found = _findings(data)["ED613"]
    assert "PaddlePaddle 3.0.0rc1" in found.title and "9.7.1.26 vs torch\\lib's 9.5.1.17" in found.detail
    assert theirs in found.fixes[1].summary
    # The same version, or no other framework installed: nothing to say.
    windows_facts["package_cuda_dlls"] = [_cuda(theirs, "cudnn64_9.dll", "9.5.1.17", "package", "nvidia")]
    assert "ED613" not in _findings(data)
    windows_facts["package_cuda_dlls"] = [_cuda(theirs, "cudnn64_9.dll", "9.7.1.26", "package", "nvidia")]
    windows_facts["dll_load"]["distributions"] = []
    assert "ED613" not in _findings(data)


def test_a_framework_built_for_another_cuda_major() -> None:
    data = _base()
    torch = _probe(data, "torch")
    torch.update(dist_version="2.5.1+cu118", version="2.5.1+cu118", cuda="11.8",
                 companions=[{"name": "torchvision", "version": "0.20.1+cu118"}])  # fmt: skip
    windows_facts = _probe(data, "windows")
    windows_facts["torch_cuda_dlls"] = [_cuda(TORCH_LIB, "cublas64_11.dll", None, "torch_lib")]
    windows_facts["dll_load"]["distributions"] = [{"name": "ctranslate2", "version": "4.5.0"}]
    found = _findings(data)["ED614"]
    assert "needs cublas64_12.dll (CUDA 12)" in found.title
    planned, older = found.fixes
    assert "--index-url https://download.pytorch.org/whl/cu12" in planned.commands[0]
    assert "below 4.0.0 (3.24.0" in older.summary
    # cuBLAS 12 on PATH serves it.
    windows_facts["cuda_dlls_on_path"] = [_cuda("C:\\cuda\\bin", "cublas64_12.dll", "12.8.4.1", "path")]
    assert "ED614" not in _findings(data)
    # CTranslate2 3.x is built for CUDA 11: torch's own cublas64_11.dll serves it.
    windows_facts["cuda_dlls_on_path"] = []
    windows_facts["dll_load"]["distributions"] = [{"name": "ctranslate2", "version": "3.24.0"}]
    assert "ED614" not in _findings(data)


def _broken(data: dict[str, Any], version: str, dll: str) -> None:
    """torch `version` whose import fails with [WinError 126] on `dll`."""
    message = (
        f'[WinError 126] The specified module could not be found. Error loading "{dll}" or one of its '
        "dependencies."
    )
    error = {"type": "OSError", "message": message, "traceback": None}
    _probe(data, "torch").update(
        dist_version=version, version=None, devices=[], cuda_available=None, import_error=error
    )


def _failed(dll: str) -> list[dict[str, Any]]:
    return [{"dll": dll, "winerror": 126, "message": "The specified module could not be found."}]


def _user_install(data: dict[str, Any], version: str, scope: str) -> None:
    lib = f"{USER_SITE}\\torch\\lib"
    _broken(data, version, f"{lib}\\shm.dll")
    windows_facts = _probe(data, "windows")
    mkl = f"{USER_BASE}\\Python312\\Library\\bin"
    mkl_file = {"name": "mkl_core.2.dll", "path": f"{mkl}\\mkl_core.2.dll", "version": None, "origin": "env"}
    windows_facts.update(install_scope=scope, torch_dir=f"{USER_SITE}\\torch", mkl_files=[mkl_file])
    windows_facts["dll_load"].update(
        torch_lib=lib, dll_directories=[lib], status="failed", failures=_failed("shm.dll")
    )


def test_torch_230_for_one_user_cannot_find_its_mkl() -> None:
    data = _base()
    _user_install(data, "2.3.0+cu121", SCOPE_USER)
    findings = _findings(data)
    found = findings["ED612"]
    assert "installed for one user (pip --user)" in found.title
    assert "Roaming\\Python\\Python312\\Library\\bin, which torch 2.3.0+cu121 does not search" in found.detail
    assert any("torch==2.3.1" in c for c in _commands(found))
    assert findings["ED604"].folded_under == "ED612" and findings["ED002"].folded_under == "ED612"
    for version, scope in (("2.3.1+cu121", SCOPE_USER), ("2.3.0+cu121", SCOPE_ENVIRONMENT)):
        other = _base()
        _user_install(other, version, scope)
        assert "ED612" not in _findings(other), (version, scope)


@pytest.mark.parametrize(
    ("python", "torch", "fires"),
    [("3.8.2", "1.4.0", True), ("3.8.2", "1.5.0", False), ("3.7.7", "1.4.0", False)],
)
def test_torch_before_1_5_on_python_38(python: str, torch: str, fires: bool) -> None:
    data = _base()
    _probe(data, "python")["version"] = python
    _probe(data, "torch").update(dist_version=torch, version=torch, cuda="10.1", companions=[])
    findings = _findings(data)
    assert ("ED615" in findings) is fires
    if fires:
        assert "Upgrade torch" in findings["ED615"].fixes[0].summary
        assert "error in LoadLibraryA" in findings["ED615"].detail


def test_a_nightly_that_left_cudnn_out_is_a_known_regression_only_without_cudnn() -> None:
    data = _base()
    version = "2.13.0.dev20260424+cu132"
    _broken(data, version, f"{TORCH_LIB}\\shm.dll")
    windows_facts = _probe(data, "windows")
    windows_facts["dll_load"].update(
        status="failed", failures=[{"dll": "shm.dll", "winerror": 126, "message": "x"}]
    )
    windows_facts["torch_cuda_dlls"] = [_cuda(TORCH_LIB, "cublas64_13.dll", None, "torch_lib")]
    found = _findings(data)["ED610"]
    assert "torch\\lib has no cudnn DLLs at all" in found.detail and "later nightlies" in found.detail
    windows_facts["torch_cuda_dlls"].append(_cuda(TORCH_LIB, "cudnn64_9.dll", None, "torch_lib"))
    assert "ED610" not in _findings(data)


def test_the_2015_redistributable_lacks_vcruntime140_1() -> None:
    data = _base()
    windows_facts = _probe(data, "windows")
    windows_facts["redist"] = [{"view": 64, "installed": True, "version": "14.0.24215.1"}]
    windows_facts["runtime_files"] = [
        {"name": n, "path": f"C:\\Windows\\System32\\{n}", "version": "14.0.24215.1", "origin": "system32",
         "path_index": None}
        for n in ("msvcp140.dll", "vcruntime140.dll")
    ]  # fmt: skip
    windows_facts["dll_load"]["modules"] = []
    _probe(data, "torch")["dist_version"] = "1.11.0"
    found = _findings(data)["ED601"]
    assert found.title.endswith("vcruntime140_1.dll")
    assert "Visual Studio 2015/2017 redistributable, older than 14.20 (2019)" in found.detail


def test_torch_213s_deepest_file_is_in_its_dist_info() -> None:
    limits = knowledge.path_limits()
    assert limits.torch_longest("2.13.0+cpu") == 171  # measured on the 2.13.0 wheel's licenses tree
    assert limits.torch_longest("2.5.1+cpu") == limits.torch_longest_relative_path == 119
    assert limits.torch_longest("1.1.0") == 123  # caffe2's serialized test data
    assert limits.torch_longest("2.13.0.dev20260518+cu126") > 171  # a longer dist-info name


def test_the_knowledge_of_the_long_tail() -> None:
    ctranslate2 = knowledge.frameworks().get("CTranslate2")
    assert ctranslate2 is not None
    build = ctranslate2.build_for("4.5.0")
    assert build is not None and (build.major, build.dll) == (12, "cublas64_12.dll")
    old = ctranslate2.build_for("3.24.0")
    assert old is not None and old.major == 11
    assert knowledge.user_install_mkl().affects("2.3.0+cpu") and not knowledge.user_install_mkl().affects(
        "2.3.1"
    )
    assert [r.fixed_words for r in knowledge.dll_regressions("2.13.0.dev20260424+cu132")] == [
        "later nightlies"
    ]
    fbgemm = knowledge.dll_regression("2.4.0+cu121", "fbgemm.dll")
    assert fbgemm is not None and str(fbgemm.older_release) == "2.3.1" and fbgemm.matches("FBGEMM.dll", 126)
    assert knowledge.openmp().workaround_variable == "KMP_DUPLICATE_LIB_OK"
    assert {f.package for f in knowledge.bundled_runtime().folders} >= {"PyQt5", "PyQt6", "pyzmq"}


def test_a_cudnn_copied_into_system32_is_renamed_not_taken_off_path() -> None:
    scenario = SCENARIOS["win11-torch291-vc-redist-1436-winerror-1114"]()
    scenario.machine.file("C:\\Windows\\System32\\cudnn64_9.dll", version="9.0.0.312")
    scenario.machine.file(f"{TORCH_LIB}\\cudnn64_9.dll", version="9.8.0.87")
    facts = _collect(scenario)
    assert [(f.origin, f.version) for f in facts.cuda_dlls_on_path] == [("system32", "9.0.0.312")]
    data = _base()
    windows_facts = _probe(data, "windows")
    windows_facts["torch_cuda_dlls"] = [_cuda(TORCH_LIB, "cudnn64_9.dll", "9.8.0.87", "torch_lib")]
    windows_facts["cuda_dlls_on_path"] = [
        _cuda("C:\\Windows\\System32", "cudnn64_9.dll", "9.0.0.312", "system32")
    ]
    found = _findings(data)["ED608"]
    assert "cudnn64_9.dll 9.0.0.312 in System32 vs torch's 9.8.0.87" in found.detail
    assert _commands(found) == [
        "Rename-Item -LiteralPath 'C:\\Windows\\System32\\cudnn64_9.dll' -NewName 'cudnn64_9.dll.bak'"
    ]  # System32 itself stays on PATH
