"""Installed CUDA toolkits against torch's CUDA: versions, which toolkit is complete, which one
matches. Shared by the toolkit rules.

The toolkit matters to torch in two ways only: torch.utils.cpp_extension compiles extensions with
it, and its libraries, put on a loader path, can shadow the ones torch bundles. Everything else
is information: a toolkit is never what makes a torch wheel run.
"""

from __future__ import annotations

from envdoctor import knowledge
from envdoctor.probes.toolkit import CudaBinEntry, Toolkit, ToolkitFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import RuleContext
from envdoctor.util.limits import small_int

TOOLKIT_ARCHIVE = "https://developer.nvidia.com/cuda-toolkit-archive"
BUNDLED = (
    "torch wheels bundle their own CUDA runtime libraries and need only an NVIDIA driver, not a CUDA toolkit"
)


def torch_cuda(ctx: RuleContext) -> str | None:
    """torch's CUDA version ("12.4"), from torch.version.cuda or the +cuXXX label."""
    torch = ctx.get(TorchFacts)
    if torch is None or not torch.installed:
        return None
    if torch.cuda:
        return ".".join(torch.cuda.split(".")[:2])
    label = torch.local_label
    return knowledge.variant_cuda(label) if label else None


def major(version: str | None) -> int | None:
    head = (version or "").split(".")[0]
    return small_int(head)


def major_minor(version: str | None) -> str | None:
    parts = (version or "").split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else None


def complete_toolkits(toolkits: tuple[Toolkit, ...]) -> list[Toolkit]:
    """The toolkits that can compile: the folder exists with nvcc and the CUDA headers."""
    return [t for t in toolkits if t.exists and t.has_nvcc and t.has_headers]


def matching_toolkit(facts: ToolkitFacts, cuda: str, exact: bool) -> Toolkit | None:
    """An installed, complete toolkit with torch's major (exact: major.minor) version."""
    for toolkit in complete_toolkits(facts.toolkits):
        if exact and toolkit.major_minor == major_minor(cuda):
            return toolkit
        if not exact and toolkit.major == major(cuda):
            return toolkit
    return None


def toolkit_bins(facts: ToolkitFacts) -> list[CudaBinEntry]:
    """PATH folders holding an nvcc, each folder once."""
    return [b for b in facts.cuda_bins if b.has_nvcc and b.duplicate_of is None]


def path_name(ctx: RuleContext) -> str:
    """PATH as the OS spells it: Windows keeps "Path" in the registry and the environment."""
    return "Path" if ctx.platform.os == "windows" else "PATH"
