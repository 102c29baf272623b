"""ED202/ED204/ED205 on facts: unlabelled wheels, load checks, dependents pinned to another torch.

The fixtures pin the four situations down end to end; these tests pin the boundaries: where an
unlabelled wheel's variant comes from, when a load check outweighs it, which requirements count, and
that no fix command can rebuild the broken pair.
"""

from __future__ import annotations

import re

import pytest

from envdoctor.engine import evaluate
from envdoctor.model.findings import Finding, Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.torch_build import (
    CompanionLoad,
    Distribution,
    ExtensionFacts,
    LoadStatus,
    Package,
    PythonError,
    TorchFacts,
)
from envdoctor.rules import RULES_BY_CODE
from envdoctor.rules.base import RuleContext
from tests.cli_support import run_cli
from tests.support import PYTHON

LINUX = PlatformInfo("Linux", "6.8", "1", "x86_64")
WINDOWS = PlatformInfo("Windows", "11", "10", "AMD64")
NO_GPU = NvmlFacts(status="library_not_found", error="NVML Shared Library Not Found")
NMS_MISSING = PythonError("RuntimeError", "operator torchvision::nms does not exist")


def findings(*facts: object, platform: PlatformInfo = LINUX) -> list[Finding]:
    probes = tuple(ProbeResult(type(f).__name__, ProbeStatus.OK, 0.0, f) for f in (PYTHON, NO_GPU, *facts))
    ctx = RuleContext.build(platform, Interpreter("/env/bin/python", "r"), probes)
    return [f for f in evaluate(ctx) if f.code != "ED104"]


def codes(*facts: object, platform: PlatformInfo = LINUX) -> list[str]:
    return [f.code for f in findings(*facts, platform=platform)]


def cpu_torch(
    version: str = "2.13.0+cpu",
    companions_: tuple[Package, ...] = (Package("torchvision", "0.28.0"),),
    extensions: ExtensionFacts | None = None,
    **kw: object,
) -> TorchFacts:
    return TorchFacts(
        installed=True,
        dist_version=kw.pop("dist_version", version),  # type: ignore[arg-type]
        version=version,
        cuda=kw.pop("cuda", None),  # type: ignore[arg-type]
        cuda_available=False,
        device_count=0,
        companions=companions_,
        extensions=extensions,
        **kw,  # type: ignore[arg-type]
    )


def load(name: str = "torchvision", status: LoadStatus = LoadStatus.FAILED, **kw: object) -> CompanionLoad:
    return CompanionLoad(name=name, status=status, **kw)  # type: ignore[arg-type]


# -- unlabelled wheels: the variant their index serves by default ----------------------------


def test_unlabelled_companion_beside_a_cpu_torch_is_pypis_cuda_build() -> None:
    found = findings(cpu_torch())  # no load check: an older snapshot
    assert [f.code for f in found] == ["ED202"]
    assert "cu130" in found[0].detail and "carries no variant label" in found[0].detail


def test_unlabelled_pair_from_pypi_is_one_variant() -> None:
    # PyPI's Linux torch says 2.13.0+cu130 in __version__ and 2.13.0 in its metadata.
    torch = cpu_torch(version="2.13.0+cu130", dist_version="2.13.0", cuda="13.0")
    assert codes(torch) == []
    # An unlabelled torch that imports: its variant comes from torch.version.cuda.
    assert codes(cpu_torch(version="2.13.0", cuda="13.0")) == []


def test_windows_pypi_default_is_the_cpu_build() -> None:
    torch = cpu_torch(
        version="2.5.1+cpu", dist_version="2.5.1", companions_=(Package("torchvision", "0.20.1"),)
    )
    assert codes(torch, platform=WINDOWS) == []
    # The same pair on Linux is a mismatch: PyPI's Linux torchvision 0.20.1 is the cu124 build.
    assert codes(torch) == ["ED202"]


def test_a_conda_companion_is_not_judged_by_pypis_default() -> None:
    conda = ExtensionFacts(distributions=(Distribution("torchvision", "0.28.0", installer="conda"),))
    assert codes(cpu_torch(extensions=conda)) == []


def test_a_passing_load_check_outweighs_the_index_default() -> None:
    ok = ExtensionFacts(loads=(load(status=LoadStatus.OK, version="0.28.0", module_version="0.28.0"),))
    assert codes(cpu_torch(extensions=ok)) == []
    # Its own version string is a fact, not an inference: a passing cu130 one still mismatches.
    labelled = ExtensionFacts(
        loads=(load(status=LoadStatus.OK, version="0.28.0", module_version="0.28.0+cu130"),)
    )
    assert codes(cpu_torch(extensions=labelled)) == ["ED202"]


