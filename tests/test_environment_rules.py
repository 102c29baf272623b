"""The environment area (ED160-ED163): CUDA_VISIBLE_DEVICES, CUDA_LAUNCH_BLOCKING, CUDA_DEVICE_ORDER
and the allocator settings, judged from the environment probe's facts."""

from __future__ import annotations

import pytest

from envdoctor.engine import evaluate
from envdoctor.model.findings import Finding, Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes.environment import EnvironmentFacts, Variable
from envdoctor.probes.nvml import Gpu, NvmlFacts
from envdoctor.probes.torch_build import TorchDevice, TorchFacts
from envdoctor.rules import environment as area
from envdoctor.rules.base import RuleContext
from envdoctor.rules.environment import allocator
from envdoctor.rules.environment.visible_devices import parse

LINUX = PlatformInfo("Linux", "6.8.0", "#1 SMP", "x86_64")
WINDOWS = PlatformInfo("Windows", "11", "10.0.22631", "AMD64")
ONE_GPU = NvmlFacts(
    status="ok", driver_version="550.54.14", cuda_driver_version=12040, gpus=(Gpu(0, "RTX 4090", (8, 9)),)
)
CUDA_TORCH = TorchFacts(installed=True, dist_version="2.5.1+cu124", version="2.5.1+cu124", cuda="12.4")


def findings(
    variables: dict[str, str],
    nvml: NvmlFacts = ONE_GPU,
    torch: TorchFacts = CUDA_TORCH,
    platform: PlatformInfo = LINUX,
) -> list[Finding]:
    env = EnvironmentFacts(variables=tuple(Variable(k, v) for k, v in variables.items()), variables_read=True)
    probes = tuple(
        ProbeResult(name, ProbeStatus.OK, 0.0, facts)
        for name, facts in (("environment", env), ("nvml", nvml), ("torch", torch))
    )
    ctx = RuleContext.build(platform, Interpreter("/env/bin/python", "test"), probes)
    return list(evaluate(ctx, area.RULES))


def codes(found: list[Finding]) -> list[str]:
    return [f.code for f in found]


@pytest.mark.parametrize(
    ("value", "count", "shown", "stopped"),
    [
        ("1", 1, (), "1"),
        ("0", 1, (0,), None),
        ("0,1", 2, (0, 1), None),
        ("0,2,1", 2, (0,), "2"),  # CUDA stops at the first entry it cannot use
        ("", 1, (), ""),
        ("-1", 2, (), "-1"),
        ("1,1", 2, (1,), "1"),  # a repeated index ends the list too
        (" 0 , 1 ", 2, (0, 1), None),
    ],
)
def test_cuda_reads_the_list_up_to_the_first_entry_it_cannot_use(
    value: str, count: int, shown: tuple[int, ...], stopped: str | None
) -> None:
    visible = parse(value, count)
    assert visible.shown == shown and visible.stopped_at == stopped and visible.judged


def test_an_index_past_the_only_gpu_hides_it_and_the_fix_names_gpu_0() -> None:
    found = findings({"CUDA_VISIBLE_DEVICES": "1"})
    assert codes(found) == ["ED160"]
    hit = found[0]
    assert hit.severity.value == "error" and "hides every GPU" in hit.title and "GPU 0 only" in hit.title
    assert hit.fixes[0].commands == ("export CUDA_VISIBLE_DEVICES=0",)
    assert hit.fixes[1].commands == ("unset CUDA_VISIBLE_DEVICES",)
    assert "os.environ" in hit.fixes[0].summary  # scripts set it as often as shells do


def test_partly_valid_lists_name_what_remains_and_uuids_and_valid_lists_are_left_alone() -> None:
    two = NvmlFacts(
        status="ok", driver_version="550.54.14", cuda_driver_version=12040, gpus=(Gpu(0, "A"), Gpu(1, "A"))
    )
    partly = findings({"CUDA_VISIBLE_DEVICES": "0,3"}, nvml=two)
    assert codes(partly) == ["ED160"] and "GPU 0 only" in partly[0].title
    assert partly[0].fixes[0].commands == ("export CUDA_VISIBLE_DEVICES=0",)
    assert findings({"CUDA_VISIBLE_DEVICES": "1,0"}, nvml=two) == []
    assert findings({"CUDA_VISIBLE_DEVICES": "GPU-5e5a0c2b"}) == []  # a UUID: not judged here
    assert findings({"CUDA_VISIBLE_DEVICES": "1"}, nvml=NvmlFacts(status="library_not_found")) == []
    cpu = TorchFacts(installed=True, dist_version="2.5.1+cpu", version="2.5.1+cpu")
    assert findings({"CUDA_VISIBLE_DEVICES": ""}, torch=cpu) == []  # a CPU build: nothing to hide


