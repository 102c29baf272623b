"""A generated fleet: thousands of snapshots made from the fixtures, as `srun envdoctor snapshot` on
every node of a cluster would leave them: mostly one healthy stack with each node's own measurements
(free memory and disk, timings), plus known odd nodes. Shared by the fleet tests and
bench/fleet_snapshots.py; `Corpus` says what a correct diagnosis must find."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
BASE = "linux-a100-healthy"  # the majority stack
OLD_DRIVER = "linux-driver470-cu124-too-old"  # fails its own check (ED101), another GPU and driver
OTHER_TORCH = "2.4.1+cu124"  # a node provisioned later: torch skew (ED801)
EXTRA_GPU = "NVIDIA A100-SXM4-80GB"  # a node with a second GPU: GPU count skew (ED803)


@dataclass
class Corpus:
    folder: Path
    nodes: int  # snapshot files written (the unusable files come on top)
    other_torch: list[str] = field(default_factory=list)
    extra_gpu: list[str] = field(default_factory=list)
    old_driver: list[str] = field(default_factory=list)
    corrupt: Path | None = None
    foreign: Path | None = None

    @property
    def healthy(self) -> int:
        return self.nodes - len(self.other_torch) - len(self.extra_gpu) - len(self.old_driver)


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return data


def _probe(data: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(p for p in data["probes"] if p["probe"] == name)
    return found


def _variants() -> dict[str, dict[str, Any]]:
    base = _load(BASE)
    other = _load(BASE)
    torch = _probe(other, "torch")["facts"]
    torch["version"] = torch["dist_version"] = OTHER_TORCH
    torch["companions"] = [{"name": "torchvision", "version": "0.19.1+cu124"}]
    extra = _load(BASE)
    nvml = _probe(extra, "nvml")["facts"]
    nvml["gpus"].append(dict(nvml["gpus"][0], index=1))
    torch = _probe(extra, "torch")["facts"]
    torch["device_count"] = 2
    torch["devices"].append(dict(torch["devices"][0], index=1))
    return {"base": base, "other_torch": other, "extra_gpu": extra, "old_driver": _load(OLD_DRIVER)}


Draw = Callable[[random.Random, int], str]  # (rng, node number) -> a value's JSON text
_SLOT = re.compile(r'"\\u0000(\d+)\\u0000"')


def _number(low: float, high: float, whole: bool = False) -> Draw:
    if whole:
        return lambda rng, _: str(rng.randrange(int(low), int(high)))
    return lambda rng, _: repr(rng.uniform(low, high))


def _created(rng: random.Random, number: int) -> str:
    return f'"2026-11-30T{number // 3600 % 24:02d}:{number // 60 % 60:02d}:{number % 60:02d}+00:00"'


def _measure(data: dict[str, Any], slot: Callable[[Draw], str]) -> None:
    """Mark what each node measures on its own run: when, how long each probe took, free memory and
    disk, smoke timings and errors."""
    data["created"] = slot(_created)
    for probe in data["probes"]:
        probe["seconds"] = slot(_number(0.001, 3.0))
        facts = probe.get("facts") or {}
        if probe["probe"] == "system":
            facts["memory_available_bytes"] = slot(_number(2**34, 2**39, whole=True))
            facts["disk_free_bytes"] = slot(_number(2**33, 2**38, whole=True))
        if probe["probe"] == "torch":
            facts["import_seconds"] = slot(_number(0.8, 4.0))
            for device in (facts.get("smoke") or {}).get("devices", []):
                device["seconds"] = slot(_number(0.01, 1.0))
                if device.get("memory_free_before") is not None:
                    device["memory_free_before"] = slot(_number(2**35, 2**36, whole=True))
                    device["memory_free_after"] = slot(_number(2**34, 2**35, whole=True))
                for step in device.get("steps", []):
                    step["seconds"] = slot(_number(0.0001, 0.05))
                    if step.get("time_per_iter") is not None:
                        step["time_per_iter"] = slot(_number(1e-5, 1e-3))
                    if step.get("max_error") is not None:
                        step["max_error"] = slot(_number(0.0, (step.get("tolerance") or 1.0) / 2))


def _template(data: dict[str, Any]) -> tuple[list[str], list[Draw]]:
    """The snapshot's compact JSON cut at each measured value, and how each node draws that value:
    writing a node is then a join, not a json.dumps."""
    draws: list[Draw] = []

    def slot(draw: Draw) -> str:
        draws.append(draw)
        return f"\x00{len(draws) - 1}\x00"

    _measure(data, slot)
    pieces = _SLOT.split(json.dumps(data, separators=(",", ":")))
    return pieces[0::2], [draws[int(i)] for i in pieces[1::2]]


def _render(template: tuple[list[str], list[Draw]], rng: random.Random, number: int) -> str:
    parts, draws = template
    out = [parts[0]]
    for draw, part in zip(draws, parts[1:]):
        out += (draw(rng, number), part)
    return "".join(out)


def write_corpus(folder: Path, nodes: int, seed: int = 12) -> Corpus:
    """`nodes` snapshot files node00001.json... in `folder` (in racks of 500 subfolders), plus one
    damaged file and one JSON file that is no snapshot."""
    rng = random.Random(seed)
    variants = _variants()
    corrupt = json.dumps(variants["base"])[:3000]
    templates = {kind: _template(data) for kind, data in variants.items()}
    corpus = Corpus(folder=folder, nodes=nodes)
    for number in range(1, nodes + 1):
        name = f"rack{(number - 1) // 500:02d}/node{number:05d}"
        if number % 1000 == 500:
            kind, into = "old_driver", corpus.old_driver
        elif number % 250 == 17:
            kind, into = "other_torch", corpus.other_torch
        elif number % 400 == 123:
            kind, into = "extra_gpu", corpus.extra_gpu
        else:
            kind, into = "base", None
        if into is not None:
            into.append(name)
        path = folder / f"{name}.json"
        if number % 500 == 1:
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_render(templates[kind], rng, number), encoding="utf-8")
    corpus.corrupt = folder / "rack00" / "node00000-damaged.json"
    corpus.corrupt.write_text(corrupt, encoding="utf-8")
    corpus.foreign = folder / "report.json"
    corpus.foreign.write_text(json.dumps({"schema": "envdoctor.report/1", "findings": []}), encoding="utf-8")
    return corpus