def test_a_release_unknown_to_the_data_is_paired_by_the_companions_metadata() -> None:
    dists = (Distribution("torchvision", "0.28.0", requires=("torch (==2.13.0)",)),)
    torch = cpu_torch(version="2.14.1+cu130", dist_version="2.14.1", cuda="13.0")
    found = findings(replace_extensions(torch, ExtensionFacts(distributions=dists)))
    assert [f.code for f in found] == ["ED202"]
    assert "requires torch==2.13.0 (its metadata)" in found[0].detail
    fixed = ExtensionFacts(
        distributions=(Distribution("torchvision", "0.29.1", requires=("torch (>=2.14.0)",)),)
    )
    torch = cpu_torch(
        "2.14.1+cu130", (Package("torchvision", "0.29.1"),), fixed, dist_version="2.14.1", cuda="13.0"
    )
    assert codes(torch) == []


def replace_extensions(torch: TorchFacts, extensions: ExtensionFacts) -> TorchFacts:
    from dataclasses import replace

    return replace(torch, extensions=extensions)


# -- ED204: the load check -------------------------------------------------------------------


def failed_torchvision() -> TorchFacts:
    loads = (
        load(
            version="0.28.0",
            module_version="0.28.0+cu130",
            step="import",
            error=NMS_MISSING,
            cause="_C.so: libc10_cuda.so: cannot open shared object file: No such file or directory",
        ),
    )
    return cpu_torch(extensions=ExtensionFacts(loads=loads))


def test_a_failed_load_is_ed204_alone_naming_both_builds() -> None:
    found = findings(failed_torchvision())
    assert [f.code for f in found] == ["ED204"]  # ED202 stays silent: ED204 says it with the error
    detail = found[0].detail
    assert "operator torchvision::nms does not exist" in detail and "libc10_cuda.so" in detail
    assert "torch 2.13.0+cpu (the cpu build" in detail and "the cu130 build" in detail


PIN = re.compile(r"^(torch|torchvision|torchaudio)(===|==)([^\s+]+)(?:\+(\S+))?$")


def pinned_builds(command: str) -> dict[str, tuple[str, str | None]]:
    """{name: (version, label or None for PyPI's unlabelled build)} of every exact pin; fails on a
    plain pin such as torchvision==0.28.0, which pip also satisfies with another variant."""
    found: dict[str, tuple[str, str | None]] = {}
    for word in command.split():
        match = PIN.match(word)
        if match:
            name, operator, version, label = match.groups()
            assert (operator == "===") == (label is None), f"ambiguous pin {word!r} in {command!r}"
            found[name] = (version, label)
    return found


@pytest.mark.parametrize(
    "torch",
    [
        failed_torchvision(),
        cpu_torch(),  # the snapshot form: ED202
        cpu_torch(
            "2.5.1+cpu",
            (Package("torchvision", "0.20.1+cpu"), Package("torchaudio", "2.5.1")),
            ExtensionFacts(loads=(load("torchaudio", version="2.5.1", module_version="2.5.1+cu124"),)),
        ),
    ],
)
def test_no_fix_can_rebuild_the_broken_pair(torch: TorchFacts) -> None:
    found = findings(torch)
    assert found and found[0].fixes
    for fix in found[0].fixes:
        (command,) = fix.commands
        builds = pinned_builds(command)
        assert "torch" in builds and len(builds) >= 2, command
        labels = {label for _, label in builds.values()}
        assert len(labels) == 1, f"one variant for the whole set: {command}"
        (label,) = labels
        assert (label is None) == ("--index-url" not in command), command
    keep, switch = found[0].fixes
    assert "torch==" in keep.commands[0] and "+cpu" in keep.commands[0]
    assert "===" in switch.commands[0] and "CPU only" in switch.summary


def test_a_load_failure_without_a_mismatch_reinstalls_the_companion_files() -> None:
    loads = (load(version="0.28.0+cpu", module_version="0.28.0+cpu", step="nms", error=NMS_MISSING),)
    torch = cpu_torch(
        companions_=(Package("torchvision", "0.28.0+cpu"),), extensions=ExtensionFacts(loads=loads)
    )
    (found,) = findings(torch)
    assert found.code == "ED204" and len(found.fixes) == 1
    assert "--force-reinstall --no-deps torchvision==0.28.0+cpu" in found.fixes[0].commands[0]