def test_windows_fixes_are_powershell() -> None:
    found = findings({"CUDA_VISIBLE_DEVICES": "2"}, platform=WINDOWS)
    assert found[0].fixes[0].commands == ("$env:CUDA_VISIBLE_DEVICES = '0'",)


def test_launch_blocking_only_when_it_is_1() -> None:
    assert codes(findings({"CUDA_LAUNCH_BLOCKING": "1"})) == ["ED161"]
    assert findings({"CUDA_LAUNCH_BLOCKING": "0"}) == []
    cpu = TorchFacts(installed=True, dist_version="2.5.1+cpu", version="2.5.1+cpu")
    assert (
        findings({"CUDA_LAUNCH_BLOCKING": "1"}, nvml=NvmlFacts(status="library_not_found"), torch=cpu) == []
    )


def test_device_order_differs_only_for_mixed_gpus_without_pci_bus_id() -> None:
    mixed = NvmlFacts(
        status="ok",
        driver_version="550.54.14",
        cuda_driver_version=12040,
        gpus=(Gpu(0, "RTX 3060", (8, 6)), Gpu(1, "RTX 4090", (8, 9))),
    )
    torch = TorchFacts(
        installed=True,
        dist_version="2.5.1+cu124",
        version="2.5.1+cu124",
        cuda="12.4",
        devices=(TorchDevice(0, "RTX 4090"), TorchDevice(1, "RTX 3060")),
    )
    proven = findings({}, nvml=mixed, torch=torch)
    assert (
        codes(proven) == ["ED162"]
        and proven[0].title == "torch numbers these GPUs differently from nvidia-smi"
    )
    assert proven[0].fixes[0].commands == ("export CUDA_DEVICE_ORDER=PCI_BUS_ID",)
    assert findings({"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, nvml=mixed, torch=torch) == []
    same = TorchFacts(
        installed=True, dist_version="2.5.1+cu124", version="2.5.1+cu124", cuda="12.4",
        devices=(TorchDevice(0, "RTX 3060"), TorchDevice(1, "RTX 4090")),
    )  # fmt: skip
    assert findings({}, nvml=mixed, torch=same) == []  # already nvidia-smi's order
    twins = NvmlFacts(
        status="ok", driver_version="550.54.14", cuda_driver_version=12040, gpus=(Gpu(0, "A"), Gpu(1, "A"))
    )
    assert findings({}, nvml=twins) == []


@pytest.mark.parametrize(
    ("value", "torch", "rejected"),
    [
        ("expandable_segments:True", "2.0.1", ["expandable_segments:True"]),
        ("expandable_segments:True", "2.1.0", []),
        ("expandable_segments:true", "2.5.1", ["expandable_segments:true"]),
        ("expandable_segments=True", "2.5.1", ["expandable_segments=True"]),
        ("max_split_size_mb:128,expandable_segments:True", "2.0.1", ["expandable_segments:True"]),
        ("backend:cudaMallocAsync", "2.3.1", []),
        ("some_future_option:1", "2.3.1", []),  # unknown to envdoctor: never claimed
    ],
)
def test_allocator_options_against_the_installed_release(value: str, torch: str, rejected: list[str]) -> None:
    from packaging.version import Version

    assert [p.entry for p in allocator.problems(value, Version(torch))] == rejected


def test_allocator_findings_and_the_variable_name_torch_reads() -> None:
    old = TorchFacts(installed=True, dist_version="2.0.1", version="2.0.1", cuda="11.8")
    found = findings({"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128,expandable_segments:True"}, torch=old)
    assert codes(found) == ["ED163"]
    assert found[0].fixes[0].commands == ("export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128",)
    new_name = findings({"PYTORCH_ALLOC_CONF": "expandable_segments:True"}, torch=CUDA_TORCH)
    assert codes(new_name) == ["ED163"] and "does not read PYTORCH_ALLOC_CONF" in new_name[0].title
    t291 = TorchFacts(installed=True, dist_version="2.9.1+cu128", version="2.9.1+cu128", cuda="12.8")
    ignored = findings({"PYTORCH_ALLOC_CONF": "expandable_segments:True"}, torch=t291)
    assert codes(ignored) == ["ED163"] and "ignores expandable_segments" in ignored[0].title
    assert ignored[0].fixes[0].commands == ("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",)
    t211 = TorchFacts(installed=True, dist_version="2.11.0+cu128", version="2.11.0+cu128", cuda="12.8")
    assert findings({"PYTORCH_ALLOC_CONF": "expandable_segments:True"}, torch=t211) == []
    both = {
        "PYTORCH_ALLOC_CONF": "expandable_segments:True",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
    }
    assert findings(both, torch=t291) == []  # the deprecated name is read: the workaround in place
