"""The toolkit probe on recorded machines, its parsers, its rules and the PATH edits they print."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from envdoctor.engine import diagnose
from envdoctor.host.base import CommandResult
from envdoctor.host.fake import FakeHost
from envdoctor.host.live import LiveHost
from envdoctor.knowledge import cuda_libraries
from envdoctor.model.findings import Finding, PlatformInfo, ProbeResult, ProbeStatus, Severity
from envdoctor.probes import toolkit
from envdoctor.probes.base import NotApplicable, ProbeContext
from envdoctor.probes.toolkit import ToolkitFacts
from envdoctor.rules.env_edits import path_removal_fixes, set_variable_fixes
from envdoctor.snapshot import load
from envdoctor.target import resolve_target
from tests.edit_simulation import apply
from tests.fixture_support import FIXTURES
from tests.host_builder import LINUX, Machine, target
from tests.scenario_fixtures import SCENARIOS, Scenario, nvcc_version

VENV = "/home/user/project/.venv"


def _facts(machine: Machine, python: str = f"{VENV}/bin/python", prefix: str = VENV) -> ToolkitFacts:
    machine.folder(prefix)  # the examined environment exists (FakeHost lists only what is scripted)
    return toolkit.collect(ProbeContext(host=machine.host, target=target(python, prefix)))


def _findings(scenario: Scenario) -> tuple[Finding, ...]:
    snap = scenario.snapshot()
    return diagnose(snap.platform, snap.interpreter, snap.probes).findings


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_fixture_facts_are_what_the_probes_collect(name: str) -> None:
    """The fixtures' system, NVML, toolkit and windows facts are the probes' own output there."""
    stored = {p.probe: p for p in load(str(FIXTURES / f"{name}.json")).probes}
    fresh = {p.probe: p for p in SCENARIOS[name]().snapshot().probes}
    for probe in ("system", "nvml", "toolkit", "windows"):
        assert stored[probe].status == fresh[probe].status
        assert stored[probe].facts == fresh[probe].facts, f"{name}: {probe} facts changed; regenerate"


def test_this_machine_situation_is_described_without_alarm() -> None:
    scenario = SCENARIOS["linux-cuda13-toolkit-no-driver-cpu-torch"]()
    facts = _facts(scenario.machine)
    assert facts.nvcc is not None
    assert (facts.nvcc.release, facts.nvcc.build) == ("13.0", "13.0.88")
    assert facts.nvcc.wrapper_for == "/usr/local/cuda-13.0/bin/nvcc"
    assert [(t.root, t.version, t.found_by) for t in facts.toolkits] == [
        ("/usr/local/cuda-13.0", "13.0", ("nvcc on PATH", "default location"))
    ]
    assert "CUDA 13.0 at /usr/local/cuda-13.0" in toolkit.describe(facts)
    findings = _findings(scenario)
    assert [(f.code, f.severity) for f in findings] == [("ED104", Severity.INFO), ("ED401", Severity.INFO)]
    ed401 = findings[1]
    assert "need only an NVIDIA driver" in ed401.detail and "CPU-only build" in ed401.detail
    assert not ed401.fixes


def test_cpp_extension_home_follows_torch_order() -> None:
    """CUDA_HOME beats the nvcc on PATH; without it the folder above `which nvcc`, links unresolved."""
    scenario = SCENARIOS["linux-cuda-home-118-with-cu121-torch"]()
    facts = _facts(scenario.machine)
    assert facts.cuda_home is not None
    assert (facts.cuda_home.path, facts.cuda_home.chosen_by, facts.cuda_home.version) == (
        "/usr/local/cuda-11.8",
        "CUDA_HOME",
        "11.8.0",
    )
    wrapper = _facts(SCENARIOS["linux-nvcc-wrapper-cuda124-cu126-torch"]().machine)
    assert wrapper.cuda_home is not None
    assert (wrapper.cuda_home.path, wrapper.cuda_home.chosen_by) == ("/usr/local", "nvcc on PATH")
    assert wrapper.cuda_home.has_nvcc and not wrapper.cuda_home.has_headers
    assert wrapper.cuda_home.version == "12.4"


def test_path_entries_in_order_with_missing_and_repeated() -> None:
    facts = _facts(SCENARIOS["linux-cuda-home-118-with-cu121-torch"]().machine)
    rows = [(b.index, b.path, b.exists, b.has_nvcc, b.duplicate_of) for b in facts.cuda_bins]
    assert rows == [
        (0, "/usr/local/cuda-11.8/bin", True, True, None),
        (1, "/usr/local/cuda-12.1/bin", True, True, None),
        (2, "/usr/local/cuda-10.2/bin", False, False, None),
        (9, "/usr/local/cuda-11.8/bin", True, True, 0),
    ]


def test_loader_path_copies_and_bundled_wheels() -> None:
    facts = _facts(SCENARIOS["linux-ld-library-path-cuda121-breaks-cu124"]().machine)
    loader = {c.family: (c.version, c.position) for c in facts.loader_path_libraries}
    assert loader["nvjitlink"] == ("12.1.105", 0)
    assert loader["cublas"] == ("12.1.3.1", 0)
    bundled = {c.family: (c.version, c.package) for c in facts.bundled_libraries}
    assert bundled["nvjitlink"] == ("12.4.127", "nvidia_nvjitlink_cu12-12.4.127.dist-info")
    assert bundled["cudnn"][0] == "9.1.0.70"


def test_only_same_soname_other_release_shadows() -> None:
    """cuDNN 8 / CUDA 11 libraries on LD_LIBRARY_PATH cannot replace torch's cuDNN 9 / CUDA 12."""
    codes = {f.code for f in _findings(SCENARIOS["linux-cuda-home-118-with-cu121-torch"]())}
    assert not codes & {"ED407", "ED408"}
    working = {f.code for f in _findings(SCENARIOS["linux-nvcc-wrapper-cuda124-cu126-torch"]())}
    broken = {f.code for f in _findings(SCENARIOS["linux-ld-library-path-cuda121-breaks-cu124"]())}
    assert "ED407" in working and "ED408" not in working
    assert "ED408" in broken and "ED407" not in broken


