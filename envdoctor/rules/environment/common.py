"""Shared by the environment rules: where a variable may have been set, and the fixes that
change it there."""

from __future__ import annotations

from envdoctor.model.findings import Fix
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import RuleContext
from envdoctor.rules.env_edits import set_command, unset_command

CUDA_ENV_DOCS = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars"


def where_set(variable: str) -> str:
    """The places a variable usually comes from, in the words of a fix."""
    return (
        f"where {variable} is set: the shell profile, the job or run script (`export {variable}=...`), "
        f'the CI settings, or the program itself (`os.environ["{variable}"] = ...` before torch is imported)'
    )


def unset_fix(ctx: RuleContext, variable: str, summary: str, link: str | None = CUDA_ENV_DOCS) -> Fix:
    return Fix(
        summary=f"{summary}; for good, remove it {where_set(variable)}",
        commands=(unset_command(ctx.platform.os, None, variable),),
        link=link,
    )


def set_fix(
    ctx: RuleContext, variable: str, value: str, summary: str, link: str | None = CUDA_ENV_DOCS
) -> Fix:
    return Fix(
        summary=f"{summary}; for good, change it {where_set(variable)}",
        commands=(set_command(ctx.platform.os, None, variable, value),),
        link=link,
    )


def nvidia_gpus(ctx: RuleContext) -> int:
    """How many NVIDIA GPUs the driver (NVML) sees; 0 when it sees none or does not work."""
    nvml = ctx.get(NvmlFacts)
    if nvml is None or not nvml.working:
        return 0
    return len(nvml.gpus)


def cuda_torch(ctx: RuleContext) -> bool:
    """Whether the installed torch is a CUDA build (or nothing says otherwise: not installed)."""
    torch = ctx.get(TorchFacts)
    if torch is None or not torch.installed:
        return True
    return not torch.imported or bool(torch.cuda)
