"""Symptom findings that teach (issue 22 §4): the causes of ED001-ED003, ED103, ED104 and ED203 are
data with sources, each rule ranks them from this machine's facts, and `explain` shows them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envdoctor.engine import evaluate
from envdoctor.knowledge import symptoms as data
from envdoctor.knowledge.provenance import PUBLIC_REFERENCE
from envdoctor.model.findings import Finding, Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes.gpu_access import GpuAccessFacts
from envdoctor.probes.nvml import DriverHostFacts, Gpu, NvmlFacts, NvmlStatus
from envdoctor.probes.system import SystemFacts
from envdoctor.probes.torch_build import ChildEnd, PythonError, TorchFacts
from envdoctor.rules import RULES_BY_CODE
from envdoctor.rules.base import RuleContext
from envdoctor.rules.symptoms import READERS
from tests.support import PYTHON

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "corpus"
LINUX = PlatformInfo("Linux", "6.8", "1", "x86_64")
WINDOWS = PlatformInfo("Windows", "11", "10", "AMD64")
GPU = Gpu(0, "NVIDIA GeForce RTX 4090", (8, 9), 24 * 2**30)
SYMPTOMS = data.symptoms()
# Package installs come from the planner, never from the data (the one-planner rule).
_INSTALL = re.compile(r"\b(pip3?|uv|conda|mamba|micromamba)\b.*\b(install|add|sync)\b")


def findings(*facts: object, platform: PlatformInfo = LINUX) -> dict[str, Finding]:
    probes = tuple(ProbeResult(type(f).__name__, ProbeStatus.OK, 0.0, f) for f in (PYTHON, *facts))
    ctx = RuleContext.build(platform, Interpreter("/env/bin/python", "r"), probes)
    return {f.code: f for f in evaluate(ctx)}


def keys(finding: Finding) -> list[tuple[str, str]]:
    """(likelihood, cause key) in the finding's order, from its evidence lines."""
    found = [line.split(": ", 1) for line in finding.evidence]
    return [(a, b) for a, b in (f for f in found if len(f) == 2) if a in ("confirmed", "likely", "possible")]


def cuda_torch(**kw: object) -> TorchFacts:
    return TorchFacts(
        installed=True, version="2.5.1+cu124", cuda="12.4", cuda_available=False, device_count=0, **kw
    )  # type: ignore[arg-type]


def nvml() -> NvmlFacts:
    return NvmlFacts(status="ok", driver_version="550.144.03", cuda_driver_version=12040, gpus=(GPU,))


# --- the data ---------------------------------------------------------------------------------------


def test_the_broad_symptoms_all_have_their_causes() -> None:
    assert {s.code for s in SYMPTOMS} >= {"ED001", "ED002", "ED003", "ED103", "ED104", "ED203"}
    for found in SYMPTOMS:
        assert found.code in RULES_BY_CODE, found.code
        assert len(found.causes) >= 3, found.code
        assert len({c.key for c in found.causes}) == len(found.causes), found.code


@pytest.mark.parametrize(
    "cause", [(s.code, c) for s in SYMPTOMS for c in s.causes], ids=lambda p: f"{p[0]}-{p[1].key}"
)
def test_each_cause_has_a_check_a_fix_and_a_public_source(cause: tuple[str, data.SymptomCause]) -> None:
    code, found = cause
    assert found.checks and all(command.strip() for _, command in found.checks)
    assert found.shows and found.fix.summary and not found.title.endswith("."), (
        "a clause, shown after a number"
    )
    assert found.corpus or found.source, f"{code} {found.key}: no thread or page shows this cause"
    for entry in found.corpus:
        assert (CORPUS / f"{entry}.json").is_file(), f"{code} {found.key}: no corpus entry {entry}"
    assert all(PUBLIC_REFERENCE.match(s) for s in found.source), found.source
    assert all(c in RULES_BY_CODE for c in found.named_by), found.named_by
    systems = {s for s, _ in found.checks} | set(found.systems)
    assert systems <= {"any", "linux", "windows", "macos"}, systems
    for _, commands in found.fix.commands:
        assert not any(_INSTALL.search(c) for c in commands), (
            f"{code} {found.key}: an install is the planner's"
        )
    assert found.fix.planned in (None, "driver", "reinstall")


def test_every_reader_reads_a_cause_the_data_holds() -> None:
    for code, readers in READERS.items():
        found = data.symptom(code)
        assert found is not None, code
        assert set(readers) <= {c.key for c in found.causes}, (
            code,
            set(readers) - {c.key for c in found.causes},
        )


# --- the ranking, on the rules ------------------------------------------------------------------------


def test_a_hiding_cuda_visible_devices_is_confirmed_and_the_open_rest_left_out() -> None:
    torch = cuda_torch(cuda_visible_devices="")
    found = findings(nvml(), torch, SystemFacts("linux", "6.8", "1", "x86_64", container="docker"))["ED203"]
    assert keys(found) == [("confirmed", "visible-devices"), ("likely", "container")]
    assert "hides every GPU" in found.detail and found.fixes[0].commands == ("unset CUDA_VISIBLE_DEVICES",)
    assert found.fixes[0].summary.startswith("If (1): ")


