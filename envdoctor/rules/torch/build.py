"""The torch build against the machine: CPU-only on a GPU box, CUDA unusable, mismatched companions."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

from envdoctor import knowledge
from envdoctor.install import plan as install
from envdoctor.knowledge import gpu_compute
from envdoctor.knowledge.drivers import DriverKind
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.system import SystemFacts
from envdoctor.probes.toolkit import ToolkitFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import unset_command
from envdoctor.rules.fixes import driver_fix, install_target, plan_fix, planned_fix
from envdoctor.rules.nvml.driver import DriverVerdict, driver_verdict
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


# CUDA's own error numbers as torch's initialisation warning prints them ("Error 803: ...").
_CUDA_ERROR = re.compile(r"Error (\d+): ([^\n(]+)")


@dataclass(frozen=True)
class Cause:
    """One possible cause of CUDA being unavailable: why it is likely here, how to tell, how to fix."""

    why: str
    check: str
    fix: Fix


def _visible_devices_cause(ctx: RuleContext, hidden: str, gpus: int) -> Cause:
    wanted = [p.strip() for p in hidden.split(",")]
    numbers = [int(p) for p in wanted if p.isdigit()]
    if not hidden.strip() or hidden.strip() == "-1":
        why = f"CUDA_VISIBLE_DEVICES={hidden!r} hides every GPU from CUDA"
    elif numbers and max(numbers) >= gpus:
        why = (
            f"CUDA_VISIBLE_DEVICES={hidden!r} names GPU {max(numbers)}, but this machine has {gpus} "
            f"(numbered 0 to {gpus - 1}); CUDA stops at the first index that does not exist"
        )
    else:
        why = f"CUDA_VISIBLE_DEVICES={hidden!r} decides which GPUs torch may see"
    unset = unset_command(ctx.platform.os, None, "CUDA_VISIBLE_DEVICES")
    check = "echo %CUDA_VISIBLE_DEVICES%" if ctx.platform.os == "windows" else 'echo "$CUDA_VISIBLE_DEVICES"'
    return Cause(
        why=why + " (scripts and notebooks often set it: os.environ['CUDA_VISIBLE_DEVICES'] or an export "
        "in the launch script)",
        check=check,
        fix=Fix(
            summary="Unset CUDA_VISIBLE_DEVICES, or set it to GPU indices that exist (0 on a one-GPU "
            "machine), where your job or script sets it",
            commands=(unset,),
        ),
    )


def _warning_causes(ctx: RuleContext, warnings: tuple[str, ...]) -> list[Cause]:
    """Causes named by the CUDA error number in torch's initialisation warning."""
    found: list[Cause] = []
    linux = ctx.platform.os == "linux"
    for text in warnings:
        for match in _CUDA_ERROR.finditer(text):
            number, words = int(match.group(1)), match.group(2).strip()
            if number == 803:
                found.append(
                    Cause(
                        why=f"CUDA says 'Error 803: {words}': the driver's user-space libraries and its "
                        "loaded kernel module differ (a driver update without a reboot), or a CUDA "
                        "compatibility library is loaded in the driver's place",
                        check="cat /proc/driver/nvidia/version; nvidia-smi" if linux else "nvidia-smi",
                        fix=Fix(
                            summary="Reboot after a driver update (or reload the nvidia modules)",
                            commands=(("sudo reboot",) if linux else ()),
                        ),
                    )
                )
            elif number == 804:
                found.append(
                    Cause(
                        why=f"CUDA says 'Error 804: {words}': a CUDA forward-compatibility library "
                        "(cuda-compat) is on the loader path of a GPU that does not support it (GeForce)",
                        check='echo "$LD_LIBRARY_PATH"; ls /usr/local/cuda/compat',
                        fix=Fix(
                            summary="Take the cuda-compat folder (/usr/local/cuda/compat) off "
                            "LD_LIBRARY_PATH, or remove the cuda-compat package"
                        ),
                    )
                )
            elif number == 34:
                found.append(
                    Cause(
                        why=f"CUDA says 'Error 34: {words}': a toolkit's stub libcuda (lib64/stubs) is "
                        "loaded instead of the driver's",
                        check='echo "$LD_LIBRARY_PATH"',
                        fix=Fix(summary="Take the toolkit's lib64/stubs folder off LD_LIBRARY_PATH"),
                    )
                )
            elif number in (100, 101):
                continue  # no device / invalid ordinal: the visible-devices and container causes cover it
    return found