def test_shadow_fix_removes_exactly_the_offending_entries() -> None:
    findings = _findings(SCENARIOS["linux-nvcc-wrapper-cuda124-cu126-torch"]())
    ed407 = next(f for f in findings if f.code == "ED407")
    assert "cudnn 9.1.0" in ed407.detail and "torch bundles 9.5.1.17" in ed407.detail
    commands = [c for fix in ed407.fixes for c in fix.commands]
    assert commands[0].startswith("env -u LD_LIBRARY_PATH ")
    entries = ("/opt/cudnn-9.1.0/lib", "/usr/local/cuda-12.4/lib64")  # both hold shadowing copies
    assert apply(commands, "posix", "LD_LIBRARY_PATH", ":".join((*entries, "/opt/other"))) == "/opt/other"


def test_major_mismatch_points_cuda_home_at_the_matching_toolkit() -> None:
    findings = _findings(SCENARIOS["linux-cuda-home-118-with-cu121-torch"]())
    ed402 = next(f for f in findings if f.code == "ED402")
    assert ed402.severity is Severity.WARNING
    assert "torch itself is fine" in ed402.detail
    assert "mismatches the version that was used to compile PyTorch (12.1)" in ed402.detail
    assert ed402.fixes[0].commands == ("export CUDA_HOME=/usr/local/cuda-12.1",)
    assert any("whl/cu118" in c for fix in ed402.fixes for c in fix.commands)


def test_several_toolkits_keep_the_one_matching_torch_and_drop_its_repeats() -> None:
    findings = _findings(SCENARIOS["linux-cuda-home-118-with-cu121-torch"]())
    ed405 = next(f for f in findings if f.code == "ED405")
    session = ed405.fixes[0].commands[0]
    assert "(keeping CUDA 12.1.1 at /usr/local/cuda-12.1/bin)" in ed405.fixes[0].summary
    path = "/usr/local/cuda-11.8/bin:/usr/local/cuda-12.1/bin:/usr/bin"
    assert apply([session], "posix", "PATH", path) == "/usr/local/cuda-12.1/bin:/usr/bin"


