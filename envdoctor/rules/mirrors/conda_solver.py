"""conda's solver installed the CPU build of pytorch on a machine with an NVIDIA GPU (ED513).

conda picks the pytorch build by the whole environment: a package that depends on `cpuonly` or on
`pytorch-mutex=*=cpu` (old torchdata, some meta-packages), a missing nvidia channel, a pytorch-cuda
that does not constrain conda-forge's pytorch, or no build-string pin lets the solver settle on the
CPU build without a word. The conda build has no +cpu label: its version is plain and
torch.version.cuda is None.
"""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import planned_fix

CONDA_FORGE_PYTORCH = "https://conda-forge.org/docs/user/tipsandtricks/#installing-cuda-enabled-packages-like-tensorflow-and-pytorch"


def _conda_cpu_build(python: PythonFacts, torch: TorchFacts) -> bool:
    """A CPU torch that conda installed: a conda environment, no +cpu/+cuXXX label (pip wheels from
    PyTorch's index carry one), and no CUDA in the build. On Linux x86_64 PyPI's plain wheel is a
    CUDA build, so a plain CPU build there is conda's; elsewhere the environment decides."""
    if not python.is_conda or not torch.imported or torch.cuda or torch.hip:
        return False
    return torch.local_label is None


@rule(
    code="ED513",
    name="conda-solver-chose-cpu-pytorch",
    severity=Severity.WARNING,
    summary="in a conda environment on an NVIDIA machine, conda's solver installed the CPU build of pytorch",
    needs=(PythonFacts, TorchFacts, NvmlFacts),
    doc=RuleDoc(
        what="A conda environment whose torch is a CPU build with no local label (conda's own build, "
        "not a pip wheel) on a machine whose NVIDIA driver works.",
        why="conda chooses the pytorch build by the whole environment: a package that depends on "
        "cpuonly or pytorch-mutex=*=cpu (torchdata 0.3), a mirror without the nvidia channel, a "
        "pytorch-cuda meta-package that does not constrain conda-forge's pytorch, or no build-string "
        "pin all let the solver settle on the CPU build silently.",
        fix="Install the CUDA build with pip inside the conda environment (the command is shown), or "
        "pin the CUDA build in conda (pytorch=*=*cuda* from conda-forge, or a build string with "
        "-c pytorch -c nvidia for releases up to 2.5) and drop what pulls cpuonly.",
        example="environment.yml with pytorch, cudatoolkit=11.3 and torchdata from -c pytorch: conda "
        "list shows pytorch 1.11.0 py3.8_cpu_0 and pytorch-mutex 1.0 cpu.",
    ),
)
def conda_solver_chose_cpu_pytorch(ctx: RuleContext) -> Iterator[Hit]:
    python = ctx.need(PythonFacts)
    torch = ctx.need(TorchFacts)
    nvml = ctx.need(NvmlFacts)
    if not nvml.working or not nvml.gpus or not _conda_cpu_build(python, torch):
        return
    gpu = nvml.gpus[0].name or "an NVIDIA GPU"
    fixes = []
    pip = planned_fix(ctx, "Install the CUDA build with pip inside this conda environment", want_cuda=True)
    if pip is not None:
        fixes.append(pip)
    fixes.append(
        Fix(
            summary="Keep conda and make it take the CUDA build: see which package pulls the CPU "
            "one (cpuonly, pytorch-mutex=*=cpu), remove it, and pin the build (from conda-forge: "
            "pytorch=*=*cuda*; from -c pytorch -c nvidia for releases up to 2.5: a py3.X_cudaXX.X build "
            "string)",
            commands=("conda list pytorch", "conda list cpuonly"),
            link=CONDA_FORGE_PYTORCH,
        )
    )
    yield Hit(
        title=f"conda installed the CPU build of pytorch {torch.version} next to {gpu}",
        detail=f"This conda environment's torch {torch.version} is a CPU build with no local label: "
        "conda's own package, not a pip wheel. On a machine with a working NVIDIA driver that means "
        "the solver chose the CPU variant: a package in the environment asks for cpuonly or "
        "pytorch-mutex=*=cpu, the nvidia channel is missing (or not mirrored), or nothing pinned the "
        "CUDA build string.",
        evidence=(
            "python.is_conda = true",
            f"torch = {torch.version}, torch.version.cuda = None",
            f"GPU: {gpu}",
        ),
        fixes=tuple(fixes),
    )
