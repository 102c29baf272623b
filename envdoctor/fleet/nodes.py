"""One node's snapshot -> its stack and its own verdict, and the groups nodes fall into."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from envdoctor.engine import judge
from envdoctor.fleet.facts import (
    NOT_INSTALLED,
    Component,
    FindingBrief,
    GpuModel,
    NodeCheck,
    NodeGroup,
    Stack,
)
from envdoctor.model.findings import Report
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.settings import Settings
from envdoctor.snapshot import Snapshot


def cudnn_text(version: int | None) -> str | None:
    """torch.backends.cudnn.version() as a dotted version: 90100 -> 9.1.0, 8902 -> 8.9.2."""
    if version is None:
        return None
    if version >= 90000:
        return f"{version // 10000}.{version % 10000 // 100}.{version % 100}"
    return f"{version // 1000}.{version % 1000 // 100}.{version % 100}"


def _facts(snapshot: Snapshot, kind: type[Any]) -> Any:
    return next((p.facts for p in snapshot.probes if isinstance(p.facts, kind)), None)


def _gpu_models(names: Iterable[str | None]) -> tuple[GpuModel, ...]:
    counts: dict[str, int] = {}
    for name in names:
        counts[name or "unnamed GPU"] = counts.get(name or "unnamed GPU", 0) + 1
    return tuple(GpuModel(name, count) for name, count in sorted(counts.items()))


def stack_of(snapshot: Snapshot, nccl: str | None = None) -> Stack:
    python: PythonFacts | None = _facts(snapshot, PythonFacts)
    torch: TorchFacts | None = _facts(snapshot, TorchFacts)
    nvml: NvmlFacts | None = _facts(snapshot, NvmlFacts)
    imported = torch is not None and torch.imported
    if nvml is not None and nvml.working and nvml.gpus:
        gpus = _gpu_models(g.name for g in nvml.gpus)
    elif imported and torch is not None:
        gpus = _gpu_models(d.name for d in torch.devices)
    else:
        gpus = ()
    return Stack(
        os=f"{snapshot.platform.os} {snapshot.platform.machine}",
        python=python.version if python is not None else None,
        torch=None
        if torch is None
        else (torch.version or torch.dist_version or "?")
        if torch.installed
        else NOT_INSTALLED,
        cuda=torch.cuda if torch is not None and imported else None,
        cudnn=cudnn_text(torch.cudnn) if torch is not None and imported else None,
        nccl=nccl,
        driver=nvml.driver_version if nvml is not None and nvml.working else None,
        gpus=gpus,
        components=tuple(Component(p.name, p.version) for p in torch.companions) if torch else (),
    )


def node_check(report: Report) -> NodeCheck:
    return NodeCheck(
        exit_code=report.exit_code,
        worst=report.worst,
        findings=tuple(FindingBrief(f.code, f.name, f.severity, f.title) for f in report.findings),
    )


def diagnose_snapshot(snapshot: Snapshot, settings: Settings, source: str) -> NodeCheck:
    return node_check(judge(snapshot.platform, snapshot.interpreter, snapshot.probes, settings, source))


@dataclass
class Grouper:
    """Collects nodes into groups of one (stack, verdict), in first-seen order; memory grows with the
    number of groups and node names only."""

    _index: dict[tuple[Stack | None, NodeCheck], int] = field(default_factory=dict)
    _keys: list[tuple[Stack | None, NodeCheck]] = field(default_factory=list)
    _nodes: list[list[str]] = field(default_factory=list)

    def add(self, stack: Stack | None, check: NodeCheck, node: str) -> int:
        key = (stack, check)
        index = self._index.get(key)
        if index is None:
            index = self._index[key] = len(self._keys)
            self._keys.append(key)
            self._nodes.append([])
        self._nodes[index].append(node)
        return index

    def add_to(self, index: int, node: str) -> None:
        self._nodes[index].append(node)

    def groups(self) -> tuple[NodeGroup, ...]:
        groups = [
            NodeGroup(stack=stack, check=check, nodes=tuple(sorted(names, key=natural_key)))
            for (stack, check), names in zip(self._keys, self._nodes)
        ]
        # Largest groups first: the majority stack leads, the odd ones out follow.
        return tuple(
            sorted(groups, key=lambda g: (-len(g.nodes), natural_key(g.nodes[0]) if g.nodes else ()))
        )


def natural_key(name: str) -> tuple[Any, ...]:
    """node2 before node10."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))
