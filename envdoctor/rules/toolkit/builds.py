"""What the extension-build rules share: the toolkit a build compiles with, the GPUs it targets,
torch's release, and the pip of the examined environment."""

from __future__ import annotations

import ntpath
import posixpath

from envdoctor.install.packages import PackageRequest
from envdoctor.knowledge.archs import Capability, dotted
from envdoctor.model.findings import Fix
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.toolkit import Toolkit, ToolkitFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import RuleContext
from envdoctor.rules.env_edits import prepend_command, set_variable_fixes
from envdoctor.rules.fixes import package_fix
from envdoctor.rules.toolkit.toolkits import complete_toolkits, major_minor, path_name
from envdoctor.util.records import record


@record
class BuildToolkit:
    """The CUDA version a build compiles with and where that comes from."""

    version: str  # "12.1" or "12.1.105"
    where: str  # "/usr/local/cuda-12.1 (CUDA_HOME)", "nvcc on PATH (/usr/bin/nvcc)"
    root: str | None


def build_toolkit(facts: ToolkitFacts) -> BuildToolkit | None:
    """The toolkit torch's cpp_extension compiles with (its CUDA_HOME, when it holds nvcc), else the
    nvcc on PATH that build scripts run; None when neither has a known version."""
    home = facts.cuda_home
    if home is not None and home.has_nvcc and home.version:
        return BuildToolkit(home.version, f"{home.path} ({home.chosen_by})", home.path)
    nvcc = facts.nvcc
    if nvcc is not None and nvcc.release:
        return BuildToolkit(nvcc.release, f"the nvcc on PATH ({nvcc.path})", None)
    return None


def _bin(ctx: RuleContext, root: str) -> str:
    if ctx.platform.os == "windows":
        return ntpath.join(root, "bin")
    return posixpath.join(root, "bin")


def toolkit_fixes(ctx: RuleContext, facts: ToolkitFacts, toolkit: Toolkit, why: str) -> tuple[Fix, ...]:
    """CUDA_HOME at `toolkit` and its bin folder first on PATH: cpp_extension reads the one, build
    scripts and setup.py checks (`nvcc -V`) the other."""
    fixes = set_variable_fixes(ctx.platform.os, facts.shell, "CUDA_HOME", toolkit.root, why)
    prepend = prepend_command(ctx.platform.os, facts.shell, path_name(ctx), _bin(ctx, toolkit.root))
    return (
        *fixes,
        Fix(summary=f"Put its nvcc first on {path_name(ctx)} for this session", commands=(prepend,)),
    )


def torch_release(ctx: RuleContext) -> str | None:
    """The installed torch's public version ("2.3.1"), if torch is installed and says."""
    torch = ctx.get(TorchFacts)
    if torch is None or not torch.installed:
        return None
    return torch.public_version


@record
class TargetGpu:
    name: str
    capability: Capability


def visible_gpus(ctx: RuleContext) -> list[TargetGpu]:
    """The GPUs a build without TORCH_CUDA_ARCH_LIST targets: torch's devices, else NVML's."""
    torch = ctx.get(TorchFacts)
    if torch is not None and torch.devices:
        return [TargetGpu(d.name or f"GPU {d.index}", d.capability) for d in torch.devices if d.capability]
    nvml = ctx.get(NvmlFacts)
    if nvml is not None and nvml.working:
        return [TargetGpu(g.name or f"GPU {g.index}", g.capability) for g in nvml.gpus if g.capability]
    return []


def no_gpu_visible(ctx: RuleContext) -> bool:
    """True when neither torch nor NVML sees a GPU (a container without --gpus, a docker build step)."""
    torch = ctx.get(TorchFacts)
    nvml = ctx.get(NvmlFacts)
    torch_sees_none = torch is not None and torch.device_count == 0
    nvml_sees_none = nvml is not None and (not nvml.working or not nvml.gpus)
    if torch is not None and torch.device_count:
        return False
    return torch_sees_none or (nvml_sees_none and (torch is None or torch.device_count is None))


def best_toolkit(facts: ToolkitFacts, cuda: str | None) -> Toolkit | None:
    """An installed, complete toolkit: torch's major.minor first, then its major, then the newest."""
    usable = complete_toolkits(facts.toolkits)
    if not usable:
        return None
    wanted = major_minor(cuda)
    if wanted is not None:
        exact = next((t for t in usable if t.major_minor == wanted), None)
        if exact is not None:
            return exact
        same = [t for t in usable if t.major is not None and str(t.major) == wanted.split(".")[0]]
        if same:
            return same[0]
    return usable[0]


def arch_text(capability: Capability) -> str:
    return dotted(capability)


def pip_install_fix(ctx: RuleContext, summary: str, *arguments: str) -> Fix:
    """Packages (and pip options, the words that start with "-") for the examined interpreter, as
    the planner routes them on this machine's sources."""
    options = tuple(a for a in arguments if a.startswith("-"))
    requirements = tuple(a for a in arguments if not a.startswith("-"))
    return package_fix(ctx, summary, PackageRequest(requirements, options=options))
