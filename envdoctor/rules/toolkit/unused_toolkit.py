"""A CUDA toolkit torch does not use (ED401): torch wheels need only the NVIDIA driver."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.model.findings import Severity
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.toolkit import Toolkit, ToolkitFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.toolkit.toolkits import BUNDLED, torch_cuda
from envdoctor.util.limits import small_int


def _toolkit_line(toolkit: Toolkit) -> str:
    version = f"CUDA {toolkit.version}" if toolkit.version else "a CUDA toolkit of unknown version"
    return f"{version} at {toolkit.root} ({', '.join(toolkit.found_by)})"


@rule(
    code="ED401",
    name="toolkit-not-used-by-torch",
    severity=Severity.INFO,
    summary="a CUDA toolkit is installed but torch does not use it (wheels need only a driver)",
    needs=(ToolkitFacts,),
    doc=RuleDoc(
        what="Whether CUDA toolkits are installed while torch is a CPU build or no NVIDIA driver works.",
        why="The most common misunderstanding: installing the CUDA toolkit to 'get CUDA for "
        "torch'. torch wheels bundle the CUDA runtime and need only the driver; the toolkit "
        "only compiles CUDA code.",
        fix="Nothing, unless you compile CUDA extensions; for GPU torch install the driver "
        "and a CUDA build of torch.",
        example="nvcc 13.0 on PATH, no NVIDIA driver, torch 2.13.0+cpu.",
    ),
)
def toolkit_not_used_by_torch(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    real = [t for t in facts.toolkits if t.exists]
    if not real:
        return
    nvml = ctx.get(NvmlFacts)
    torch = ctx.get(TorchFacts)
    cuda = torch_cuda(ctx)
    no_driver = nvml is not None and not nvml.working
    if cuda and not no_driver:
        return  # a CUDA torch with a driver: the toolkit rules below judge the details
    newest = max(
        real, key=lambda t: [n for n in map(small_int, (t.version or "0").split(".")) if n is not None]
    )
    name = f"CUDA {newest.major_minor or newest.version} toolkit" if newest.version else "CUDA toolkit"
    only_compiles = "A toolkit (nvcc, headers, libraries) is only needed to compile CUDA code."
    if no_driver:
        title = f"a {name} is installed, but no NVIDIA driver works here"
        reason = (
            "A toolkit (nvcc, headers, libraries) compiles CUDA code; running any CUDA program, "
            "torch included, needs the NVIDIA driver, which a toolkit does not contain."
        )
    elif torch is not None and torch.installed and torch.variant is not None:
        title = f"a {name} is installed; torch does not use it"
        reason = only_compiles
    else:  # no torch, or one whose build is unknown (its import failed or hung)
        title = f"a {name} is installed; torch will not need it"
        reason = only_compiles
    if torch is not None and torch.installed and torch.variant == "cpu":
        version = torch.version or torch.dist_version
        build = f"torch {version}" if version else "torch"
        reason += f" The installed {build} is a CPU-only build, so it uses neither toolkit nor driver."
    detail = (
        f"Found: {'; '.join(_toolkit_line(t) for t in real)}.\n{reason} Note: {BUNDLED}. "
        "Nothing to fix unless you compile CUDA extensions."
    )
    yield Hit(
        title=title,
        detail=detail,
        evidence=tuple(f"toolkit {t.root}: {t.version}" for t in real)
        + (("nvml.status = " + nvml.status,) if nvml is not None and no_driver else ()),
    )