def test_stale_cuda_variable_gets_an_unset_fix() -> None:
    machine = Machine(LINUX, {"PATH": "/usr/bin", "SHELL": "/usr/bin/zsh", "CUDA_PATH": "/opt/cuda-11.0"})
    machine.absent("/etc/os-release", "/usr/lib/os-release")  # no distribution named
    machine.folder("/usr/bin").folder("/usr/local").program("nvcc", None)
    facts = _facts(machine)
    assert facts.toolkits[0].root == "/opt/cuda-11.0" and not facts.toolkits[0].exists
    scenario = SCENARIOS["linux-cuda13-toolkit-no-driver-cpu-torch"]()
    scenario.machine = machine
    machine.file("/proc/version", "Linux version 6.8.0-45-generic\n").file("/proc/1/cgroup", "0::/\n")
    ed406 = next(f for f in _findings(scenario) if f.code == "ED406")
    assert ed406.fixes[0].commands == ("unset CUDA_PATH",)
    assert "~/.zshrc" in ed406.fixes[1].commands[0]


def test_at_most_two_subprocesses_and_nvcc_failures_are_facts() -> None:
    machine = Machine(LINUX, {"PATH": "/opt/cuda/bin:/usr/bin"}).folder("/usr/local").folder("/usr/bin")
    machine.program("nvcc", "/opt/cuda/bin/nvcc").file("/opt/cuda/bin/nvcc").file(
        "/opt/cuda/include/cuda_runtime.h"
    )
    machine.host.commands[("/opt/cuda/bin/nvcc", "--version")] = CommandResult(None, timed_out=True)
    facts = _facts(machine)
    assert facts.nvcc is not None and facts.nvcc.release is None
    assert "hung for" in (facts.nvcc.error or "")
    runs = [c for c in machine.host.calls if c[-1:] == ("--version",)]
    assert 1 <= len(runs) <= 2


def test_large_nvcc_binaries_are_never_read() -> None:
    class Counting(FakeHost):
        def read_text(self, path: str) -> str:
            assert not path.endswith("/nvcc"), f"read {path}"
            return super().read_text(path)

    machine = Machine(LINUX, {"PATH": "/usr/local/cuda-12.4/bin"})
    machine.host = Counting(platform_info=LINUX, environ=machine.host.environ)
    scenario_root = "/usr/local/cuda-12.4"
    machine.file(f"{scenario_root}/bin/nvcc").file(f"{scenario_root}/include/cuda_runtime.h")
    machine.program("nvcc", f"{scenario_root}/bin/nvcc").program("gcc", None)
    machine.command((f"{scenario_root}/bin/nvcc", "--version"), nvcc_version("12.4", "12.4.131"))
    facts = _facts(machine)
    assert facts.toolkits[0].version == "12.4"  # from the folder name: no version.json here


def test_malformed_version_json_falls_back() -> None:
    machine = Machine(LINUX, {"PATH": "/usr/bin"})
    machine.file("/usr/local/cuda-11.7/version.json", "{not json").folder("/usr/bin").program("nvcc", None)
    facts = _facts(machine)
    assert [(t.version, t.version_from) for t in facts.toolkits] == [("11.7", "folder name")]


def test_macos_is_not_applicable() -> None:
    machine = Machine(PlatformInfo("Darwin", "24.0", "", "arm64"))
    with pytest.raises(NotApplicable):
        _facts(machine)


