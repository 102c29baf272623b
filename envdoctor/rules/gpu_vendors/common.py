"""What the AMD and Intel rules share: is there an NVIDIA GPU, which gfx targets does the installed
ROCm build carry, and the planner's answer for these GPUs."""

from __future__ import annotations

from dataclasses import replace

from envdoctor.install import plan as install
from envdoctor.knowledge import gpu_vendors as known
from envdoctor.model.findings import Fix
from envdoctor.probes.gpu_vendors import GpuVendorFacts, VendorGpu
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import RuleContext
from envdoctor.rules.fixes import install_target, plan_fix, project_environment_fix


def nvidia_here(ctx: RuleContext) -> bool:
    """An NVIDIA GPU NVML sees, or one on the PCI bus: then CUDA is the plan, not ROCm or XPU."""
    nvml = ctx.get(NvmlFacts)
    return nvml is not None and (bool(nvml.working and nvml.gpus) or bool(nvml.pci_nvidia_devices))


def build_arch(torch: TorchFacts) -> tuple[str, ...] | None:
    """The gfx targets of the installed ROCm build: its own arch list, else envdoctor's data for
    its variant; None when neither is known."""
    own = tuple(a for a in torch.arch_list if known.is_gfx(a))
    if own:
        return own
    listed = known.rocm_arch_list(torch.variant or "")
    return listed.arch if listed is not None else None


def known_gfx(facts: GpuVendorFacts) -> tuple[VendorGpu, ...]:
    """The AMD GPUs of known gfx target that matter: the discrete ones where there are any (an APU's
    small integrated GPU beside a Radeon card is not what the job runs on)."""
    found = tuple(g for g in facts.amd if g.gfx_target)
    discrete = tuple(g for g in found if not g.integrated)
    return discrete or found


def vendor_plan(ctx: RuleContext, gfx: tuple[str, ...] = (), xpu: bool = False) -> install.InstallPlan:
    """The planner's build for these AMD gfx targets (or the xpu build) on this machine."""
    return install.plan(replace(install_target(ctx), gfx_targets=gfx, want_xpu=xpu))


def vendor_fix(ctx: RuleContext, summary: str, plan: install.InstallPlan) -> Fix | None:
    if ctx.interpreter.own_isolated:
        return project_environment_fix(ctx)
    return plan_fix(ctx, plan, summary)


def gpus_words(gpus: tuple[VendorGpu, ...]) -> str:
    return ", ".join(g.label for g in gpus)
