"""The torch area's long-tail rules on facts: the boundaries the corpus entries do not pin down
(what each rule must not say, which of two rules owns a cause, what a fix keeps)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.engine import evaluate, judge
from envdoctor.knowledge.signatures import PASTED, ErrorText, evidence
from envdoctor.model.findings import Finding, Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes.torch_build import (
    BuiltFor,
    CacheEntry,
    ChildEnd,
    CondaPackage,
    Distribution,
    EntryPoint,
    ExtensionFacts,
    ExtensionLoad,
    JitCache,
    JitCaches,
    LoadStatus,
    NumpyFacts,
    PythonError,
    Surroundings,
    TorchCopy,
    TorchExtension,
    TorchFacts,
    UserSite,
)
from envdoctor.rules.base import RuleContext
from envdoctor.settings import Settings
from tests.support import PYTHON

LINUX = PlatformInfo("Linux", "6.8", "1", "x86_64")
WINDOWS = PlatformInfo("Windows", "11", "10", "AMD64")
SITE = "/env/lib/python3.11/site-packages"


def cpu_torch(**changes: object) -> TorchFacts:
    base = TorchFacts(
        installed=True,
        dist_version="2.3.1+cpu",
        version="2.3.1+cpu",
        location=f"{SITE}/torch/__init__.py",
        cuda_available=False,
        cxx11_abi=False,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def findings(*facts: object, platform: PlatformInfo = LINUX, pasted: str | None = None) -> list[Finding]:
    probes = tuple(ProbeResult(type(f).__name__, ProbeStatus.OK, 0.0, f) for f in (PYTHON, *facts))
    inputs: tuple[object, ...] = ()
    if pasted is not None:
        inputs = (evidence([ErrorText(PASTED, pasted)]),)
    ctx = RuleContext.build(platform, Interpreter("/env/bin/python", "r"), probes, inputs)
    return list(evaluate(ctx))


def codes(*facts: object, **kw: object) -> list[str]:
    return [f.code for f in findings(*facts, **kw)]  # type: ignore[arg-type]


def the(code: str, *facts: object, **kw: object) -> Finding:
    found = [f for f in findings(*facts, **kw) if f.code == code]  # type: ignore[arg-type]
    assert len(found) == 1, [f.code for f in findings(*facts, **kw)]  # type: ignore[arg-type]
    return found[0]


def commands(finding: Finding) -> str:
    return "\n".join(c for fix in finding.fixes for c in fix.commands)


def with_extension(
    ext: TorchExtension, *loads: ExtensionLoad, dists: tuple[Distribution, ...] = ()
) -> TorchFacts:
    return cpu_torch(extensions=ExtensionFacts(extensions=(ext,), extension_loads=loads, distributions=dists))


SO = f"{SITE}/torch_scatter/_scatter_cpu.so"


# -- ED212 / ED213 / ED205: who names an extension built for another torch ------------------------


def test_a_failed_load_is_ed212_with_the_page_of_builds_for_this_torch() -> None:
    torch = with_extension(
        TorchExtension("torch-scatter", "2.1.2+pt20cpu", files=(SO,)),
        ExtensionLoad(
            "torch-scatter",
            SO,
            LoadStatus.FAILED,
            PythonError("OSError", f"{SO}: undefined symbol: _ZN3c104impl3fooEv"),
        ),
    )
    finding = the("ED212", torch)
    assert "https://data.pyg.org/whl/torch-2.3.0+cpu.html" in commands(finding)
    assert "torch 2.0" in finding.detail  # its tag: built for torch 2.0
    assert "ED213" not in codes(torch)


def test_a_torch_pin_alone_is_ed205_and_a_failed_load_takes_it_over() -> None:
    dists = (Distribution("torch", "2.3.1+cpu"), Distribution("vllm", "0.3.2", ("torch==2.1.2",)))
    pinned = with_extension(TorchExtension("vllm", "0.3.2", files=(f"{SITE}/vllm/_C.so",)), dists=dists)
    assert "ED205" in codes(pinned) and "ED212" not in codes(pinned)
    failed = ExtensionLoad(
        "vllm",
        f"{SITE}/vllm/_C.so",
        LoadStatus.FAILED,
        PythonError("ImportError", "undefined symbol: _ZN2at4_ops3barEv"),
    )
    both = with_extension(TorchExtension("vllm", "0.3.2", files=(f"{SITE}/vllm/_C.so",)), failed, dists=dists)
    found = codes(both)
    assert "ED212" in found and "ED205" not in found
    assert "torch==2.1.2" in commands(the("ED212", both))  # the torch it pins, from the planner


def test_an_extension_that_loaded_is_not_judged_by_its_tag_unless_its_own_table_says_so() -> None:
    ok = ExtensionLoad("flash-attn", "/x.so", LoadStatus.OK)
    tagged = TorchExtension(
        "flash-attn",
        "2.5.8",
        files=("/x.so",),
        source="file:///w/flash_attn-2.5.8+cu122torch2.2cxx11abiFALSE-cp311-cp311-linux_x86_64.whl",
    )
    assert "ED212" not in codes(with_extension(tagged, ok))
    assert "ED212" in codes(with_extension(tagged))  # no load ran (a snapshot): the tag decides
    torchao = TorchExtension("torchao", "0.14.0", files=("/ao.so",))
    loaded = ExtensionLoad("torchao", "/ao.so", LoadStatus.OK)
    finding = the("ED212", with_extension(torchao, loaded))  # torchao skips its kernels itself
    assert "built for torch 2.9" in finding.detail


def test_the_exact_build_an_extension_names_puts_that_torch_first() -> None:
    xformers = TorchExtension(
        "xformers", "0.0.20", files=("/xf.so",), built_for=BuiltFor("2.3.1+cu121", "1201")
    )
    finding = the("ED212", with_extension(xformers))
    assert "cu121" in finding.fixes[0].summary and "torch 2.3.1" in finding.fixes[0].summary


def test_the_other_cxx11_abi_is_ed213_from_the_tag_or_the_symbol() -> None:
    tag = TorchExtension(
        "flash-attn",
        "2.5.5",
        files=("/fa.so",),
        source="file:///w/flash_attn-2.5.5+cu118torch2.3cxx11abiTRUE-cp311-cp311-linux_x86_64.whl",
    )
    assert "ED213" in codes(with_extension(tag)) and "ED212" not in codes(with_extension(tag))
    symbol = ExtensionLoad(
        "lmcache",
        "/c.so",
        LoadStatus.FAILED,
        PythonError("ImportError", "/c.so: undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationESs"),
    )
    new_abi = replace(
        with_extension(TorchExtension("lmcache", "0.3.3", files=("/c.so",)), symbol), cxx11_abi=True
    )
    finding = the("ED213", new_abi)
    assert "cxx11abiTRUE" in finding.detail
    old_abi = replace(new_abi, cxx11_abi=False)  # the same symbol beside an old-ABI torch: another release
    assert "ED213" not in codes(old_abi) and "ED212" in codes(old_abi)


def test_a_libstdcxx_load_error_is_not_called_another_torch() -> None:
    load = ExtensionLoad(
        "gymtorch",
        "/g.so",
        LoadStatus.FAILED,
        PythonError(
            "ImportError", "/env/lib/libstdc++.so.6: version `GLIBCXX_3.4.32' not found (required by /g.so)"
        ),
    )
    found = codes(with_extension(TorchExtension("gymtorch", "1.0", files=("/g.so",)), load))
    assert "ED224" in found and "ED212" not in found


# -- ED214 / ED215 / ED216 --------------------------------------------------------------------------


def test_only_a_module_without_a_package_of_its_own_needs_the_import_order_note() -> None:
    alone = TorchExtension("trilinear", "0.0.0", files=("/t.so",), top_level=("trilinear",))
    assert the("ED214", with_extension(alone)).severity.value == "info"
    packaged = replace(alone, python_package=True)  # flash-attn's flash_attn imports torch first
    assert "ED214" not in codes(with_extension(packaged))


def test_ops_missing_only_where_no_compiled_file_came_and_the_table_says_they_matter() -> None:
    lite = TorchExtension("mmcv", "1.7.0")
    assert "mmcv-full" in the("ED215", with_extension(lite)).fixes[0].summary
    full = TorchExtension("mmcv", "2.1.0", compiled_files=3, files=("/m.so",))
    assert "ED215" not in codes(with_extension(full))
    apex = the("ED215", with_extension(TorchExtension("apex", "0.1")))
    assert "--build-option=--cuda_ext" in commands(apex)
    assert "ED215" not in codes(with_extension(TorchExtension("xformers", "0.0.20")))  # no ops rule


def test_a_lock_is_stale_only_when_old_and_a_build_only_when_older_than_torch() -> None:
    root = "/home/u/.cache/torch_extensions"

    def jit(entry: CacheEntry) -> TorchFacts:
        caches = JitCaches(
            (JitCache("torch.utils.cpp_extension", root, (entry,)),), torch_installed=1000.0, now=5000.0
        )
        return cpu_torch(extensions=ExtensionFacts(jit=caches))

    assert "ED216" in codes(jit(CacheEntry(f"{root}/py311_cpu/a", lock=1000.0)))
    assert "ED216" not in codes(jit(CacheEntry(f"{root}/py311_cpu/a", lock=4900.0)))  # a build now
    stale = the("ED216", jit(CacheEntry(f"{root}/py311_cpu/b", built=100.0)))
    assert commands(stale) == f"rm -rf {root}/py311_cpu/b"
    assert "ED216" not in codes(jit(CacheEntry(f"{root}/py311_cpu/b", built=2000.0)))


# -- ED217 / ED218 / ED005 --------------------------------------------------------------------------


def test_pip_over_conda_and_a_folder_with_two_records() -> None:
    conda = Surroundings(conda_packages=(CondaPackage("pytorch", "2.3.1", "py3.11_cpu_0"),))
    by_conda = cpu_torch(
        surroundings=conda,
        extensions=ExtensionFacts(distributions=(Distribution("torch", "2.3.1+cpu", installer="conda"),)),
    )
    assert "ED217" not in codes(by_conda)  # conda's own, untouched
    by_pip = replace(
        by_conda,
        extensions=ExtensionFacts(distributions=(Distribution("torch", "2.3.1+cpu", installer="pip"),)),
    )
    finding = the("ED217", by_pip)
    assert "pip uninstall -y torch" in commands(finding).replace("/env/bin/python -m ", "")
    mixed = cpu_torch(surroundings=Surroundings(torch_copies=(TorchCopy(SITE, "2.3.1", ("2.1.0", "2.3.1")),)))
    assert "two torch installs" in the("ED217", mixed).title


def test_a_user_site_torch_counts_only_ahead_of_another_copy() -> None:
    user = "/home/u/.local/lib/python3.11/site-packages"
    site = UserSite(path=user, enabled=True)
    ahead = Surroundings(torch_copies=(TorchCopy(user, "2.1.0"), TorchCopy(SITE, "2.3.1")), user_site=site)
    finding = the("ED218", cpu_torch(surroundings=ahead))
    assert "PYTHONNOUSERSITE" in commands(finding)
    alone = Surroundings(torch_copies=(TorchCopy(user, "2.1.0"),), user_site=site)
    behind = Surroundings(torch_copies=(TorchCopy(SITE, "2.3.1"), TorchCopy(user, "2.1.0")), user_site=site)
    off = Surroundings(torch_copies=ahead.torch_copies, user_site=UserSite(path=user, enabled=False))
    for other in (alone, behind, off):
        assert "ED218" not in codes(cpu_torch(surroundings=other))


def test_an_entry_point_counts_only_where_path_python_is_the_examined_one() -> None:
    torchrun = EntryPoint("torchrun", "/sw/bin/torchrun", "/sw/bin/python3", same_environment=False)
    mine = EntryPoint("python", "/env/bin/python", "/env/bin/python", same_environment=True)
    other = replace(mine, path="/usr/bin/python", same_environment=False)
    finding = the("ED005", cpu_torch(surroundings=Surroundings(entry_points=(mine, torchrun))))
    assert "-m torch.distributed.run" in commands(finding)
    assert "ED005" not in codes(cpu_torch(surroundings=Surroundings(entry_points=(other, torchrun))))
    shim = replace(torchrun, interpreter=None, same_environment=None)
    assert "ED005" not in codes(cpu_torch(surroundings=Surroundings(entry_points=(mine, shim))))


# -- native libraries around torch ------------------------------------------------------------------


def broken(message: str, **changes: object) -> TorchFacts:
    return cpu_torch(version=None, import_error=PythonError("ImportError", message), **changes)


def test_two_cuda_majors_of_nvidia_wheels_keep_torchs_own() -> None:
    dists = (Distribution("nvidia-cublas-cu11", "11.11.3.6"), Distribution("nvidia-cublas-cu12", "12.1.3.1"))
    torch = cpu_torch(cuda="12.1", version="2.3.1+cu121", extensions=ExtensionFacts(distributions=dists))
    finding = the("ED220", torch)
    assert "uninstall -y nvidia-cublas-cu11" in commands(finding)
    assert "nvidia-cublas-cu12==12.1.3.1" in commands(finding)
    one = cpu_torch(extensions=ExtensionFacts(distributions=dists[1:]))
    assert "ED220" not in codes(one)


def test_missing_nvidia_wheels_follow_torchs_markers() -> None:
    requires = (
        'nvidia-cublas-cu12==12.1.3.1; platform_system == "Linux"',
        'nvidia-cudnn-cu12==8.9.2.26; platform_system == "Windows"',
    )
    dists = (Distribution("torch", "2.3.1", requires),)
    torch = cpu_torch(extensions=ExtensionFacts(distributions=dists))
    finding = the("ED221", torch)
    assert "nvidia-cublas-cu12==12.1.3.1" in commands(finding) and "cudnn" not in commands(finding)
    conda = cpu_torch(extensions=ExtensionFacts(distributions=(replace(dists[0], installer="conda"),)))
    assert "ED221" not in codes(conda)


def test_conda_mkl_counts_beside_condas_torch_or_its_symbol() -> None:
    mkl = CondaPackage("mkl", "2024.1.0")
    assert "ED222" not in codes(cpu_torch(surroundings=Surroundings(conda_packages=(mkl,))))  # pip's torch
    with_pytorch = Surroundings(conda_packages=(mkl, CondaPackage("pytorch", "2.2.0")))
    assert "mkl==2024.0" in commands(the("ED222", cpu_torch(surroundings=with_pytorch)))
    said = broken(
        "libtorch_cpu.so: undefined symbol: iJIT_NotifyEvent",
        surroundings=Surroundings(conda_packages=(mkl,)),
    )
    assert "ED222" in codes(said)
    older = Surroundings(conda_packages=(CondaPackage("mkl", "2024.0.0"), CondaPackage("pytorch", "2.2.0")))
    assert "ED222" not in codes(cpu_torch(surroundings=older))


def test_static_tls_preloads_the_library_named() -> None:
    lib = "/env/lib/python3.11/site-packages/torch/lib/libgomp-d22c30c5.so.1"
    finding = the("ED223", broken(f"{lib}: cannot allocate memory in static TLS block"))
    assert commands(finding) == f'export LD_PRELOAD={lib}:"$LD_PRELOAD"'
    report = judge(
        LINUX,
        Interpreter("/env/bin/python", "r"),
        (
            ProbeResult(
                "torch", ProbeStatus.OK, 0.0, broken(f"{lib}: cannot allocate memory in static TLS block")
            ),
        ),
        Settings(),
    )
    folded = {f.code: f.folded_under for f in report.findings}
    assert folded["ED002"] == "ED223"  # one root cause, one finding


@pytest.mark.parametrize(
    ("loaded", "conda", "says"),
    [
        ("/lib/x86_64-linux-gnu/libstdc++.so.6", True, "LD_LIBRARY_PATH"),
        ("/home/u/miniconda3/envs/e/lib/libstdc++.so.6", True, "libstdcxx-ng"),
        ("/lib/x86_64-linux-gnu/libstdc++.so.6", False, "newer distribution"),
    ],
)
def test_libstdcxx_fix_follows_which_library_was_loaded(loaded: str, conda: bool, says: str) -> None:
    message = f"{loaded}: version `GLIBCXX_3.4.30' not found (required by /x/libtorch_python.so)"
    around = Surroundings(conda_packages=(CondaPackage("libstdcxx-ng", "13.2.0"),) if conda else None)
    finding = the("ED224", broken(message, surroundings=around))
    text = finding.detail + commands(finding) + " ".join(f.summary for f in finding.fixes)
    assert says in text and "GCC 12.1" in finding.detail


def test_a_pasted_error_is_read_with_this_machines_facts() -> None:
    pasted = (
        "ImportError: /lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.32' not found "
        "(required by /x/gymtorch.so)"
    )
    around = Surroundings(conda_packages=(CondaPackage("libstdcxx-ng", "11.2.0"),))
    finding = the("ED224", cpu_torch(surroundings=around), pasted=pasted)
    assert "the pasted error" in finding.title


def test_numpy_c_api_names_the_release_that_provides_it() -> None:
    torch = cpu_torch(
        version="1.9.0",
        warnings=(
            "Failed to initialize NumPy: module compiled against API version 0xe but this version of "
            "numpy is 0xd",
        ),
        numpy=NumpyFacts(version="1.19.5"),
    )
    finding = the("ED225", torch)
    assert "numpy>=1.20" in commands(finding)
    assert "ED210" not in codes(torch)


def test_numpy2_words_count_on_windows_too_and_without_a_version() -> None:
    said = ("Failed to initialize NumPy: _ARRAY_API not found",)
    windows = cpu_torch(version="2.4.0+cpu", dist_version="2.4.0+cpu", warnings=said, numpy=None)
    assert "numpy<2" in commands(the("ED210", windows, platform=WINDOWS)).replace('"', "")
    quiet = cpu_torch(version="2.4.0+cpu", numpy=NumpyFacts(version="1.26.4"))
    assert "ED210" not in codes(quiet, platform=WINDOWS)


# -- ED002 / ED003 ------------------------------------------------------------------------------


def test_a_torch_folder_outside_site_packages_is_named_as_the_cause() -> None:
    torch = broken("No module named 'torch._C'", location="/home/u/src/pytorch/torch/__init__.py")
    finding = the("ED002", torch)
    assert "/home/u/src/pytorch/torch" in finding.detail and "another folder" in finding.fixes[0].summary
    installed = broken("No module named 'torch._C'")  # from site-packages: the generic reading
    assert not the("ED002", installed).fixes[0].summary.startswith("Start Python from another folder")


def test_an_illegal_instruction_names_openblas_on_arm_and_avx_on_x86() -> None:
    arm = TorchFacts(
        installed=True,
        crash=ChildEnd(exit_signal=4, last_stage="import"),
        surroundings=Surroundings(machine="aarch64", numpy_version="1.19.5"),
    )
    finding = the("ED003", arm, platform=PlatformInfo("Linux", "4.9", "1", "aarch64"))
    assert "OPENBLAS_CORETYPE" in commands(finding) and "numpy!=1.19.5" in commands(finding)
    x86 = replace(arm, surroundings=Surroundings(machine="x86_64", cpu_flags=("sse4_2",)))
    assert "no AVX" in the("ED003", x86).detail
    segfault = replace(arm, crash=ChildEnd(exit_signal=11, last_stage="import"))
    assert "SIGILL" not in the("ED003", segfault).title