@pytest.mark.parametrize(
    ("name", "os_name", "expected"),
    [
        ("libnvJitLink.so.12.1.105", "linux", ("nvjitlink", "12.1.105")),
        ("libcudnn_ops.so.9.1.0", "linux", ("cudnn", "9.1.0")),
        ("libcublasLt.so.12", "linux", ("cublas", "12")),
        ("libcudart.so", "linux", ("cudart", None)),
        ("libcusparseLt.so.0", "linux", None),
        ("libcudart_static.a", "linux", None),
        ("cudnn_ops_infer64_8.dll", "windows", ("cudnn", "8")),
        ("cudart64_110.dll", "windows", ("cudart", "110")),
        ("nvJitLink_120_0.dll", "windows", ("nvjitlink", "120")),
        ("cusparseLt.dll", "windows", None),
    ],
)
def test_library_names(name: str, os_name: str, expected: tuple[str, str | None] | None) -> None:
    assert cuda_libraries.family_of(name, os_name) == expected


def test_wheel_names_and_release_comparison() -> None:
    assert cuda_libraries.wheel_family("nvidia_cuda_runtime_cu12-12.4.127.dist-info") == (
        "cudart",
        "12.4.127",
    )
    assert cuda_libraries.wheel_family("nvidia_cusparselt_cu12-0.6.2.dist-info") is None
    assert cuda_libraries.same_release("9.1.0", "9.1.0.70") is True
    assert cuda_libraries.same_release("12.1.105", "12.4.127") is False
    assert cuda_libraries.same_release("12", "12.4.127") is None


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", None])
def test_posix_path_edits(shell: str | None) -> None:
    entries = ["/a/bin", "/usr/local/cuda-10.2/bin", "/usr/bin", "/a/bin"]
    fixes = path_removal_fixes("linux", shell, "PATH", entries, [1, 3], "(stale)")
    session = fixes[0].commands[0]
    if shell == "fish":
        assert session.startswith(
            "set -gx PATH (printf '%s\\n' $PATH | grep -vxF -e /usr/local/cuda-10.2/bin"
        )
    else:
        # Relative to the live value: an entry added since the snapshot stays.
        assert apply([session], "posix", "PATH", ":".join(["/new", *entries])) == "/new:/a/bin:/usr/bin"
    assert "cuda-10.2" in fixes[1].commands[0]
    assert (
        set_variable_fixes("linux", shell, "CUDA_HOME", "/opt/my cuda", "")[0]
        .commands[0]
        .endswith("'/opt/my cuda'")
    )


def test_windows_path_edits_keep_first_copies() -> None:
    entries = ["C:\\A", "C:\\CUDA\\v11.8\\bin", "C:\\A"]
    repeat = path_removal_fixes("windows", None, "Path", entries, [2], "(repeat)")
    for shell, fix in (("powershell", repeat[0]), ("cmd", repeat[1])):
        assert apply(fix.commands, shell, "Path", ";".join(entries)) == "C:\\A;C:\\CUDA\\v11.8\\bin"
    assert "Select-Object -Unique" in repeat[2].commands[0]
    drop = path_removal_fixes("windows", None, "Path", entries, [1], "(old)")
    assert "-notin @('C:\\CUDA\\v11.8\\bin')" in drop[0].commands[0]
    for shell, fix in (("powershell", drop[0]), ("cmd", drop[1])):
        assert apply(fix.commands, shell, "Path", ";".join(entries)) == "C:\\A;C:\\A"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs an nvcc on PATH")
def test_live_machine_toolkit_is_found() -> None:
    """On the development machine: nvcc on PATH, no driver; the probe runs for real."""
    host = LiveHost()
    facts = toolkit.collect(ProbeContext(host=host, target=resolve_target(host, sys.executable)))
    assert facts.nvcc is not None and facts.nvcc.release
    assert any(t.version and t.version.startswith(facts.nvcc.release) for t in facts.toolkits)
    result = ProbeResult("toolkit", ProbeStatus.OK, 0.0, facts)
    assert toolkit.describe(result.facts)  # type: ignore[arg-type]


