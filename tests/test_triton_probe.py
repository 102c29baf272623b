"""The Triton probe on recorded machines (FakeHost): which Triton, the ptxas it runs and its CUDA, and
where it will find libcuda; nothing is run where Triton is not installed."""

from __future__ import annotations

import pytest

from envdoctor.probes import triton
from envdoctor.probes.base import NotApplicable, ProbeContext
from envdoctor.probes.triton import TritonFacts, parse_ldconfig
from tests.host_builder import LINUX, WINDOWS_11, Machine, target

PREFIX = "/home/user/project/.venv"
SITE = f"{PREFIX}/lib/python3.11/site-packages"
LIB = "/usr/lib/x86_64-linux-gnu"
PTXAS_12_3 = (
    "ptxas: NVIDIA (R) Ptx optimizing assembler\nCopyright (c) 2005-2023 NVIDIA Corporation\n"
    "Built on Wed_Nov_22_10:15:53_PST_2023\nCuda compilation tools, release 12.3, V12.3.107\n"
)
LDCONFIG = (
    "1203 libs found in cache `/etc/ld.so.cache'\n"
    f"\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda/lib64/libcudart.so.12\n"
    f"\tlibcuda.so.1 (libc6,x86-64) => {LIB}/libcuda.so.1\n"
    f"\tlibcuda.so (libc6,x86-64) => {LIB}/libcuda.so\n"
)


def _machine(
    env: dict[str, str] | None = None, version: str = "2.2.0", layout: str = "third_party/cuda"
) -> Machine:
    machine = Machine(LINUX, env or {})
    machine.folder(f"{SITE}/triton").folder(f"{SITE}/triton-{version}.dist-info").folder(f"{SITE}/torch")
    machine.file(f"{SITE}/triton/{layout}/bin/ptxas")
    return machine


def _collect(machine: Machine, prefix: str = PREFIX) -> TritonFacts:
    return triton.collect(ProbeContext(host=machine.host, target=target(f"{prefix}/bin/python", prefix)))


def test_triton_22_with_its_cuda_12_ptxas_and_a_complete_libcuda() -> None:
    machine = _machine()
    machine.command((f"{SITE}/triton/third_party/cuda/bin/ptxas", "--version"), PTXAS_12_3)
    machine.command(("/sbin/ldconfig", "-p"), LDCONFIG)
    machine.file(f"{LIB}/libcuda.so.1").file(f"{LIB}/libcuda.so")
    facts = _collect(machine)
    assert (facts.installed, facts.distribution, facts.version) == (True, "triton", "2.2.0")
    chosen = facts.chosen_ptxas()
    assert chosen is not None and (chosen.role, chosen.release) == ("bundled", "12.3")
    assert facts.libcuda_dirs == (LIB,) and facts.linkable()
    assert "ptxas: its own (CUDA 12.3)" in triton.describe(facts)


def test_only_libcuda_so_1_is_not_linkable_and_library_path_stubs_make_it_so() -> None:
    machine = _machine(version="3.1.0", layout="backends/nvidia")
    machine.command((f"{SITE}/triton/backends/nvidia/bin/ptxas", "--version"), PTXAS_12_3)
    machine.command(("/sbin/ldconfig", "-p"), f"\tlibcuda.so.1 (libc6,x86-64) => {LIB}/libcuda.so.1\n")
    machine.file(f"{LIB}/libcuda.so.1")
    facts = _collect(machine)
    assert facts.libcuda_dirs == (LIB,) and not facts.linkable()
    stubs = "/usr/local/cuda-11.8/lib64/stubs"
    again = _machine(env={"LIBRARY_PATH": stubs}, version="3.1.0", layout="backends/nvidia")
    again.command((f"{SITE}/triton/backends/nvidia/bin/ptxas", "--version"), PTXAS_12_3)
    again.command(("/sbin/ldconfig", "-p"), f"\tlibcuda.so.1 (libc6,x86-64) => {LIB}/libcuda.so.1\n")
    again.file(f"{LIB}/libcuda.so.1").file(f"{stubs}/libcuda.so")
    assert _collect(again).linkable()


