"""The torch child's reading of what surrounds torch: binary links (ELF, PE, Mach-O headers),
torch extensions found by their links and loaded beside torch, JIT caches, copies of torch on
sys.path, conda-meta, console scripts' interpreters; and the parent's facts from those records.

The ELF files are built here with the system compiler against this environment's own torch
libraries (skipped without one); PE and Mach-O headers are written byte by byte, as small as the
formats allow, so the parsers are held to the layouts without a Windows or macOS machine.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from envdoctor.child import torch_probe as child
from envdoctor.host.base import ChildOutcome
from envdoctor.probes.torch_build import LoadStatus, facts_from_outcome

pytestmark = pytest.mark.slow

_TORCH = importlib.util.find_spec("torch")
_GXX = shutil.which("g++")
needs_compiler = pytest.mark.skipif(_TORCH is None or _GXX is None, reason="needs torch and g++")


def torch_lib() -> Path:
    assert _TORCH is not None and _TORCH.origin is not None
    return Path(_TORCH.origin).parent / "lib"


def build(path: Path, source: str, torch: bool = True) -> Path:
    """A shared library from C++ `source`; linked against torch's libc10 when `torch`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    code = path.with_suffix(".cpp")
    code.write_text(source, encoding="utf-8")
    argv = [str(_GXX), "-shared", "-fPIC", "-o", str(path), str(code)]
    if torch:
        argv += [f"-L{torch_lib()}", "-Wl,--no-as-needed", "-lc10"]
    subprocess.run(argv, check=True, capture_output=True, timeout=120)
    return path


MISSING = """namespace c10 { void symbol_no_torch_has(int); }
extern "C" int entry(int x) { c10::symbol_no_torch_has(x); return x; }
"""
PLAIN = 'extern "C" int entry(int x) { return x + 1; }\n'


# -- binary links ----------------------------------------------------------------------------


@needs_compiler
def test_an_elf_file_names_the_libraries_it_links(tmp_path: Path) -> None:
    linked = build(tmp_path / "linked.so", PLAIN)
    plain = build(tmp_path / "plain.so", PLAIN, torch=False)
    names = child.linked_libraries(str(linked))
    assert names is not None and "libc10.so" in names
    assert child.links_torch(names)
    assert not child.links_torch(child.linked_libraries(str(plain)) or [])
    text = tmp_path / "notes.txt"
    text.write_text("not a binary", encoding="utf-8")
    assert child.linked_libraries(str(text)) is None
    assert child.linked_libraries(str(tmp_path / "gone.so")) is None


def _pe(imports: list[str]) -> bytes:
    """A minimal PE32+ image: one section holding the import descriptors and the DLL names."""
    section_rva, section_raw = 0x1000, 0x200
    names = b""
    offsets = []
    for name in imports:
        offsets.append(len(names))
        names += name.encode() + b"\0"
    descriptors_size = 20 * (len(imports) + 1)
    descriptors = (
        b"".join(struct.pack("<IIIII", 0, 0, 0, section_rva + descriptors_size + at, 0) for at in offsets)
        + b"\0" * 20
    )
    body = descriptors + names
    optional = bytearray(240)
    optional[0:2] = b"\x0b\x02"  # PE32+
    struct.pack_into("<II", optional, 112 + 8, section_rva, descriptors_size)  # directory 1: imports
    section = struct.pack("<8sIIII", b".idata\0\0", len(body), section_rva, len(body), section_raw)
    section += b"\0" * (40 - len(section))
    header = b"PE\0\0" + struct.pack("<HHIIIHH", 0x8664, 1, 0, 0, 0, len(optional), 0)
    dos = bytearray(64)
    dos[0:2] = b"MZ"
    struct.pack_into("<I", dos, 60, 64)
    image = bytes(dos) + header + bytes(optional) + section
    return image + b"\0" * (section_raw - len(image)) + body


def _macho(libraries: list[str]) -> bytes:
    commands = b""
    for name in libraries:
        raw = name.encode() + b"\0"
        size = 24 + len(raw)
        size += -size % 8
        commands += struct.pack("<IIIIII", 0xC, size, 24, 0, 0, 0) + raw.ljust(size - 24, b"\0")
    header = b"\xcf\xfa\xed\xfe" + struct.pack(
        "<IIIIIII", 0x0100000C, 0, 6, len(libraries), len(commands), 0, 0
    )
    return header + commands


def test_pe_imports_and_macho_load_commands_are_read(tmp_path: Path) -> None:
    pyd = tmp_path / "_C.pyd"
    pyd.write_bytes(_pe(["c10.dll", "torch_cpu.dll", "KERNEL32.dll"]))
    assert child.linked_libraries(str(pyd)) == ["c10.dll", "torch_cpu.dll", "KERNEL32.dll"]
    assert child.links_torch(["c10.dll"])
    so = tmp_path / "_C.so"
    so.write_bytes(_macho(["@rpath/libc10.dylib", "/usr/lib/libSystem.B.dylib"]))
    assert child.linked_libraries(str(so)) == ["@rpath/libc10.dylib", "/usr/lib/libSystem.B.dylib"]
    assert child.library_stem("@rpath/libtorch_python.dylib") == "torch_python"