def _ranked_causes(
    ctx: RuleContext, torch: TorchFacts, nvml: NvmlFacts, verdict: DriverVerdict | None
) -> list[Cause]:
    """The usual causes, most likely first given what this machine shows."""
    causes: list[Cause] = []
    linux = ctx.platform.os == "linux"
    hidden = torch.cuda_visible_devices
    if hidden is not None:
        causes.append(_visible_devices_cause(ctx, hidden, len(nvml.gpus)))
    causes += _warning_causes(ctx, torch.warnings)
    if verdict is not None and verdict.kind == DriverKind.COMPAT:
        native = verdict.native
        causes.append(
            Cause(
                why=f"driver {verdict.driver} is older than CUDA {verdict.torch_cuda}'s own minimum"
                + (f" ({native})" if native else "")
                + " and runs it only through minor-version compatibility; where that does not hold "
                "(Windows drivers, PTX, newer APIs) CUDA does not start",
                check="nvidia-smi",
                fix=driver_fix(ctx, str(native) if native else None),
            )
        )
    system = ctx.get(SystemFacts)
    if system is not None and system.container:
        causes.append(
            Cause(
                why=f"this runs in a {system.container} container, which sees GPUs only when started "
                "with them (docker run --gpus all, or the runtime's device request)",
                check="ls -l /dev/nvidia*",
                fix=Fix(
                    summary="Start the container with GPU access: docker run --gpus all ... (the NVIDIA "
                    "Container Toolkit installed on the host)"
                ),
            )
        )
    toolkit = ctx.get(ToolkitFacts)
    foreign = [c for c in toolkit.loader_path_libraries if c.family == "cudart"] if toolkit else []
    if linux and toolkit is not None and toolkit.loader_path_libraries:
        causes.append(
            Cause(
                why="LD_LIBRARY_PATH puts other CUDA libraries before torch's own"
                + f" ({(foreign or toolkit.loader_path_libraries)[0].family} in "
                f"{(foreign or toolkit.loader_path_libraries)[0].directory})",
                check='env -u LD_LIBRARY_PATH python -c "import torch; print(torch.cuda.is_available())"',
                fix=Fix(
                    summary="Run without the foreign CUDA folders on LD_LIBRARY_PATH (remove them "
                    "where it is set, e.g. ~/.bashrc or a module file)"
                ),
            )
        )
    causes.append(
        Cause(
            why="the driver installation itself is broken or half-updated although nvidia-smi answers",
            check='python -c "import torch; torch.cuda.init()"',
            fix=driver_fix(ctx),
        )
    )
    return causes


@rule(
    code="ED203",
    name="cuda-build-but-cuda-unavailable",
    severity=Severity.ERROR,
    summary="a CUDA build of torch cannot use the GPU although the driver looks fine",
    needs=(TorchFacts, NvmlFacts),
    # A retired GPU; or the device and module states of the nvml area (WSL, uvm, exclusive, MIG).
    # The causes other rules name exactly: a GPU too old, WSL and device state, a CUDA_VISIBLE_DEVICES
    # hiding the GPU, a container's CUDA (804, compat libraries, no libcuda, access revoked), a
    # Slurm job without a GPU, WSL's libcuda and kernel, NVSwitch's Fabric Manager.
    consequence_of=(
        "ED305",
        "ED124",
        "ED125",
        "ED126",
        "ED127",
        "ED128",
        "ED135",
        "ED160",
        "ED170",
        "ED171",
        "ED172",
        "ED174",
        "ED178",
        "ED179",
        "ED180",
        "ED181",
    ),
    doc=RuleDoc(
        what="A CUDA build, NVML sees GPUs, the driver is not too old, and yet torch.cuda.is_available() is "
        "False; the finding lists the usual causes, most likely first given the facts (CUDA_VISIBLE_DEVICES, "
        "the CUDA error torch's warning names, a driver running the build only through minor-version "
        "compatibility, a container, LD_LIBRARY_PATH, a broken driver), each with the command that tells "
        "it apart and its fix.",
        why="The symptom is one, the causes are many, and the usual advice (reinstall torch) fixes none of "
        "them; torch's own warning and the environment usually say which it is.",
        fix="Run the command of the first cause listed; if it shows that cause, apply its fix, else go on "
        "to the next.",
        example="CUDA_VISIBLE_DEVICES=2 set in a training script on a machine with one GPU: 'RuntimeError: "
        "No CUDA GPUs are available'.",
    ),
)
def cuda_build_but_cuda_unavailable(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    nvml = ctx.get(NvmlFacts)
    if not torch.imported or not torch.cuda or torch.cuda_available is not False:
        return
    if nvml is None or not nvml.working or not nvml.gpus:
        return  # no GPU (ED104) or a broken driver (ED103) explains it already
    verdict = driver_verdict(ctx)
    if verdict is not None and verdict.kind == DriverKind.TOO_OLD:
        return  # ED101 explains it
    said = "; ".join(w.splitlines()[0] for w in torch.warnings) or "no warning was printed"
    evidence = ["torch.cuda_available = false", "nvml.gpus", *(w[:200] for w in torch.warnings)]
    if torch.cuda_visible_devices is not None:
        evidence.append(f"CUDA_VISIBLE_DEVICES={torch.cuda_visible_devices!r}")
    causes = _ranked_causes(ctx, torch, nvml, verdict)
    listed = " ".join(
        f"({number}) {cause.why}; tell: `{cause.check}`." for number, cause in enumerate(causes, 1)
    )
    yield Hit(
        title=f"torch {torch.version} is a CUDA build but torch.cuda.is_available() is False",
        detail=f"NVML sees {len(nvml.gpus)} GPU(s) and the driver is not too old for CUDA {torch.cuda}, yet "
        f"torch cannot initialise CUDA. torch said: {said}. Likely causes, most likely first: {listed}",
        evidence=tuple(evidence),
        fixes=tuple(
            replace(cause.fix, summary=f"If ({number}): {cause.fix.summary}")
            for number, cause in enumerate(causes, 1)
        ),
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