def test_an_empty_ldconfig_cache_falls_back_to_ld_library_path_as_triton_does() -> None:
    folder = "/usr/local/nvidia/lib64"
    machine = _machine(env={"LD_LIBRARY_PATH": f"/opt/other:{folder}"})
    machine.command((f"{SITE}/triton/third_party/cuda/bin/ptxas", "--version"), PTXAS_12_3)
    machine.command(("/sbin/ldconfig", "-p"), "0 libs found in cache `/etc/ld.so.cache'\n")
    machine.file(f"{folder}/libcuda.so.1")
    facts = _collect(machine)
    assert facts.ldconfig_ran and facts.libcuda_dirs == (folder,)
    nothing = _machine()
    nothing.command((f"{SITE}/triton/third_party/cuda/bin/ptxas", "--version"), PTXAS_12_3)
    nothing.command(("/sbin/ldconfig", "-p"), "0 libs found in cache `/etc/ld.so.cache'\n")
    assert _collect(nothing).libcuda_dirs == ()


def test_triton_ptxas_path_and_torchs_own_ptxas_come_before_the_bundled_one() -> None:
    given = "/usr/local/cuda-11.8/bin/ptxas"
    machine = _machine(env={"TRITON_PTXAS_PATH": given})
    machine.file(given).file(f"{SITE}/torch/bin/ptxas")
    machine.command((given, "--version"), "Cuda compilation tools, release 11.8, V11.8.89\n")
    machine.command(
        (f"{SITE}/torch/bin/ptxas", "--version"), "Cuda compilation tools, release 11.8, V11.8.89\n"
    )
    machine.command((f"{SITE}/triton/third_party/cuda/bin/ptxas", "--version"), PTXAS_12_3)
    machine.command(("/sbin/ldconfig", "-p"), LDCONFIG)
    machine.file(f"{LIB}/libcuda.so.1").file(f"{LIB}/libcuda.so")
    facts = _collect(machine)
    assert [p.role for p in facts.ptxas] == ["TRITON_PTXAS_PATH", "torch", "bundled"]
    chosen = facts.chosen_ptxas()
    assert chosen is not None and (chosen.path, chosen.release) == (given, "11.8")
    assert facts.ptxas_path_env == given


def test_a_ptxas_that_gives_no_version_is_recorded_not_raised() -> None:
    machine = _machine()
    machine.command((f"{SITE}/triton/third_party/cuda/bin/ptxas", "--version"), "", returncode=126)
    machine.command(("/sbin/ldconfig", "-p"), LDCONFIG)
    machine.file(f"{LIB}/libcuda.so.1").file(f"{LIB}/libcuda.so")
    bundled = _collect(machine).bundled()
    assert (
        bundled is not None
        and bundled.release is None
        and bundled.error
        and "exit status 126" in bundled.error
    )


def test_no_triton_is_not_applicable_and_runs_nothing() -> None:
    machine = Machine(LINUX)
    machine.folder(f"{SITE}/torch")
    with pytest.raises(NotApplicable):
        _collect(machine)
    assert machine.host.calls == []


def test_windows_reads_the_windows_fork_and_asks_no_ldconfig() -> None:
    prefix = "C:\\Users\\user\\project\\.venv"
    site = f"{prefix}\\Lib\\site-packages"
    machine = Machine(WINDOWS_11)
    machine.folder(f"{site}\\triton").folder(f"{site}\\triton_windows-3.2.0.post19.dist-info")
    machine.file(f"{site}\\triton\\backends\\nvidia\\bin\\ptxas.exe")
    machine.command(
        (f"{site}\\triton\\backends\\nvidia\\bin\\ptxas.exe", "--version"), "release 12.8, V12.8.61\n"
    )
    facts = _collect(machine, prefix)
    assert (facts.distribution, facts.version) == ("triton_windows", "3.2.0.post19")
    assert not facts.ldconfig_ran and facts.libcuda == ()
    assert ("/sbin/ldconfig", "-p") not in machine.host.calls


def test_parse_ldconfig_keeps_only_libcuda_in_order() -> None:
    assert parse_ldconfig(LDCONFIG) == (f"{LIB}/libcuda.so.1", f"{LIB}/libcuda.so")
    assert parse_ldconfig("garbage\n\tlibcuda.so.1 without arrow\n") == ()