# -- extensions: found by their links, loaded beside torch -----------------------------------


def _dist(site: Path, name: str, version: str, files: list[str], requires: list[str]) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {name}",
        f"Version: {version}",
        *(f"Requires-Dist: {r}" for r in requires),
    ]
    (info / "METADATA").write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in files), encoding="utf-8")


@needs_compiler
def test_an_extension_is_found_by_its_links_and_its_load_error_recorded(tmp_path: Path) -> None:
    site = tmp_path / "site"
    build(site / "fakeext" / "_bad.so", MISSING)
    build(site / "fakeext" / "_libs" / "vendored.so", PLAIN, torch=False)  # no torch link: not loaded
    (site / "fakeext" / "__init__.py").write_text("", encoding="utf-8")
    build(site / "toplevel_ext.so", PLAIN)  # a cpp_extension built by setup.py, importable by itself
    _dist(
        site,
        "fakeext",
        "1.0+pt213cpu",
        ["fakeext/__init__.py", "fakeext/_bad.so", "fakeext/_libs/vendored.so"],
        ["torch"],
    )
    _dist(site, "toplevel-ext", "0.1", ["toplevel_ext.so"], [])
    dists = {d.metadata["Name"]: d for d in metadata.distributions(path=[str(site)])}
    found = child.examine_extension(dists["fakeext"], "fakeext", "1.0+pt213cpu", True)
    assert found is not None
    assert found["compiled_files"] == 2 and [Path(f).name for f in found["files"]] == ["_bad.so"]
    assert found["python_package"] is True
    sys.path.insert(0, str(site))
    try:
        top = child.examine_extension(dists["toplevel-ext"], "toplevel-ext", "0.1", False)
    finally:
        sys.path.remove(str(site))
    assert top is not None and top["top_level"] == ["toplevel_ext"] and top["python_package"] is False
    # A compiled package that links nothing of torch and does not require it is no extension.
    _dist(site, "plainpkg", "2.0", ["fakeext/_libs/vendored.so"], [])
    plain = next(d for d in metadata.distributions(path=[str(site)]) if d.metadata["Name"] == "plainpkg")
    assert child.examine_extension(plain, "plainpkg", "2.0", False) is None


@needs_compiler
def test_the_child_loads_extensions_after_the_smoke_test_and_the_probe_reads_them(tmp_path: Path) -> None:
    """A real child run: the extension built for 'another torch' fails to load with the loader's
    own undefined symbol, and the rules name it (ED212) with a fix."""
    site = tmp_path / "site"
    build(site / "fakeext" / "_bad.so", MISSING)
    build(site / "fakeext" / "_good.so", PLAIN)
    (site / "fakeext" / "__init__.py").write_text("", encoding="utf-8")
    _dist(site, "fakeext", "1.0", ["fakeext/__init__.py", "fakeext/_bad.so", "fakeext/_good.so"], ["torch"])
    env = dict(os.environ, PYTHONPATH=str(site))
    script = Path(child.__file__)
    ran = subprocess.run(
        [sys.executable, "-B", str(script), "--budget", "60"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    records = [json.loads(line) for line in ran.stdout.splitlines() if line.startswith("{")]
    kinds = [r["record"] for r in records]
    assert kinds.index("extensions") > kinds.index("smoke")  # loaded last
    facts = facts_from_outcome(ChildOutcome(tuple(records), ran.returncode, stderr_tail=ran.stderr[-2000:]))
    assert facts.extensions is not None and facts.extensions.extensions is not None
    loads = {Path(load.file).name: load for load in facts.extensions.loads_of("fakeext")}
    assert loads["_good.so"].status is LoadStatus.OK
    assert loads["_bad.so"].status is LoadStatus.FAILED
    assert loads["_bad.so"].error is not None and "undefined symbol" in loads["_bad.so"].error.message
    assert facts.surroundings is not None and facts.surroundings.torch_copies
    assert facts.cxx11_abi in (True, False)
    from envdoctor.engine import evaluate
    from envdoctor.model.findings import Interpreter, PlatformInfo, ProbeResult, ProbeStatus
    from envdoctor.rules.base import RuleContext

    ctx = RuleContext.build(
        PlatformInfo("Linux", "6.8", "1", "x86_64"),
        Interpreter(sys.executable, "test"),
        (ProbeResult("torch", ProbeStatus.OK, 0.0, facts),),
    )
    found = [f for f in evaluate(ctx) if f.code == "ED212"]
    assert found and "_ZN3c1019symbol_no_torch_hasEi" in found[0].detail
    assert any("--no-build-isolation" in c for fix in found[0].fixes for c in fix.commands)


def test_a_load_that_dies_is_a_crash_of_that_file(tmp_path: Path) -> None:
    records = (
        {"record": "torch", "installed": True, "version": "2.9.0", "dist_version": "2.9.0"},
        {
            "record": "extensions",
            "extensions": [{"name": "torchao", "version": "0.13.0", "files": ["/x/_C.so"]}],
        },
        {"record": "extension_start", "name": "torchao", "file": "/x/_C.so", "timeout": 10.0},
    )
    facts = facts_from_outcome(
        ChildOutcome(records, None, signal=6, stderr_tail="Fatal Python error: Aborted")
    )
    assert facts.extensions is not None
    (load,) = facts.extensions.extension_loads
    assert load.status is LoadStatus.CRASHED and load.error is not None and "signal 6" in load.error.message


# -- what surrounds torch ---------------------------------------------------------------------


def test_copies_of_torch_on_sys_path_come_in_import_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user, env = tmp_path / "user", tmp_path / "env"
    for folder, version in ((user, "2.13.0+cpu"), (env, "2.9.0+rocm6.4")):
        (folder / "torch").mkdir(parents=True)
        (folder / "torch" / "__init__.py").write_text("", encoding="utf-8")
        (folder / "torch" / "version.py").write_text(f"__version__ = '{version}'\n", encoding="utf-8")
        (folder / f"torch-{version}.dist-info").mkdir()
    (env / "torch-2.8.0.dist-info").mkdir()  # a second install's record in the same folder
    monkeypatch.setattr(sys, "path", [str(user), str(env), str(user)])
    copies = child.torch_copies()
    assert [c["version"] for c in copies] == ["2.13.0+cpu", "2.9.0+rocm6.4"]
    assert copies[1]["dists"] == ["2.8.0", "2.9.0+rocm6.4"]
    monkeypatch.chdir(user)
    assert child.cwd_torch() == {"path": os.path.realpath(user / "torch"), "version": "2.13.0+cpu"}


def test_conda_meta_names_the_watched_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    meta = tmp_path / "conda-meta"
    meta.mkdir()
    for name in (
        "pytorch-1.11.0-py3.9_cuda11.3_cudnn8.2.0_0.json",
        "mkl-2024.1.0-h2f2b16e_691.json",
        "zlib-1.3-h1.json",
    ):
        (meta / name).write_text("{}", encoding="utf-8")
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    assert child.conda_packages() == [
        {"name": "mkl", "version": "2024.1.0", "build": "h2f2b16e_691"},
        {"name": "pytorch", "version": "1.11.0", "build": "py3.9_cuda11.3_cudnn8.2.0_0"},
    ]
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "nowhere"))
    assert child.conda_packages() is None