def test_cuda_error_803_in_torchs_warning_names_its_cause_and_rules_out_the_other_numbers() -> None:
    warning = (
        "CUDA initialization: Unexpected error from cudaGetDeviceCount(). Error 803: system has "
        "unsupported display driver / cuda driver combination"
    )
    found = findings(nvml(), cuda_torch(warnings=(warning,)))["ED203"]
    ranked = keys(found)
    assert ranked[0] == ("confirmed", "module-mismatch")
    assert ("possible", "forward-compat") not in ranked and all(k != "stub-libcuda" for _, k in ranked)
    assert "Error 803: system has unsupported display driver" in found.detail
    assert found.fixes[0].commands == ("sudo reboot",)


def test_with_nothing_known_the_list_is_capped_and_points_to_explain() -> None:
    found = findings(nvml(), cuda_torch())["ED203"]
    assert 3 <= len(keys(found)) <= 6 and "rarer causes are in `envdoctor explain ED203`" in found.detail
    assert [k for _, k in keys(found)][-1] != "visible-devices"  # unset: the child read it
    assert all(f.summary.startswith(f"If ({n}): ") for n, f in enumerate(found.fixes, 1))


def test_wsl_rules_out_the_uvm_device_and_a_known_loader_path_rules_out_compat() -> None:
    access = GpuAccessFacts(wsl=2, libcuda=("/usr/lib/wsl/lib",))
    found = findings(nvml(), cuda_torch(), access)["ED203"]
    assert {"uvm-missing", "forward-compat"}.isdisjoint(k for _, k in keys(found))


def test_driver_not_loaded_ranks_what_the_host_shows() -> None:
    host = DriverHostFacts(secure_boot=False, module_file="/lib/modules/6.8/nvidia.ko", module_indexed=True)
    facts = NvmlFacts(status=NvmlStatus.DRIVER_NOT_LOADED, error="Driver Not Loaded", host=host)
    found = findings(facts)["ED103"]
    ranked = [k for _, k in keys(found)]
    assert "secure-boot" not in ranked and "module-missing" not in ranked  # ruled out by the host
    assert "not-loaded-yet" in ranked and any("sudo reboot" in f.commands for f in found.fixes)


def test_an_import_error_in_known_words_gets_that_cause_alone() -> None:
    error = PythonError(
        "OSError", "[WinError 1455] The paging file is too small for this operation to complete"
    )
    found = findings(TorchFacts(installed=True, import_error=error), platform=WINDOWS)["ED002"]
    assert keys(found) == [("confirmed", "paging-file")]
    assert "paging file is too small" in found.detail and found.fixes[0].commands == (
        "SystemPropertiesPerformance.exe",
    )


def test_an_import_error_in_unknown_words_lists_the_usual_causes_for_this_system() -> None:
    error = PythonError("RuntimeError", "something nobody has seen")
    linux = findings(TorchFacts(installed=True, import_error=error))["ED002"]
    windows = findings(TorchFacts(installed=True, import_error=error), platform=WINDOWS)["ED002"]
    assert "none of the known causes" in linux.detail
    assert "foreign-cuda-libraries" in [k for _, k in keys(linux)]
    assert {"dll-load", "paging-file"} <= {k for _, k in keys(windows)}
    assert "foreign-cuda-libraries" not in [k for _, k in keys(windows)]
    assert "/env/bin/python -m pip check" in linux.detail  # the examined interpreter, filled in


@pytest.mark.parametrize(
    ("end", "expected", "absent"),
    [
        (ChildEnd(timed_out=True), {"driver-hang", "slow-filesystem", "ptx-jit"}, {"foreign-libraries"}),
        (ChildEnd(exit_signal=11), {"foreign-libraries"}, {"illegal-instruction", "driver-hang"}),
        (ChildEnd(exit_code=3), {"interpreter-gone"}, {"driver-hang", "foreign-libraries"}),
    ],
    ids=["timeout", "segfault", "exited"],
)
def test_a_crash_lists_the_causes_of_its_ending(end: ChildEnd, expected: set[str], absent: set[str]) -> None:
    crash = end
    found = findings(TorchFacts(installed=True, crash=crash))["ED003"]
    listed = {k for _, k in keys(found)}
    assert expected <= listed and not (absent & listed), listed


def test_no_gpu_in_wsl_says_wsl_and_not_a_container() -> None:
    system = SystemFacts("linux", "5.15.90.1-microsoft-standard-WSL2", "1", "x86_64", wsl=True)
    found = findings(NvmlFacts(status=NvmlStatus.LIBRARY_NOT_FOUND), system)["ED104"]
    ranked = keys(found)
    assert ("likely", "wsl") in ranked and all(k != "container" for _, k in ranked)
    assert not any("Nothing to fix" in f.summary for f in found.fixes)  # the no-GPU cause has no fix


def test_torch_missing_lists_where_it_usually_went() -> None:
    found = findings(TorchFacts(installed=False))["ED001"]
    ranked = [k for _, k in keys(found)]
    assert ranked[:2] == ["other-interpreter", "other-pip"]
    assert any("/env/bin/python -m pip" in f.summary for f in found.fixes)


# --- explain ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [s.code for s in SYMPTOMS])
def test_explain_shows_the_causes_with_their_checks(code: str) -> None:
    from envdoctor.cli.lean import explain

    text = explain(code)
    assert "Usual causes" in text and "tell: `" in text and "fix: " in text
    assert "{python}" not in text
