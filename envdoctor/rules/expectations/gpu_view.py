"""What the expectation rules see of the GPUs: the ones torch can use, or why it can use none,
and the shared wording of an unmet expectation's title and evidence."""

from __future__ import annotations

from envdoctor.model.findings import ProbeStatus
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.nvml import describe as describe_nvml
from envdoctor.probes.torch_build import TorchDevice, TorchFacts
from envdoctor.rules.base import RuleContext
from envdoctor.util.records import record


@record
class GpuView:
    """The GPUs torch can use here, or why it can use none, plus what NVML adds for context."""

    devices: tuple[TorchDevice, ...]
    why_none: str | None
    nvml_says: str

    @property
    def found(self) -> str:
        if self.devices:
            names = ", ".join(device_name(d) for d in self.devices)
            return f"torch sees {len(self.devices)} GPU(s): {names}"
        return f"{self.why_none}; NVIDIA driver: {self.nvml_says}"


def device_name(device: TorchDevice) -> str:
    """ "0: NVIDIA A100 (sm_80)": how findings name a GPU torch sees."""
    cap = f" (sm_{device.capability[0]}{device.capability[1]})" if device.capability else ""
    return f"{device.index}: {device.name or 'GPU'}{cap}"


def _torch_missing_reason(ctx: RuleContext) -> str:
    result = next((p for p in ctx.probes if p.probe == "torch"), None)
    if result is None:
        return "the torch probe did not run (--only/--skip), so no GPU could be confirmed"
    if result.status is ProbeStatus.NOT_APPLICABLE:
        return f"the torch probe does not apply here ({result.error})"
    return f"the torch probe {result.status.value} ({result.error})"


def torch_problem(torch: TorchFacts | None, ctx: RuleContext) -> str | None:
    """Why torch cannot be asked about versions or GPUs at all; None when it imported."""
    if torch is None:
        return _torch_missing_reason(ctx)
    if torch.crash is not None:
        return "the torch check crashed or hung (see ED003)"
    if not torch.installed:
        return f"torch is not installed in {ctx.interpreter.path}"
    if torch.import_error is not None:
        return f"import torch fails ({torch.import_error.type})"
    return None


def gpu_view(ctx: RuleContext) -> GpuView:
    """The GPUs torch can use, as every GPU expectation judges them."""
    torch = ctx.get(TorchFacts)
    nvml = ctx.get(NvmlFacts)
    nvml_says = describe_nvml(nvml) if nvml is not None else "not examined"
    problem = torch_problem(torch, ctx)
    if problem is not None or torch is None:
        return GpuView((), problem, nvml_says)
    if not torch.cuda and not torch.hip:
        return GpuView((), f"torch {torch.version} is a CPU-only build", nvml_says)
    if not torch.cuda_available:
        no_gpu = nvml is not None and not nvml.working and not nvml.pci_nvidia_devices
        where = "there is no NVIDIA GPU or driver, so " if no_gpu else ""
        why = f"{where}torch {torch.version} cannot use a GPU (torch.cuda.is_available() is False)"
        return GpuView((), why, nvml_says)
    devices = torch.devices or tuple(TorchDevice(index=i) for i in range(torch.device_count or 0))
    if not devices:
        return GpuView((), "torch.cuda.device_count() is 0", nvml_says)
    return GpuView(devices, None, nvml_says)


def title(key: str, wanted: object, found: str) -> str:
    """ "expectation min-gpus = 2 not met: <what was found>": the title of every ED7xx finding."""
    shown = "true" if wanted is True else str(wanted)
    return f"expectation {key} = {shown} not met: {found}"


def evidence(key: str, wanted: object, *more: str) -> tuple[str, ...]:
    shown = "true" if wanted is True else str(wanted)
    return (f"expected {key} = {shown}", *more)