@pytest.mark.skipif(os.name == "nt", reason="console scripts with #! lines")
def test_console_scripts_name_their_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scripts = {
        "torchrun": "#!/sw/python/3.10/bin/python3.10\nimport sys\n",
        "pip": "#!/bin/sh\n'''exec' /very/long/path/bin/python \"$0\" \"$@\"\n' '''\n",
        "pip3": '#!/usr/bin/bash\nexec pyenv "$@"\n',  # a shim: the interpreter is picked at run time
    }
    for name, text in scripts.items():
        (bin_dir / name).write_text(text, encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    os.symlink(sys.executable, bin_dir / "python")
    monkeypatch.setenv("PATH", str(bin_dir))
    found = {e["name"]: e for e in child.entry_points() or ()}
    assert found["torchrun"]["interpreter"] == "/sw/python/3.10/bin/python3.10"
    assert found["torchrun"]["same_environment"] is False
    assert found["pip"]["interpreter"] == "/very/long/path/bin/python"
    assert found["pip3"]["interpreter"] is None
    assert found["python"]["same_environment"] is False  # the link's folder is not this interpreter's


def test_jit_cache_entries_carry_their_lock_and_build_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "torch_extensions"
    stuck = root / "py311_cu121" / "packbits_cpp"
    built = root / "py311_cu121" / "old_ext"
    stuck.mkdir(parents=True)
    built.mkdir(parents=True)
    (stuck / "lock").write_text("", encoding="utf-8")
    (built / "old_ext.so").write_bytes(b"\x7fELF")
    os.utime(built / "old_ext.so", (1_600_000_000, 1_600_000_000))
    torch_dir = tmp_path / "torch"
    torch_dir.mkdir()
    (torch_dir / "version.py").write_text("__version__ = '2.13.0'\n", encoding="utf-8")
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(root))
    table = child.read_table(None)
    assert table is not None and "flash-attn" in child.extension_names(table)
    found = child.jit_caches(table, str(torch_dir / "__init__.py"))
    (cache,) = [c for c in found["caches"] if c["tool"] == "torch.utils.cpp_extension"]
    entries = {Path(e["path"]).name: e for e in cache["entries"]}
    assert entries["packbits_cpp"]["lock"] is not None and entries["packbits_cpp"]["built"] is None
    assert entries["old_ext"]["built"] == 1_600_000_000
    assert found["torch_installed"] is not None and found["torch_installed"] > 1_600_000_000
