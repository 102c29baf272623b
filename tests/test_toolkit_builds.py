"""What an extension build needs besides the toolkit: the toolkit probe's new facts on recorded
machines, the nvcc knowledge table, and the rules ED410-ED423 (with the changes to ED402-ED409)
on machines that differ from a healthy one by one fact."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from envdoctor.engine import diagnose
from envdoctor.knowledge import cuda_libraries
from envdoctor.knowledge import nvcc as nvcc_data
from envdoctor.model.findings import Finding
from envdoctor.probes import toolkit
from envdoctor.probes.base import ProbeContext
from envdoctor.probes.toolkit import ToolkitFacts
from envdoctor.snapshot import snapshot_from_data
from tests.corpus_support import base_data, merge
from tests.host_builder import LINUX, WINDOWS_11, Machine, target
from tests.scenario_fixtures import GCC_11, nvcc_version, version_json

VENV = "/home/user/project/.venv"
SITE = f"{VENV}/lib/python3.11/site-packages"
LINUX_PATH = "/usr/local/bin:/usr/bin:/bin"


def _facts(machine: Machine, prefix: str = VENV, version: str = "3.11.9") -> ToolkitFacts:
    machine.folder(prefix)
    return toolkit.collect(
        ProbeContext(host=machine.host, target=target(f"{prefix}/bin/python", prefix, version))
    )


def _linux(env: dict[str, str] | None = None) -> Machine:
    machine = Machine(LINUX, {"PATH": f"{VENV}/bin:{LINUX_PATH}", "SHELL": "/bin/bash", **(env or {})})
    machine.folder(f"{VENV}/bin").folder(SITE).folder("/usr/local").folder("/usr/local/bin").folder(
        "/usr/bin"
    )
    machine.folder("/bin")
    return machine


def _with_toolkit(machine: Machine, version: str = "12.1", release: str = "12.1") -> Machine:
    root = f"/usr/local/cuda-{version}"
    machine.host.environ["PATH"] = f"{root}/bin:" + machine.host.environ["PATH"]
    machine.file(f"{root}/bin/nvcc").file(f"{root}/include/cuda_runtime.h")
    machine.file(f"{root}/version.json", version_json(f"{version}.1"))
    machine.program("nvcc", f"{root}/bin/nvcc")
    machine.command((f"{root}/bin/nvcc", "--version"), nvcc_version(release, f"{release}.105"))
    return machine


# --- the probe --------------------------------------------------------------------------------------


def test_the_host_compiler_is_the_gcc_on_path_unless_cc_names_one() -> None:
    machine = _with_toolkit(_linux())
    machine.program("gcc", "/usr/bin/gcc").command(("/usr/bin/gcc", "--version"), GCC_11)
    compiler = _facts(machine).host_compiler
    assert compiler is not None
    assert (compiler.path, compiler.chosen_by, compiler.family, compiler.version) == (
        "/usr/bin/gcc",
        "gcc on PATH",
        "gcc",
        "11.4.0",
    )
    fedora = (
        "gcc (GCC) 13.2.1 20231011 (Red Hat 13.2.1-4)\nCopyright (C) 2023 Free Software Foundation, Inc.\n"
    )
    conda = _with_toolkit(_linux({"CC": "/opt/conda/bin/x86_64-conda-linux-gnu-cc"}))
    conda.command(("/opt/conda/bin/x86_64-conda-linux-gnu-cc", "--version"), fedora)
    chosen = _facts(conda).host_compiler
    assert chosen is not None and (chosen.chosen_by, chosen.version, chosen.major) == ("CC", "13.2.1", 13)


def test_no_nvcc_means_no_compiler_is_run() -> None:
    machine = _linux().program("nvcc", None)  # no which("gcc") scripted: asking would fail the test
    facts = _facts(machine)
    assert facts.host_compiler is None
    assert not [c for c in machine.host.calls if c[-1:] == ("--version",)]


def test_clang_is_told_apart_from_gcc() -> None:
    machine = _with_toolkit(_linux({"CC": "clang"}))
    machine.command(
        ("clang", "--version"), "Ubuntu clang version 17.0.6 (9ubuntu1)\nTarget: x86_64-pc-linux-gnu\n"
    )
    compiler = _facts(machine).host_compiler
    assert compiler is not None and (compiler.family, compiler.version) == ("clang", "17.0.6")


def test_ninja_in_the_environment_but_not_on_path() -> None:
    machine = _linux().program("nvcc", None)
    machine.host.environ["PATH"] = LINUX_PATH
    machine.file(f"{VENV}/bin/ninja")
    ninja = _facts(machine).ninja
    assert ninja is not None and (ninja.on_path, ninja.in_environment) == (None, f"{VENV}/bin/ninja")
    machine.host.environ["PATH"] = f"{VENV}/bin:{LINUX_PATH}"
    found = _facts(machine).ninja
    assert found is not None and found.on_path == f"{VENV}/bin/ninja"


def test_python_headers_belong_to_the_venvs_base_installation() -> None:
    machine = _linux().program("nvcc", None)
    machine.file(f"{VENV}/pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = false\n")
    machine.folder("/usr/include/python3.11")
    headers = _facts(machine).python_headers
    assert headers is not None and (headers.include, headers.has_python_h) == (
        "/usr/include/python3.11",
        False,
    )
    machine.file("/usr/include/python3.11/Python.h")
    found = _facts(machine).python_headers
    assert found is not None and found.has_python_h


def test_temp_space_torch_arch_list_and_build_requirements() -> None:
    machine = _linux({"TMPDIR": "/scratch/tmp", "TORCH_CUDA_ARCH_LIST": "8.0 8.6+PTX"}).program("nvcc", None)
    machine.host.working_dir = "/home/user/ext"
    machine.file(
        "/home/user/ext/pyproject.toml",
        '[build-system]\nrequires = ["setuptools", "torch>=2.1", "torchvision-like"]\n',
    )
    facts = _facts(machine)
    assert facts.temp is not None and (facts.temp.path, facts.temp.chosen_by) == ("/scratch/tmp", "TMPDIR")
    assert facts.torch_cuda_arch_list == "8.0 8.6+PTX"
    assert facts.build_requirements is not None and facts.build_requirements.torch == ("torch>=2.1",)


def test_torch_lib_copies_and_soname_users_with_system_cudnn() -> None:
    machine = _linux().program("nvcc", None)
    machine.files(f"{SITE}/torch/lib", "libtorch_cpu.so", "libcudnn.so.8", "libcudnn_ops_infer.so.8")
    machine.folder(f"{SITE}/ctranslate2-3.24.0.dist-info")
    machine.file("/etc/ld.so.conf.d/cuda.conf", "/usr/local/cuda-11.8/lib64\n# a comment\n")
    machine.files("/usr/local/cuda-11.8/lib64", "libcudnn.so.8", "libcudnn.so.8.9.2")
    machine.absent("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib/x86_64-linux-gnu")
    facts = _facts(machine)
    bundled = {(c.family, c.package) for c in facts.bundled_libraries}
    assert ("libtorch", "torch") in bundled and ("cudnn", "torch") in bundled
    assert [(p.name, p.version) for p in facts.soname_users] == [("ctranslate2", "3.24.0")]
    assert [(c.directory, c.version) for c in facts.system_libraries] == [
        ("/usr/local/cuda-11.8/lib64", "8.9.2")
    ]


def test_windows_msvc_environment() -> None:
    cl = "C:\\VS\\VC\\Tools\\MSVC\\14.29\\bin\\Hostx86\\x86"
    machine = Machine(WINDOWS_11, {"Path": cl, "VSCMD_ARG_TGT_ARCH": "x86", "VSCMD_ARG_HOST_ARCH": "x86"})
    machine.file(f"{cl}\\cl.exe").program("nvcc", None)
    machine.host.dirs["C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA"] = ()
    prefix = "C:\\Users\\user\\project\\.venv"
    machine.folder(prefix)
    facts = toolkit.collect(
        ProbeContext(host=machine.host, target=target(f"{prefix}\\Scripts\\python.exe", prefix))
    )
    assert facts.msvc is not None and (facts.msvc.target_arch, facts.msvc.cl_on_path) == (
        "x86",
        f"{cl}\\cl.exe",
    )
    assert facts.python_headers is None  # Windows installers always bring them


# --- knowledge ---------------------------------------------------------------------------------------


def test_host_compiler_limits() -> None:
    limit = nvcc_data.host_compiler_limit("12.1.105")
    assert limit is not None and limit.newest_gcc == 12
    gap = nvcc_data.host_compiler_limit("12.7")  # no such release: 12.6's limit
    assert gap is not None and gap.cuda == "12.6"
    assert nvcc_data.host_compiler_limit("14.0") is None  # newer than the data: no guess
    assert nvcc_data.first_cuda_accepting(13, "12.1") == "12.3"


def test_nvcc_architectures() -> None:
    assert nvcc_data.nvcc_builds_for("11.6", "8.9") is False
    assert nvcc_data.nvcc_builds_for("11.8", "8.9") is True
    assert nvcc_data.nvcc_builds_for("13.0", "5.0") is False  # dropped
    assert nvcc_data.nvcc_builds_for("12.8", "9.0a") is True
    assert nvcc_data.nvcc_builds_for("12.8", "42.0") is None


def test_torch_arch_list_entries() -> None:
    assert nvcc_data.arch_list_entries("Ampere 9.0+PTX") == ("8.0", "8.6+PTX", "9.0+PTX")
    assert nvcc_data.torch_accepts_arch("1.13.1", "9.0+PTX") is False
    assert nvcc_data.torch_accepts_arch("2.0.1", "9.0+PTX") is True
    assert nvcc_data.torch_accepts_arch("2.9.0", "10.1") is False  # renamed 11.0 in torch 2.9
    assert nvcc_data.torch_accepts_arch("2.3.1", "cpu") is False
    assert nvcc_data.torch_accepts_arch("2.3.1", "13.0") is None  # an architecture the data does not know


def test_soname_loaders() -> None:
    old = cuda_libraries.soname_loader("ctranslate2", "3.24.0")
    new = cuda_libraries.soname_loader("ctranslate2", "4.5.0")
    assert old is not None and (old.major, old.cuda) == ("8", "11")
    assert new is not None and new.major == "9"
    assert cuda_libraries.soname_loader("numpy", "2.0.0") is None


# --- rules on a healthy machine with one fact changed -----------------------------------------------

BASE = "linux-rtx4090-driver535-cu121-healthy"


def _toolkit(**changes: Any) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "os": "linux",
        "shell": "bash",
        "path": [f"{VENV}/bin", "/usr/bin"],
        "site_packages": [SITE],
    }
    facts.update(changes)
    return facts


def _findings(facts: dict[str, Any], pasted: str | None = None, base: str = BASE) -> tuple[Finding, ...]:
    data = copy.deepcopy(base_data(base))
    probes = {p["probe"]: p for p in data["probes"]}
    for probe, change in facts.items():
        if probe not in probes:
            probes[probe] = {"probe": probe, "status": "ok", "seconds": 0.01, "error": None, "facts": {}}
            data["probes"].append(probes[probe])
        probes[probe]["facts"] = merge(probes[probe]["facts"] or {}, change)
    snap = snapshot_from_data(data, "test")
    return diagnose(snap.platform, snap.interpreter, snap.probes, pasted=pasted).findings


def _codes(findings: tuple[Finding, ...]) -> set[str]:
    return {f.code for f in findings}


def _text(finding: Finding) -> str:
    return "\n".join(
        [
            finding.title,
            finding.detail,
            *(f.summary for f in finding.fixes),
            *(c for f in finding.fixes for c in f.commands),
        ]
    )


def _tk(root: str, version: str | None, **flags: Any) -> dict[str, Any]:
    row = {"root": root, "version": version, "version_from": "version.json", "found_by": ["default location"]}
    row.update({"exists": True, "has_nvcc": True, "has_headers": True, **flags})
    return row


def _home(path: str, chosen_by: str, version: str | None, **flags: Any) -> dict[str, Any]:
    return {
        "path": path,
        "chosen_by": chosen_by,
        "version": version,
        "exists": True,
        "has_nvcc": True,
        "has_headers": True,
        **flags,
    }


def _nvcc(path: str, release: str) -> dict[str, Any]:
    return {"path": path, "resolved": path, "release": release}


@pytest.mark.parametrize(
    ("value", "meant"),
    [
        (":/usr/local/cuda-12.1", "/usr/local/cuda-12.1"),
        ("/usr/local/cuda-12.1:", "/usr/local/cuda-12.1"),
        ("/usr/local/cuda-12.1/bin", "/usr/local/cuda-12.1"),
        ("/usr/local/cuda-12.1/bin/nvcc", "/usr/local/cuda-12.1"),
    ],
)
def test_a_malformed_cuda_home_gets_the_folder_it_meant(value: str, meant: str) -> None:
    facts = {
        "toolkit": _toolkit(
            cuda_env=[{"name": "CUDA_HOME", "value": value}],
            toolkits=[_tk("/usr/local/cuda-12.1", "12.1.1")],
            cuda_home=_home(value, "CUDA_HOME", None, exists=False, has_nvcc=False, has_headers=False),
        )
    }
    findings = _findings(facts)
    ed411 = next(f for f in findings if f.code == "ED411")
    assert ed411.fixes[0].commands == (f"export CUDA_HOME={meant}",)
    assert next(f for f in findings if f.code == "ED404").folded_under == "ED411"
    assert "ED406" not in _codes(findings)  # its "unset CUDA_HOME" would lose the toolkit


def test_a_plain_cuda_home_is_not_malformed() -> None:
    facts = {"toolkit": _toolkit(cuda_env=[{"name": "CUDA_HOME", "value": "/usr/local/cuda-12.1"}])}
    assert "ED411" not in _codes(_findings(facts))


def test_toolkit_not_found_only_without_nvcc_and_cuda_home() -> None:
    found = _findings({"toolkit": _toolkit(toolkits=[_tk("/usr/local/cuda-12.1", "12.1.1")])})
    ed410 = next(f for f in found if f.code == "ED410")
    assert "export CUDA_HOME=/usr/local/cuda-12.1" in _text(ed410) and "sudo" in ed410.detail
    on_path = _toolkit(
        toolkits=[_tk("/usr/local/cuda-12.1", "12.1.1")],
        nvcc=_nvcc("/usr/local/cuda-12.1/bin/nvcc", "12.1"),
        cuda_home=_home("/usr/local/cuda-12.1", "nvcc on PATH", "12.1.1"),
    )
    assert "ED410" not in _codes(_findings({"toolkit": on_path}))


def _gcc_machine(gcc: str, cuda: str = "12.1") -> dict[str, Any]:
    root = f"/usr/local/cuda-{cuda}"
    return {
        "toolkit": _toolkit(
            nvcc=_nvcc(f"{root}/bin/nvcc", cuda),
            toolkits=[_tk(root, cuda)],
            cuda_home=_home(root, "nvcc on PATH", cuda),
            host_compiler={
                "path": "/usr/bin/gcc",
                "chosen_by": "gcc on PATH",
                "family": "gcc",
                "version": gcc,
            },
        )
    }


def test_host_compiler_too_new_and_the_torch_table_case() -> None:
    assert "ED412" in _codes(_findings(_gcc_machine("13.2.1")))
    assert "ED412" not in _codes(_findings(_gcc_machine("12.3.0")))
    # gcc 14 with CUDA 12.9 is fine for nvcc; torch's own (older) table refusing it is another cause.
    said = "RuntimeError: The current installed version of /usr/bin/c++ (14.2.0) is greater than the maximum"
    findings = _findings(_gcc_machine("14.2.0", "12.9"), pasted=said)
    ed412 = next(f for f in findings if f.code == "ED412")
    assert "TORCH_DONT_CHECK_COMPILER_ABI" in _text(ed412)


def test_nvcc_too_old_for_the_gpu_offers_an_older_arch() -> None:
    root = "/usr/local/cuda-11.6"
    facts = {
        "toolkit": _toolkit(
            nvcc=_nvcc(f"{root}/bin/nvcc", "11.6"),
            toolkits=[_tk(root, "11.6.2")],
            cuda_home=_home(root, "nvcc on PATH", "11.6.2"),
        )
    }
    ed413 = next(f for f in _findings(facts) if f.code == "ED413")
    assert "11.8" in _text(ed413) and "TORCH_CUDA_ARCH_LIST=8.6+PTX" in _text(ed413)
    facts["toolkit"]["torch_cuda_arch_list"] = "8.6"  # the list decides: ED414's business
    assert "ED413" not in _codes(_findings(facts))


def test_arch_list_entries_torch_rejects_are_dropped() -> None:
    root = "/usr/local/cuda-12.8"
    facts = {
        "torch": {"version": "2.9.0+cu128", "dist_version": "2.9.0+cu128", "cuda": "12.8"},
        "nvml": {"driver_version": "570.133.07", "cuda_driver_version": 12080},
        "toolkit": _toolkit(
            nvcc=_nvcc(f"{root}/bin/nvcc", "12.8"),
            toolkits=[_tk(root, "12.8.1")],
            cuda_home=_home(root, "nvcc on PATH", "12.8.1"),
            torch_cuda_arch_list="8.9;10.1+PTX",
        ),
    }
    ed414 = next(f for f in _findings(facts) if f.code == "ED414")
    assert "'10.1+PTX'" in ed414.detail and "TORCH_CUDA_ARCH_LIST=8.9+PTX" in _text(ed414)


def test_a_build_without_gpu_needs_an_arch_list() -> None:
    root = "/usr/local/cuda-12.1"
    toolkit_facts = _toolkit(
        nvcc=_nvcc(f"{root}/bin/nvcc", "12.1"),
        toolkits=[_tk(root, "12.1.1")],
        cuda_home=_home(root, "nvcc on PATH", "12.1.1"),
    )
    no_gpu = {"status": "library_not_found", "driver_version": None, "cuda_driver_version": None, "gpus": []}
    facts = {
        "nvml": no_gpu,
        "torch": {"device_count": 0, "devices": [], "cuda_available": False},
        "toolkit": toolkit_facts,
    }
    ed415 = next(f for f in _findings(facts) if f.code == "ED415")
    assert "TORCH_CUDA_ARCH_LIST='5.0 6.0 7.0 7.5 8.0 8.6 9.0+PTX'" in _text(
        ed415
    )  # torch 2.3.1+cu121's own list
    assert "ED415" not in _codes(_findings({"toolkit": toolkit_facts}))  # the GPU is there


def test_ninja_missing_needs_its_error_unless_the_env_has_one() -> None:
    none = {"toolkit": _toolkit(ninja={"on_path": None, "in_environment": None})}
    assert "ED416" not in _codes(_findings(none))  # most machines never build: no news
    ed416 = next(
        f
        for f in _findings(none, pasted="RuntimeError: Ninja is required to load C++ extensions")
        if f.code == "ED416"
    )
    assert f"{VENV}/bin/python -m pip install ninja" in _text(ed416)
    own = {
        "toolkit": _toolkit(path=["/usr/bin"], ninja={"on_path": None, "in_environment": f"{VENV}/bin/ninja"})
    }
    ed416 = next(f for f in _findings(own) if f.code == "ED416")
    assert f"export PATH={VENV}/bin:" in _text(ed416)


def test_python_headers_missing_mentions_triton_for_a_gpu_torch() -> None:
    facts = {
        "toolkit": _toolkit(python_headers={"include": "/usr/include/python3.11", "has_python_h": False})
    }
    ed418 = next(f for f in _findings(facts) if f.code == "ED418")
    assert "Triton" in ed418.detail and "sudo apt install python3.11-dev" in _text(ed418)


@pytest.mark.parametrize(("free_gib", "fires"), [(1.5, True), (2.9, True), (3.0, False), (50.0, False)])
def test_temp_folder_threshold(free_gib: float, fires: bool) -> None:
    temp = {
        "path": "/tmp",
        "chosen_by": "default",
        "free_bytes": int(free_gib * 2**30),
        "total_bytes": 100 * 2**30,
    }
    assert ("ED419" in _codes(_findings({"toolkit": _toolkit(temp=temp)}))) is fires


def test_libtorch_copies_but_not_torchs_own_lib() -> None:
    files = ["libc10.so", "libtorch_cpu.so"]
    own = f"{SITE}/torch/lib"
    copy_of = {"family": "libtorch", "files": files, "version": None, "package": None}
    facts = {
        "toolkit": _toolkit(
            ld_library_path=[own],
            loader_path_libraries=[{**copy_of, "directory": own, "resolved": own, "position": 0}],
        )
    }
    assert "ED420" not in _codes(_findings(facts))
    other = "/opt/libtorch/lib"
    facts = {
        "toolkit": _toolkit(
            ld_library_path=[other],
            loader_path_libraries=[{**copy_of, "directory": other, "resolved": other, "position": 0}],
        )
    }
    assert "ED420" in _codes(_findings(facts))


def test_stub_libcuda_only_from_a_stubs_folder() -> None:
    def copy_in(folder: str, files: list[str]) -> dict[str, Any]:
        return {
            "family": "libcuda",
            "directory": folder,
            "resolved": folder,
            "files": files,
            "version": None,
            "position": 0,
        }

    real = {
        "toolkit": _toolkit(
            ld_library_path=["/usr/local/nvidia/lib64"],
            loader_path_libraries=[copy_in("/usr/local/nvidia/lib64", ["libcuda.so.1"])],
        )
    }
    assert "ED421" not in _codes(_findings(real))
    stub = {
        "toolkit": _toolkit(
            ld_library_path=["/usr/local/cuda/lib64/stubs"],
            loader_path_libraries=[copy_in("/usr/local/cuda/lib64/stubs", ["libcuda.so", "libcuda.so.1"])],
        )
    }
    ed421 = next(f for f in _findings(stub) if f.code == "ED421")
    assert "libcuda.so.1" in ed421.detail


def test_cudnn_for_a_soname_loader_found_in_the_system_folders_is_fine() -> None:
    cudnn8 = ["libcudnn.so.8", "libcudnn_ops_infer.so.8"]
    wheel = {
        "family": "cudnn",
        "directory": f"{SITE}/nvidia/cudnn/lib",
        "resolved": f"{SITE}/nvidia/cudnn/lib",
        "files": cudnn8,
        "version": "8.9.2.26",
        "package": "nvidia_cudnn_cu12-8.9.2.26.dist-info",
    }
    users = [{"name": "ctranslate2", "version": "4.1.0"}]
    missing = {"toolkit": _toolkit(soname_users=users, bundled_libraries=[wheel])}
    ed422 = next(f for f in _findings(missing) if f.code == "ED422")
    assert f"export LD_LIBRARY_PATH={SITE}/nvidia/cudnn/lib" in _text(ed422)  # unset before: no stray ':'
    system = {
        **wheel,
        "directory": "/usr/lib/x86_64-linux-gnu",
        "resolved": "/usr/lib/x86_64-linux-gnu",
        "package": None,
    }
    present = {"toolkit": _toolkit(soname_users=users, bundled_libraries=[wheel], system_libraries=[system])}
    assert "ED422" not in _codes(_findings(present))


def test_build_isolation_from_the_error_or_the_project() -> None:
    facts = {"toolkit": _toolkit()}
    assert "ED423" not in _codes(_findings(facts))
    said = "      ModuleNotFoundError: No module named 'torch'"
    assert "ED423" in _codes(_findings(facts, pasted=said))
    project = {
        "toolkit": _toolkit(build_requirements={"path": "/home/user/ext/pyproject.toml", "torch": ["torch"]})
    }
    ed423 = next(f for f in _findings(project) if f.code == "ED423")
    assert "--no-build-isolation" in _text(ed423)


def test_cudnn_shadow_against_torchs_own_compiled_version() -> None:
    """torch <= 1.13 keeps cuDNN in torch/lib (the names tell only the major): the version torch
    reports, or the one its error names, is what an LD_LIBRARY_PATH copy is compared with."""
    old = {
        "family": "cudnn",
        "directory": "/opt/cudnn/lib64",
        "resolved": "/opt/cudnn/lib64",
        "files": ["libcudnn.so.8", "libcudnn.so.8.0.3"],
        "version": "8.0.3",
        "position": 0,
    }
    facts = {
        "torch": {"version": "1.12.0+cu113", "dist_version": "1.12.0+cu113", "cuda": "11.3", "cudnn": 8302},
        "toolkit": _toolkit(ld_library_path=["/opt/cudnn/lib64"], loader_path_libraries=[old]),
    }
    ed407 = next(f for f in _findings(facts) if f.code == "ED407")
    assert "torch bundles 8.3.2" in ed407.detail


def test_major_mismatch_finds_a_torch_build_for_the_toolkit() -> None:
    root = "/usr/local/cuda-12.2"
    facts = {
        "torch": {"version": "2.0.1+cu117", "dist_version": "2.0.1+cu117", "cuda": "11.7", "companions": []},
        "toolkit": _toolkit(
            nvcc=_nvcc(f"{root}/bin/nvcc", "12.2"),
            toolkits=[_tk(root, "12.2.2")],
            cuda_home=_home(root, "nvcc on PATH", "12.2.2"),
        ),
    }
    ed402 = next(f for f in _findings(facts) if f.code == "ED402")
    assert "torch build for CUDA 12.1" in _text(ed402)


def test_the_healthy_machine_stays_quiet_with_every_new_fact() -> None:
    facts = {
        "toolkit": _toolkit(
            ninja={"on_path": None, "in_environment": None},
            python_headers={"include": "/usr/include/python3.11", "has_python_h": True},
            temp={
                "path": "/tmp",
                "chosen_by": "default",
                "free_bytes": 100 * 2**30,
                "total_bytes": 200 * 2**30,
            },
        )
    }
    assert not {c for c in _codes(_findings(facts)) if c.startswith("ED4")}


# --- ED424: a sub-library torch's cuDNN wheel lacks, answered by a system cuDNN ----------------------

CUDNN9_WHEEL = ["libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9"]


def test_the_system_folders_are_read_where_torchs_cudnn_wheel_is_installed() -> None:
    machine = _linux().program("nvcc", None)
    machine.folder(f"{SITE}/nvidia_cudnn_cu13-9.20.0.48.dist-info")
    machine.files(f"{SITE}/nvidia/cudnn/lib", *CUDNN9_WHEEL)
    machine.files(
        "/usr/lib/x86_64-linux-gnu",
        "libc.so.6",
        "libcudnn.so.9.23.2",
        "libcudnn_engines_tensor_ir.so.9",
        "libcudnn_engines_tensor_ir.so.9.23.2",
    )
    machine.absent("/etc/ld.so.conf.d", "/usr/lib/aarch64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64")
    machine.absent("/usr/lib", "/usr/local/lib")
    facts = _facts(machine)
    assert facts.soname_users == ()
    assert [(c.directory, c.version) for c in facts.system_libraries] == [
        ("/usr/lib/x86_64-linux-gnu", "9.23.2")
    ]
    assert "libc.so.6" not in facts.system_libraries[0].files


def _cudnn_wheel(files: list[str], version: str = "9.20.0.48") -> dict[str, Any]:
    lib = f"{SITE}/nvidia/cudnn/lib"
    return {
        "family": "cudnn",
        "directory": lib,
        "resolved": lib,
        "files": files,
        "version": version,
        "package": f"nvidia_cudnn_cu13-{version}.dist-info",
    }


def _system_cudnn(files: list[str], version: str | None) -> dict[str, Any]:
    folder = "/usr/lib/x86_64-linux-gnu"
    return {"family": "cudnn", "directory": folder, "resolved": folder, "files": files, "version": version}


def test_a_sub_library_only_the_system_cudnn_has_is_named_with_the_package_to_look_for() -> None:
    system = _system_cudnn(["libcudnn.so.9.23.2", "libcudnn_engines_tensor_ir.so.9.23.2"], "9.23.2")
    facts = {"toolkit": _toolkit(bundled_libraries=[_cudnn_wheel(CUDNN9_WHEEL)], system_libraries=[system])}
    said = "RuntimeError: cudnnFinalize failed cudnn_status: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH"
    ed424 = next(f for f in _findings(facts, pasted=said) if f.code == "ED424")
    assert "libcudnn_engines_tensor_ir.so.9" in ed424.title and "9.23.2" in ed424.title
    assert "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH" in ed424.detail
    assert ed424.fixes[0].commands == ("dpkg -S /usr/lib/x86_64-linux-gnu/libcudnn_engines_tensor_ir.so.9",)
    assert "ED407" not in _codes(_findings(facts))  # nothing on LD_LIBRARY_PATH


def test_a_system_cudnn_of_the_same_release_or_another_major_is_no_mix() -> None:
    same = _system_cudnn(["libcudnn_engines_tensor_ir.so.9.20.0"], "9.20.0.48")
    other_major = _system_cudnn(["libcudnn.so.8.9.7", "libcudnn_ops_infer.so.8"], "8.9.7")
    complete = _system_cudnn(["libcudnn_graph.so.9.23.2", "libcudnn_ops.so.9"], "9.23.2")
    for system in (same, other_major, complete):
        facts = {
            "toolkit": _toolkit(bundled_libraries=[_cudnn_wheel(CUDNN9_WHEEL)], system_libraries=[system])
        }
        assert "ED424" not in _codes(_findings(facts)), system
