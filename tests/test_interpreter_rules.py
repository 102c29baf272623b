"""Interpreters torch has no wheel for (ED020-ED022), and the knowledge they read
(knowledge/interpreters.py)."""

from __future__ import annotations

from envdoctor.engine import evaluate
from envdoctor.knowledge import interpreters
from envdoctor.model.findings import Finding, Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes.torch_build import PythonError, TorchFacts
from envdoctor.rules.base import RuleContext
from envdoctor.rules.evidence import gather
from envdoctor.rules.torch import interpreter
from envdoctor.target import PythonInfo

LINUX = PlatformInfo("Linux", "6.8.0", "#1 SMP", "x86_64")
WINDOWS = PlatformInfo("Windows", "11", "10.0.22631", "AMD64")
NO_TORCH = TorchFacts(installed=False)
RULES = [r for r in interpreter.__dict__.values() if hasattr(r, "code") and str(r.code).startswith("ED02")]


def python(version: str = "3.11.9", bits: int = 64, free_threaded: bool = False) -> PythonInfo:
    return PythonInfo("/env/bin/python", version, "CPython", bits, "/env", True, False, free_threaded)


def findings(
    py: PythonInfo, torch: TorchFacts = NO_TORCH, platform: PlatformInfo = LINUX, pasted: str = ""
) -> list[Finding]:
    probes = (
        ProbeResult("python", ProbeStatus.OK, 0.0, py),
        ProbeResult("torch", ProbeStatus.OK, 0.0, torch),
    )
    ctx = RuleContext.build(
        platform, Interpreter(py.executable, "test"), probes, inputs=(gather(probes, pasted),)
    )
    return list(evaluate(ctx, RULES))


def test_the_knowledge_answers_and_says_none_for_what_it_does_not_know() -> None:
    assert interpreters.pythons("2.5.1", "windows-x86_64") == ("3.9", "3.10", "3.11", "3.12")
    assert "3.13" in (interpreters.pythons("2.5.1", "linux-x86_64") or ())  # 2.5 had 3.13 on Linux
    assert interpreters.pythons("1.6.0", "linux-x86_64") == ("3.6", "3.7", "3.8")
    assert interpreters.pythons("0.9.9", "linux-x86_64") is None
    assert interpreters.span("3.9", "linux-x86_64").first == "1.7.1"
    assert (
        interpreters.free_threaded_from("3.13") == "2.6.0" and interpreters.free_threaded_from("3.12") is None
    )
    assert interpreters.wheel_bits() == 64


def test_a_32_bit_python_gets_64_bit_python_not_an_install_command() -> None:
    found = findings(
        python("3.8.1", bits=32), platform=WINDOWS, pasted="(from versions: 0.1.2, 0.1.2.post1, 0.1.2.post2)"
    )
    assert [f.code for f in found] == ["ED020"]
    fixes = found[0].fixes
    assert fixes[0].commands[0].startswith("winget install --id Python.Python.3.")
    assert fixes[1].commands[1] == "envdoctor check --python .venv"
    assert "0.1.2" in found[0].detail
    works = TorchFacts(
        installed=True, dist_version="1.0.0", version="1.0.0"
    )  # a self-built torch that imports
    assert findings(python(bits=32), torch=works) == []


def test_a_pinned_release_without_a_wheel_for_this_python() -> None:
    text = (
        "ERROR: Could not find a version that satisfies the requirement torch==2.5.1 "
        "(from versions: 2.6.0+cu124)"
    )
    found = findings(python("3.13.7"), platform=WINDOWS, pasted=text)
    assert [f.code for f in found] == ["ED021"]
    assert found[0].title == "torch 2.5.1 has no wheel for Python 3.13 on Windows"
    assert "2.6.0" in found[0].detail and found[0].fixes[0].commands[0] == "py -3.12 -m venv .venv"
    assert findings(python("3.12.4"), platform=WINDOWS, pasted=text) == []  # 2.5.1 has 3.12: another cause
    unknown = "No matching distribution found for torch==0.9.9"
    assert findings(python("3.13.7"), pasted=unknown) == []


def test_a_python_newer_than_every_release() -> None:
    found = findings(python("3.99.0"))
    assert [f.code for f in found] == ["ED021"] and "no torch release envdoctor knows" in found[0].title
    newest = interpreters.newest_python("linux-x86_64")
    assert found[0].fixes[0].commands[0] == f"python{newest} -m venv .venv"
    assert findings(python("3.11.9")) == []


def test_free_threaded_python() -> None:
    failed = TorchFacts(
        installed=True,
        dist_version="2.6.0+cpu",
        import_error=PythonError("ImportError", "Failed to load PyTorch C extensions:"),
    )
    found = findings(python("3.13.2", free_threaded=True), torch=failed, platform=WINDOWS)
    assert [f.code for f in found] == ["ED022"]
    assert found[0].fixes[0].commands[0] == "py -3.13 -m venv .venv"
    assert found[0].fixes[1].commands[0] == "py -3.13t -m venv .venv-ft"
    works = TorchFacts(installed=True, dist_version="2.9.0+cu130", version="2.9.0+cu130", cuda="13.0")
    assert findings(python("3.13.8", free_threaded=True), torch=works) == []
    companion = "ERROR: No matching distribution found for torchao==0.14.1"
    found = findings(python("3.13.8", free_threaded=True), torch=works, pasted=companion)
    assert [f.code for f in found] == ["ED022"] and found[0].title.startswith("torchao has no build")
    linker = "LINK : fatal error LNK1104: cannot open file 'python314.lib'"
    found = findings(python("3.14.0", free_threaded=True), torch=works, platform=WINDOWS, pasted=linker)
    assert [f.code for f in found] == ["ED022"] and "python314.lib" in found[0].detail
    assert findings(python("3.13.8"), torch=works, pasted=companion) == []  # not free-threaded


def test_not_found_reads_pip_and_uv_words_line_by_line() -> None:
    probes = ()
    evidence = gather(
        probes,
        'ERROR: No matching distribution found for cuda-bindings==13.0.3; platform_system == "Linux"\n'
        "  Caused by: Because wheel was not found in the package registry and you require wheel",
    )
    found = {(n.package, n.version) for n in interpreter.not_found(evidence)}
    assert found == {("cuda-bindings", "13.0.3"), ("wheel", None)}
