"""The GPU and torch.compile rules on recorded machines with one fact changed at a time: Triton's ptxas
against the driver (ED240), Triton's libcuda (ED241), Triton missing (ED242), CUDA before fork
(ED243), PTX the driver cannot compile (ED307), a build older than the GPU (ED310), out of memory
read from the error (ED303), and the ranked causes of CUDA being unavailable (ED203)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from envdoctor.engine import diagnose
from envdoctor.knowledge.archs import cuda_number, first_cuda, first_cuda_provenance
from envdoctor.knowledge.triton import bundled_ptxas
from envdoctor.model.findings import Finding, Report
from envdoctor.rules.torch.gpu import parse_oom
from envdoctor.snapshot import snapshot_from_data
from tests.corpus_support import base_data, merge

RTX = "linux-rtx4090-driver535-cu121-healthy"
A100 = "linux-a100-healthy"
SITE = "/home/user/project/.venv/lib/python3.11/site-packages"
LIB = "/usr/lib/x86_64-linux-gnu"
GIB = 2**30


def _report(base: str, facts: dict[str, Any], pasted: str | None = None, **platform: str) -> Report:
    data = copy.deepcopy(base_data(base))
    if platform:
        data["platform"] = merge(data["platform"], platform)
    by_name = {p["probe"]: p for p in data["probes"]}
    for probe, change in facts.items():
        if probe not in by_name:
            by_name[probe] = {"probe": probe, "status": "ok", "seconds": 0.01, "error": None, "facts": {}}
            data["probes"].append(by_name[probe])
        by_name[probe]["facts"] = merge(by_name[probe]["facts"] or {}, change)
    snap = snapshot_from_data(data, "test")
    return diagnose(snap.platform, snap.interpreter, snap.probes, pasted=pasted)


def _found(report: Report, code: str) -> list[Finding]:
    return [f for f in report.findings if f.code == code]


def _text(finding: Finding) -> str:
    return " ".join(
        [finding.title, finding.detail, *(x.summary + " " + " ".join(x.commands) for x in finding.fixes)]
    )


def _triton(
    version: str = "2.2.0",
    ptxas: str | None = "12.3",
    libcuda: tuple[str, ...] = ("libcuda.so.1", "libcuda.so"),
    **more: Any,
) -> dict[str, Any]:
    facts = {
        "installed": True,
        "distribution": "triton",
        "version": version,
        "ptxas": [{"path": f"{SITE}/triton/backends/nvidia/bin/ptxas", "role": "bundled", "release": ptxas}],
        "ldconfig_ran": True,
        "libcuda": [{"path": f"{LIB}/{name}", "found_by": "ldconfig"} for name in libcuda],
    }
    facts.update(more)
    return facts


DRIVER_470 = {"driver_version": "470.182.03", "cuda_driver_version": 11040}
CU118 = {"version": "2.2.0+cu118", "dist_version": "2.2.0+cu118", "cuda": "11.8", "companions": []}


# -- ED240 --------------------------------------------------------------------------------------------


def test_ed240_fires_only_across_a_cuda_major_version() -> None:
    old_driver = _report(A100, {"nvml": DRIVER_470, "torch": CU118, "triton": _triton()})
    (hit,) = _found(old_driver, "ED240")
    assert "CUDA 12.3" in hit.title and "525.60.13" in _text(hit)
    # A CUDA 12.2 driver loads a 12.3 ptxas's cubins (minor-version compatibility): nothing to say.
    assert not _found(_report(RTX, {"triton": _triton()}), "ED240")


def test_ed240_knows_a_releases_ptxas_when_it_could_not_run_it() -> None:
    report = _report(A100, {"nvml": DRIVER_470, "torch": CU118, "triton": _triton(ptxas=None)})
    (hit,) = _found(report, "ED240")
    assert "the ptxas triton 2.2.0 ships" in hit.detail


def test_ed240_is_quiet_when_triton_ptxas_path_names_a_ptxas_of_the_drivers_major() -> None:
    given = "/usr/local/cuda-11.8/bin/ptxas"
    triton = _triton(ptxas_path_env=given)
    triton["ptxas"].insert(0, {"path": given, "role": "TRITON_PTXAS_PATH", "release": "11.8"})
    assert not _found(_report(A100, {"nvml": DRIVER_470, "torch": CU118, "triton": triton}), "ED240")


def test_ed240_offers_a_local_toolkits_ptxas_first() -> None:
    toolkit = {
        "os": "linux",
        "shell": "bash",
        "toolkits": [{"root": "/usr/local/cuda-11.8", "version": "11.8", "has_nvcc": True}],
    }
    report = _report(A100, {"nvml": DRIVER_470, "torch": CU118, "triton": _triton(), "toolkit": toolkit})
    (hit,) = _found(report, "ED240")
    assert hit.fixes[0].commands == ("export TRITON_PTXAS_PATH=/usr/local/cuda-11.8/bin/ptxas",)


# -- ED241 --------------------------------------------------------------------------------------------


def test_ed241_an_empty_ldconfig_cache_asks_for_ldconfig() -> None:
    (hit,) = _found(_report(RTX, {"triton": _triton(libcuda=())}), "ED241")
    assert "cannot found" in hit.detail and hit.fixes[0].commands[0] == "sudo ldconfig"


def test_ed241_is_quiet_with_both_names_or_when_ldconfig_did_not_answer() -> None:
    assert not _found(_report(RTX, {"triton": _triton()}), "ED241")
    assert not _found(_report(RTX, {"triton": _triton(libcuda=(), ldconfig_ran=False)}), "ED241")


def test_ed241_triton_libcuda_path_is_where_it_looks() -> None:
    folder = "/opt/driver"
    triton = _triton(libcuda=(), libcuda_path_env=folder)
    triton["libcuda"] = [{"path": f"{folder}/libcuda.so.1", "found_by": "TRITON_LIBCUDA_PATH"}]
    (hit,) = _found(_report(RTX, {"triton": triton}), "ED241")
    assert f"sudo ln -s {folder}/libcuda.so.1 {folder}/libcuda.so" in hit.fixes[0].commands


# -- ED242 --------------------------------------------------------------------------------------------

TRITON_MISSING = (
    "RuntimeError: Cannot find a working triton installation. More information on installing Triton"
)


def _distributions(*names: str) -> dict[str, Any]:
    rows = [
        {"name": "torch", "version": "2.3.1+cu121", "requires": ['triton==2.3.1; platform_system == "Linux"']}
    ]
    rows += [{"name": name, "version": "2.3.1"} for name in names]
    return {"torch": {"extensions": {"loads": [], "distributions": rows}}}


def test_ed242_linux_needs_torchs_own_requirement_and_no_triton() -> None:
    assert _found(_report(RTX, _distributions()), "ED242")
    assert not _found(_report(RTX, _distributions("triton")), "ED242")


def test_ed242_on_windows_only_the_error_makes_it_a_finding() -> None:
    windows = {"system": "Windows", "machine": "AMD64", "release": "11"}
    assert not _found(_report(RTX, {}, **windows), "ED242")
    (hit,) = _found(_report(RTX, {}, TRITON_MISSING, **windows), "ED242")
    assert "WSL 2" in hit.fixes[0].summary and hit.fixes[0].commands == ()


# -- ED243 --------------------------------------------------------------------------------------------

FORK = (
    "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
    "you must use the 'spawn' start method"
)


def test_ed243_names_vllms_setting_only_where_vllm_is() -> None:
    (plain,) = _found(_report(RTX, {}, FORK), "ED243")
    assert all("VLLM" not in " ".join(f.commands) for f in plain.fixes)
    (vllm,) = _found(_report(RTX, {}, "Exception in worker VllmWorkerProcess: " + FORK[14:]), "ED243")
    assert vllm.fixes[0].commands == ("export VLLM_WORKER_MULTIPROC_METHOD=spawn",)
    assert not _found(_report(RTX, {}), "ED243")


# -- ED307 and ED310 ----------------------------------------------------------------------------------

H100 = {
    "gpus": [
        {"index": 0, "name": "NVIDIA H100 80GB HBM3", "capability": [9, 0], "memory_total_bytes": 80 * GIB}
    ]
}


def test_ed307_needs_a_ptx_only_gpu_or_the_error_and_an_older_driver() -> None:
    ptx_only = {
        "version": "2.4.0a0+git",
        "cuda": "12.4",
        "arch_list": ["sm_80", "compute_80"],
        "devices": [],
        "smoke": None,
    }
    old = {"driver_version": "525.60.13", "cuda_driver_version": 12000, **H100}
    assert _found(_report(A100, {"nvml": old, "torch": ptx_only}), "ED307")
    new = {"driver_version": "550.54.14", "cuda_driver_version": 12040, **H100}
    assert not _found(_report(A100, {"nvml": new, "torch": ptx_only}), "ED307")
    cubins = {**ptx_only, "arch_list": ["sm_80", "sm_90"]}
    assert not _found(_report(A100, {"nvml": old, "torch": cubins}), "ED307")
    said = "RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain."
    assert _found(_report(A100, {"nvml": old, "torch": cubins}, said), "ED307")


def test_ed310_leaves_a_gpu_without_any_kernels_to_ed301() -> None:
    gpu = {
        "gpus": [
            {
                "index": 0,
                "name": "NVIDIA GeForce RTX 3090",
                "capability": [8, 6],
                "memory_total_bytes": 24 * GIB,
            }
        ]
    }
    torch = {"version": "1.7.1", "cuda": "10.2", "devices": [], "smoke": None, "companions": []}
    with_ptx = _report(RTX, {"nvml": gpu, "torch": {**torch, "arch_list": ["sm_70", "sm_75", "compute_37"]}})
    assert _found(with_ptx, "ED310") and not _found(with_ptx, "ED301")
    no_ptx = _report(RTX, {"nvml": gpu, "torch": {**torch, "arch_list": ["sm_70", "sm_75"]}})
    assert _found(no_ptx, "ED301") and not _found(no_ptx, "ED310")
    recent = _report(RTX, {"nvml": gpu, "torch": {**torch, "cuda": "11.8", "arch_list": ["sm_80", "sm_86"]}})
    assert not _found(recent, "ED310")


# -- ED303 from the error text --------------------------------------------------------------------------

OLD_FORM = (
    "Tried to allocate 216.00 MiB (GPU 0; 7.92 GiB total capacity; 69.17 MiB already allocated; "
    "24.56 MiB free; 86.00 MiB reserved in total by PyTorch)"
)
NEW_FORM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
    "of 23.69 GiB of which 1.06 GiB is free. Of the allocated memory 12.80 GiB is allocated by PyTorch, "
    "and 9.50 GiB is reserved by PyTorch but unallocated."
)


def test_parse_oom_reads_both_forms() -> None:
    old = parse_oom(OLD_FORM)
    assert old.total == int(7.92 * GIB) and old.reserved == 86 * 2**20 and old.wanted == 216 * 2**20
    assert old.others is not None and old.others > 7 * GIB
    new = parse_oom(NEW_FORM)
    assert new.reserved == int(12.8 * GIB) + int(9.5 * GIB) and new.cached == int(9.5 * GIB)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (OLD_FORM, "something else holds"),
        (NEW_FORM, "fragmentation"),
        ("cuda error: out of memory at /workspace/csrc/cumem_allocator.cpp:62", "vLLM"),
        ("RuntimeError: CUDA out of memory", "more memory than the GPU"),
    ],
)
def test_ed303_tells_what_holds_the_memory(text: str, words: str) -> None:
    (hit,) = _found(_report(RTX, {}, text), "ED303")
    assert words in hit.title


# -- ED203 ---------------------------------------------------------------------------------------------

UNAVAILABLE = {"cuda_available": False, "device_count": 0, "devices": [], "smoke": None}


def test_ed203_puts_what_the_facts_show_first() -> None:
    hidden = _report(RTX, {"torch": {**UNAVAILABLE, "cuda_visible_devices": "1"}})
    (hit,) = _found(hidden, "ED203")
    assert "(1) CUDA_VISIBLE_DEVICES='1' names GPU 1, but this machine has 1" in hit.detail
    assert hit.fixes[0].commands == ("unset CUDA_VISIBLE_DEVICES",)
    warned = (
        "CUDA initialization: Unexpected error from cudaGetDeviceCount(). Error 803: system has unsupported "
        "display driver / cuda driver combination"
    )
    (mismatch,) = _found(_report(RTX, {"torch": {**UNAVAILABLE, "warnings": [warned]}}), "ED203")
    assert "Error 803" in mismatch.detail
    assert "broken or half-updated" not in mismatch.detail  # the error number settles it
    assert "sudo reboot" in mismatch.fixes[0].commands


def test_ed203_names_a_driver_that_runs_the_build_only_by_compatibility() -> None:
    compat = {"driver_version": "525.60.13", "cuda_driver_version": 12000}
    (hit,) = _found(_report(RTX, {"nvml": compat, "torch": UNAVAILABLE}), "ED203")
    assert "minor-version compatibility" in hit.detail and "(1) driver 525.60.13" in hit.detail


# -- knowledge -----------------------------------------------------------------------------------------


def test_the_tables_behind_the_rules() -> None:
    assert [bundled_ptxas(v).cuda for v in ("2.1.0", "2.2.0", "3.1.0+cf34004b8a", "3.5.1")] == [
        "12.1",
        "12.3",
        "12.4",
        "12.8",
    ]  # type: ignore[union-attr]
    assert bundled_ptxas("2.0.0") is None and bundled_ptxas("not a version") is None
    assert first_cuda((8, 6)) == (11, 1) and first_cuda_provenance().source
    assert first_cuda((3, 5)) is None
    assert (cuda_number("cu90"), cuda_number("12.3.107"), cuda_number("rocm6.2")) == ((9, 0), (12, 3), None)
