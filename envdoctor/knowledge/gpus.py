"""GPU name -> compute capability for common NVIDIA GPUs (gpus.json), so `--gpu "RTX 3090"` works.

NVML's own answer always wins on a live machine; this table serves plans for other machines.
"""

from __future__ import annotations

import re
from functools import cache

from envdoctor.knowledge import load_table
from envdoctor.knowledge.archs import Capability, dotted, parse_capability
from envdoctor.util.records import record


@record
class GpuModel:
    name: str  # as the table writes it
    capability: Capability
    architecture: str


def _normalise(text: str) -> str:
    text = text.lower().replace("-", " ").replace("_", " ")
    text = re.sub(r"\b(nvidia|geforce|tesla)\b", " ", text)
    return " ".join(text.split())


@cache
def _models() -> tuple[tuple[str, GpuModel], ...]:
    rows = []
    for entry in load_table("gpus.json")["gpus"]:
        capability = parse_capability(entry["capability"])
        assert capability is not None, entry
        for name in entry["names"]:
            rows.append((_normalise(name), GpuModel(name, capability, entry["architecture"])))
    # Longest names first, so "rtx 6000 ada" wins over "quadro rtx 6000" and "a100" over "a10".
    return tuple(sorted(rows, key=lambda r: -len(r[0])))


def lookup_gpu(name: str) -> GpuModel | None:
    """The table's model for a GPU name as NVML or a user writes it ("NVIDIA GeForce RTX 3090")."""
    wanted = _normalise(name)
    if not wanted:
        return None
    for key, model in _models():
        # The substring test first: it is what the pattern needs anyway, and it spares compiling
        # (and searching with) a pattern per table row on every call.
        if key in wanted and _whole_words(key).search(wanted):
            return model
    return None


@cache
def _whole_words(key: str) -> re.Pattern[str]:
    """`key` not inside a longer name or number: "a10" is not found in "a100"."""
    return re.compile(rf"(?<![a-z0-9]){re.escape(key)}(?![a-z0-9])")


def architecture(capability: Capability) -> str | None:
    for entry in load_table("gpus.json")["gpus"]:
        if entry["capability"] == dotted(capability):
            return str(entry["architecture"])
    return None


def is_tegra(capability: Capability) -> bool:
    """Jetson-class integrated GPUs: PyTorch's wheels are built for discrete GPUs and SBSA servers."""
    return dotted(capability) in load_table("gpus.json")["tegra"]


@record
class GpuSpec:
    """A GPU as given on the command line or detected: a name and its compute capability."""

    label: str
    capability: Capability


def parse_gpu(text: str) -> GpuSpec | None:
    """ "RTX 3090", "sm_120", "8.6" -> a GpuSpec; None when neither a known name nor a capability."""
    capability = parse_capability(text)
    if capability is not None:
        return GpuSpec(f"sm_{capability[0]}{capability[1]}", capability)
    model = lookup_gpu(text)
    if model is None:
        return None
    return GpuSpec(text.strip(), model.capability)