def test_live_realpath_and_windows_only_methods(tmp_path: os.PathLike[str]) -> None:
    real = os.path.join(tmp_path, "cuda-12.4")
    os.mkdir(real)
    link = os.path.join(tmp_path, "cuda")
    os.symlink(real, link)
    host = LiveHost()
    assert host.realpath(link) == os.path.realpath(real)
    if os.name != "nt":
        assert host.registry_values("HKLM\\SOFTWARE\\Microsoft", 64) is None
        assert host.file_version(sys.executable) is None


def test_conda_nvcc_package_is_a_toolkit() -> None:
    env = "/home/user/miniconda3/envs/ml"
    machine = Machine(LINUX, {"PATH": "/usr/bin", "CONDA_PREFIX": env})
    machine.folder("/usr/bin").folder("/usr/local").program("nvcc", None)  # not activated: not on PATH
    machine.file(f"{env}/conda-meta/cuda-nvcc-12.4.131-0.json", "{}")
    machine.file(f"{env}/conda-meta/cudatoolkit-11.8.0-h6a678d5_0.json", "{}")
    machine.file(f"{env}/bin/nvcc").file(f"{env}/include/cuda_runtime.h")
    facts = _facts(machine, f"{env}/bin/python", env)
    assert [(p.name, p.version) for p in facts.conda_packages] == [
        ("cuda-nvcc", "12.4.131"),
        ("cudatoolkit", "11.8.0"),
    ]
    assert [(t.root, t.version, t.found_by) for t in facts.toolkits] == [
        (env, "12.4.131", ("conda package cuda-nvcc",))
    ]


def _wrapper_first_then_matching_toolkit() -> Scenario:
    """/usr/local/bin holds an nvcc wrapper for CUDA 12.4; CUDA 12.6 (torch's) comes later on PATH."""
    from tests import scenario_fixtures as sf

    scenario = sf.linux_nvcc_wrapper_cuda124_cu126_torch()
    newer = "/usr/local/cuda-12.6"
    scenario.host.environ["PATH"] = f"{VENV}/bin:{sf.LINUX_PATH}:{newer}/bin"
    sf._toolkit(scenario.machine, newer, "12.6.3", "12.6", "12.6.85")
    return scenario


def test_several_toolkits_never_drop_a_system_folder_from_path() -> None:
    """Issue 13 item 24: dropping /usr/local/bin (it holds an nvcc wrapper) would lose every other
    program there; the fix names the wrapper instead."""
    findings = _findings(_wrapper_first_then_matching_toolkit())
    ed405 = next(f for f in findings if f.code == "ED405")
    commands = [c for fix in ed405.fixes for c in fix.commands]
    texts = [fix.summary for fix in ed405.fixes]
    path = f"{VENV}/bin:/usr/local/bin:/usr/bin:/usr/local/cuda-12.6/bin"
    after = apply(commands, "posix", "PATH", path).split(":")
    assert "/usr/local/bin" in after and after[0] == "/usr/local/cuda-12.6/bin"
    assert not any("Remove /usr/local/bin" in t for t in texts), texts
    assert any("/usr/local/bin/nvcc" in t for t in texts), texts


@pytest.mark.parametrize(
    ("os_name", "entries"),
    [
        (
            "linux",
            ["/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/sbin", "/usr/bin/"],
        ),
        (
            "windows",
            [
                "C:\\Windows\\System32",
                "c:\\windows\\system32\\",
                "C:\\Windows",
                "C:\\Windows\\System32\\Wbem",
            ],
        ),
    ],
)
def test_path_removal_never_drops_a_general_system_folder(os_name: str, entries: list[str]) -> None:
    """The one writer of PATH removals refuses system folders, whichever rule asks."""
    path = [*entries, "/opt/cuda/bin" if os_name == "linux" else "C:\\CUDA\\v11.8\\bin"]
    fixes = path_removal_fixes(os_name, "bash", "PATH", path, range(len(path)), "(test)")
    text = " ".join([f.summary for f in fixes] + [c for f in fixes for c in f.commands])
    for entry in entries:
        assert f"Remove {entry}" not in text and f"'{entry.rstrip(chr(92))}'" not in text.split("-notin")[-1]
    assert path[-1] in text
