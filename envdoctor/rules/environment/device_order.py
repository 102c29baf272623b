"""GPU numbering that differs between nvidia-smi and CUDA (ED162).

nvidia-smi and NVML number GPUs by PCI bus; CUDA, unless CUDA_DEVICE_ORDER=PCI_BUS_ID, puts the
fastest first. On a machine with GPUs of different models the two orders differ, and an index
read off nvidia-smi picks another card in torch (and in CUDA_VISIBLE_DEVICES).
"""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.environment import EnvironmentFacts
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.environment.common import CUDA_ENV_DOCS, set_fix

VARIABLE = "CUDA_DEVICE_ORDER"


def _names(names: list[str]) -> str:
    return ", ".join(f"{i}: {n}" for i, n in enumerate(names))


@rule(
    code="ED162",
    name="cuda-device-order-differs",
    severity=Severity.WARNING,
    summary="GPUs of different models and no CUDA_DEVICE_ORDER=PCI_BUS_ID: torch's cuda:N is not "
    "nvidia-smi's GPU N",
    needs=(EnvironmentFacts, NvmlFacts),
    doc=RuleDoc(
        what="On a machine with GPUs of more than one model, whether CUDA_DEVICE_ORDER is "
        "PCI_BUS_ID, and whether torch's device list is in the order NVML (nvidia-smi) lists them.",
        why="CUDA numbers the fastest GPU first by default, nvidia-smi by PCI bus. The index a user "
        "reads off nvidia-smi (or picks in a GUI that asks NVML) then selects another card in torch "
        "and in CUDA_VISIBLE_DEVICES: the job lands on the display GPU, or on a card another job uses.",
        fix="Export CUDA_DEVICE_ORDER=PCI_BUS_ID (where the job is started, before torch is "
        "imported), or name GPUs by UUID in CUDA_VISIBLE_DEVICES (`nvidia-smi -L`).",
        example="A DGX Station A100: four A100s and a DGX Display GPU; CUDA_VISIBLE_DEVICES=0 runs "
        "on an A100 that nvidia-smi calls GPU 1.",
    ),
)
def cuda_device_order_differs(ctx: RuleContext) -> Iterator[Hit]:
    env = ctx.need(EnvironmentFacts)
    nvml = ctx.need(NvmlFacts)
    if not env.variables_read or not nvml.working or len(nvml.gpus) < 2:
        return
    order = env.variable(VARIABLE)
    if order is not None and order.strip().upper() == "PCI_BUS_ID":
        return
    nvml_names = [g.name or f"GPU {g.index}" for g in sorted(nvml.gpus, key=lambda g: g.index)]
    if len(set(nvml_names)) < 2:
        return  # identical GPUs: CUDA breaks the tie by PCI bus, so both orders agree
    torch = ctx.get(TorchFacts)
    torch_names = [d.name or "" for d in torch.devices] if torch is not None and torch.imported else []
    proven = len(torch_names) == len(nvml_names) and torch_names != nvml_names
    if torch_names == nvml_names:
        return  # torch's order is nvidia-smi's already (the fastest GPU sits first on the bus)
    visible = env.variable("CUDA_VISIBLE_DEVICES")
    detail = (
        f"nvidia-smi numbers these GPUs by PCI bus ({_names(nvml_names)}); CUDA, with "
        f"{VARIABLE} {'=' + repr(order) if order is not None else 'unset'}, puts the fastest first"
    )
    if proven:
        detail += f", and torch lists them as {_names(torch_names)}"
    detail += (
        ". An index read off nvidia-smi, or picked in a tool that asks NVML, selects another card in torch"
    )
    if visible is not None and visible.strip():
        detail += f", and CUDA_VISIBLE_DEVICES={visible!r} is read in CUDA's order too"
    detail += "."
    yield Hit(
        title="torch numbers these GPUs differently from nvidia-smi"
        if proven
        else "GPUs of different models: CUDA may number them differently from nvidia-smi",
        detail=detail,
        evidence=(
            f"{VARIABLE}={order!r}" if order is not None else f"{VARIABLE} unset",
            f"NVML: {_names(nvml_names)}",
        )
        + ((f"torch: {_names(torch_names)}",) if torch_names else ()),
        fixes=(
            set_fix(ctx, VARIABLE, "PCI_BUS_ID", "Number GPUs as nvidia-smi does"),
            Fix(
                summary="Name GPUs by UUID in CUDA_VISIBLE_DEVICES: a UUID is the same card for NVML "
                "and CUDA",
                commands=("nvidia-smi -L",),
                link=CUDA_ENV_DOCS,
            ),
        ),
    )
