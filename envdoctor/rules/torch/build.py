"""The torch build against the machine: CPU-only on a GPU box, CUDA unusable, mismatched companions."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from envdoctor import knowledge
from envdoctor.install import plan as install
from envdoctor.knowledge import gpu_compute
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import driver_fix, install_target, plan_fix, planned_fix
from envdoctor.rules.torch import companions, nightly
from envdoctor.rules.torch.retired_gpu import cpu_torch_is_right


def after_driver_upgrade(ctx: RuleContext) -> Fix | None:
    """The CUDA build to install once the driver is new enough: the newest release's first CUDA
    variant with kernels for the GPUs NVML names (the widest arch lists come first)."""
    platform = knowledge.platform_key(ctx.platform.os, ctx.platform.machine)
    newest = knowledge.releases()[-1]
    builds = newest.builds(platform)
    target = install_target(ctx, want_cuda=True)
    for variant in builds.variants if builds is not None else ():
        if not variant.startswith("cu"):
            continue
        build = gpu_compute.closest_build(newest.series, variant, platform)
        if build is not None and not all(build.runs_on(c) for c in target.gpu_capabilities):
            continue
        found = install.plan(replace(target, variant=variant, driver_version=None, driver_cuda=None))
        fix = plan_fix(ctx, found, "After the driver update, replace torch with a CUDA build")
        if fix is not None:
            return fix
    return None


def _nvidia_gpu_seen(nvml: NvmlFacts | None) -> bool:
    return nvml is not None and (bool(nvml.working and nvml.gpus) or bool(nvml.pci_nvidia_devices))


@rule(
    code="ED201",
    name="cpu-only-torch-on-gpu-machine",
    severity=Severity.ERROR,
    summary="a CPU-only torch is installed on a machine with an NVIDIA GPU",
    needs=(TorchFacts, NvmlFacts),
    doc=RuleDoc(
        what="torch.version.cuda is None (or the version ends in +cpu) while NVML or the PCI "
        "bus shows an NVIDIA GPU.",
        why="The classic silent failure: everything runs, on the CPU, tens of times slower. "
        "PyPI's torch is CPU-only on Windows and macOS, and a mirror or a dependency can "
        "swap the CUDA build for the CPU one on Linux.",
        fix="Reinstall torch from the CUDA index that matches the driver (the command is shown, pinned).",
        example="Windows, RTX 4070, `pip install torch` -> torch 2.5.1+cpu.",
    ),
)
def cpu_only_torch_on_gpu_machine(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    nvml = ctx.get(NvmlFacts)
    if not torch.imported or torch.variant != "cpu" or not _nvidia_gpu_seen(nvml):
        return
    assert nvml is not None
    if cpu_torch_is_right(ctx):
        return  # a GPU no CUDA build serves: ED306 says so, the CPU build is right
    gpus = ", ".join(g.name or "GPU" for g in nvml.gpus) or "an NVIDIA GPU"
    fixes = []
    planned = planned_fix(ctx, "Replace it with a CUDA build", want_cuda=True) if nvml.working else None
    if planned is not None:
        fixes.append(planned)
    else:
        # No CUDA build runs on this driver (or there is none): the driver first, then a command that
        # still installs the CUDA build, so the finding always carries one.
        fixes.append(driver_fix(ctx))
        after = after_driver_upgrade(ctx)
        if after is not None:
            fixes.append(after)
    why = {
        "windows": " On Windows, `pip install torch` from PyPI (or a PyPI mirror) always gives "
        "the CPU build; CUDA builds come only from download.pytorch.org.",
        "linux": " On Linux this usually means torch came from the /whl/cpu index, a mirror, or "
        "a dependency that reinstalled it.",
    }.get(ctx.platform.os, "")
    yield Hit(
        title=f"torch {torch.version} is a CPU-only build, but this machine has {gpus}",
        detail="torch.version.cuda is None, so torch.cuda.is_available() is False and every "
        "model runs on the CPU." + why,
        evidence=(f"torch.__version__ = {torch.version}", "torch.version.cuda = None", "nvml.gpus"),
        fixes=tuple(fixes),
    )


@rule(
    code="ED202",
    name="torch-companions-mismatch",
    severity=Severity.ERROR,
    summary="torchvision/torchaudio were built for another torch version or variant",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="The installed torchvision and torchaudio versions against the ones released "
        "with the installed torch (knowledge base; the companion's own Requires-Dist for releases "
        "the knowledge does not pair), and their variants against torch's: a +cuXXX/+cpu label, or "
        "for an unlabelled wheel the variant its index serves by default (PyPI's per release and "
        "platform); for nightly builds (2.x.0.devYYYYMMDD), that all come from the same night. A "
        "companion whose load check failed is ED204's instead.",
        why="Each torchvision/torchaudio release is built against exactly one torch release "
        "and variant; a mismatch fails at import or in custom operators. This judges the pair even "
        "where no load check ran (snapshots, --from).",
        fix="Install the set together, with the same pins and index: exact pins (`==X+cpu`, or "
        "`===X` for PyPI's unlabelled build) so pip cannot keep or pick the other variant; "
        "nightlies all from the same nightly index in one command.",
        example="torch 2.5.1+cu124 with torchvision 0.19.1+cu121; or torch 2.13.0+cpu with "
        "torchvision 0.28.0 from PyPI, which is PyPI's default cu130 build.",
    ),
)
def torch_companions_mismatch(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    torch_version = torch.version or torch.dist_version
    if not torch_version:
        return
    if nightly.involved(torch, torch_version):
        yield from nightly.mismatches(ctx, torch, torch_version)  # nights decide, not releases.json
        return
    for name in companions.COMPANIONS:
        load = torch.companion_load(name)
        if load is not None and load.problem:
            continue  # it failed to load: ED204 reports it, with this judgement
        pair = companions.judge_pair(ctx, torch, name)
        if pair is None or not pair.problems:
            continue
        installed = pair.companion.version
        pinned = f"{name}=={pair.wanted}" if pair.wanted else name
        advice = f"Install {pinned} from the same index as torch."
        if pair.version_problem is None:
            advice = (
                f"Install the {pair.torch.variant} build of {name} {pair.companion.public}, or the "
                f"{pair.companion.variant} torch it was built for."
            )
        yield Hit(
            title=f"{name} {installed} does not belong to torch {torch_version}",
            detail="; ".join(pair.problems) + ". A mismatched pair fails at import ('operator "
            "torchvision::nms does not exist', undefined symbols) or silently pulls another torch "
            f"on the next upgrade. {advice}",
            evidence=(f"torch {torch_version}", f"{name} {installed}"),
            fixes=companions.pair_fixes(ctx, torch, pair),
        )