def test_a_hung_or_crashed_check_is_ed204_too() -> None:
    hung = load(status=LoadStatus.TIMEOUT, step="import", error=PythonError("Timeout", "did not finish"))
    assert codes(
        cpu_torch(
            companions_=(Package("torchvision", "0.28.0+cpu"),), extensions=ExtensionFacts(loads=(hung,))
        )
    ) == ["ED204"]
    skipped = load(status=LoadStatus.SKIPPED, note="no time left")
    assert (
        codes(
            cpu_torch(
                companions_=(Package("torchvision", "0.28.0+cpu"),),
                extensions=ExtensionFacts(loads=(skipped,)),
            )
        )
        == []
    )


# -- ED205: dependents pinned to another torch -----------------------------------------------


def with_dists(*dists: Distribution, torch_version: str = "2.13.0+cpu") -> TorchFacts:
    torch = Distribution("torch", torch_version)
    return cpu_torch(torch_version, (), ExtensionFacts(distributions=(torch, *dists)))


def test_a_package_pinned_to_another_torch_names_both_ways_out() -> None:
    (found,) = findings(with_dists(Distribution("xformers", "0.0.30", requires=("torch==2.12.0",))))
    assert found.code == "ED205"
    assert found.title == "xformers 0.0.30 requires torch==2.12.0, but torch 2.13.0+cpu is installed"
    mine, theirs = found.fixes
    assert mine.commands == ("/env/bin/python -m pip install --upgrade xformers torch==2.13.0+cpu",)
    assert "torch==2.12.0+cpu" in theirs.commands[0] and "a downgrade from 2.13.0" in theirs.summary


def test_requirements_that_do_not_apply_here_are_not_judged() -> None:
    dists = (
        Distribution("lib-a", "1", requires=('torch<2 ; extra == "torch"',)),  # an extra: not asked for
        Distribution("lib-b", "1", requires=('torch<2 ; platform_system == "Windows"',)),
        Distribution("lib-c", "1", requires=("torch>=2.0",)),  # met
        Distribution("lib-d", "1", requires=("triton==3.1.0",)),  # triton is not installed
        Distribution("lib-e", "1", requires=("not a requirement ((",)),
    )
    assert codes(with_dists(*dists)) == []
    assert codes(
        with_dists(Distribution("lib-b", "1", requires=('torch<2 ; platform_system == "Linux"',)))
    ) == ["ED205"]


def test_torchs_own_triton_pin() -> None:
    torch = Distribution("torch", "2.5.1+cu124", requires=('triton==3.1.0; platform_system == "Linux"',))
    facts = cpu_torch(
        "2.5.1+cu124", (), ExtensionFacts(distributions=(torch, Distribution("triton", "3.2.0"))), cuda="12.4"
    )
    (found,) = findings(facts)
    assert found.code == "ED205" and "triton==3.1.0" in found.title
    assert found.fixes[0].commands == ("/env/bin/python -m pip install triton==3.1.0",)
    met = ExtensionFacts(distributions=(torch, Distribution("triton", "3.1.0")))
    assert codes(cpu_torch("2.5.1+cu124", (), met, cuda="12.4")) == []


def test_companions_pinning_torch_are_ed202s_not_ed205s() -> None:
    tv = Distribution("torchvision", "0.27.0", requires=("torch==2.12.0",))
    found = codes(
        cpu_torch("2.13.0+cpu", (Package("torchvision", "0.27.0+cpu"),), ExtensionFacts(distributions=(tv,)))
    )
    assert found == ["ED202"]


# -- docs --------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", ["ED204", "ED205"])
def test_explain_prints_the_new_rules(
    code: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = run_cli(capsys, monkeypatch, "explain", code)
    assert run.code == 0
    rule = RULES_BY_CODE[code]
    assert run.out.startswith(f"{code} {rule.name} (error; about: PyTorch build)")
    for heading, text in (
        ("What it checks", rule.doc.what),
        ("Why it matters", rule.doc.why),
        ("How to fix", rule.doc.fix),
        ("Example", rule.doc.example),
    ):
        assert f"{heading}: {text}" in " ".join(run.out.split())  # wrapped to the terminal
        assert len(text.split()) >= 12 and text.endswith("."), f"{heading} is a real sentence"
    assert re.search(r"\b\d+\.\d+\.\d+", rule.doc.example), "the example names real versions"
