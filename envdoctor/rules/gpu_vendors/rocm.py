"""AMD GPUs: a ROCm build without the GPU's gfx target (ED150), HSA_OVERRIDE_GFX_VERSION from
another GPU family (ED151), a CPU or CUDA torch where only an AMD GPU is (ED152), a ROCm build
that cannot reach the GPU (ED155, WSL's bundled runtime included) and an APU's integrated GPU that
ROCm counts beside the card (ED156)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from envdoctor.knowledge import gpu_vendors as known
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.gpu_vendors import (
    HIP_VISIBLE,
    KFD_DEVICE,
    OVERRIDE_VARIABLE,
    ROCR_VISIBLE,
    SYSTEM_HSA_RUNTIME,
    GpuVendorFacts,
    VendorGpu,
)
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import set_command, unset_command
from envdoctor.rules.fixes import GET_STARTED, planned_fix
from envdoctor.rules.gpu_vendors.common import (
    build_arch,
    gpus_words,
    known_gfx,
    nvidia_here,
    vendor_fix,
    vendor_plan,
)

ROCM_INSTALL = "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/"
ROCM_WSL = "https://rocm.docs.amd.com/projects/radeon/en/latest/docs/install/wsl/install-pytorch.html"


def _family_key(gfx: str) -> str:
    family = known.gfx_family(gfx)
    return family.prefix if family is not None else gfx


def _fits(gfx: str, target: str) -> bool:
    """Whether the runtime may run `gfx` as `target`: the same ISA family, or the stand-in the
    family's own entry names (gfx90c APUs run gfx900 code objects, though gfx9 is no one family)."""
    family = known.gfx_family(gfx)
    return _family_key(target) == _family_key(gfx) or (family is not None and family.stand_in == target)


def _override_target(facts: GpuVendorFacts) -> str | None:
    return known.gfx_from_override(facts.hsa_override) if facts.hsa_override is not None else None


def _effective(gpu: VendorGpu, override: str | None) -> str | None:
    """The target the ROCm runtime reports for `gpu`: the override where it stays in the family."""
    gfx = gpu.gfx_target
    if gfx is not None and override is not None and _fits(gfx, override):
        return override
    return gfx


def _override_fix(ctx: RuleContext, gfx: str, stand_in: str, value: str) -> Fix:
    # No "Or" here: the console puts "Or:" before every fix after the first.
    return Fix(
        summary=f"Let the {gfx} run the build's {stand_in} kernels: set "
        f"{OVERRIDE_VARIABLE}={value} "
        "where the job starts (unofficial: AMD does not support it, and some kernels may still fail)",
        commands=(set_command(ctx.platform.os, None, OVERRIDE_VARIABLE, value),),
    )


@rule(
    code="ED150",
    name="rocm-build-lacks-gfx-target",
    severity=Severity.ERROR,
    summary="the ROCm build of torch has no kernels for the AMD GPU's gfx target",
    needs=(TorchFacts, GpuVendorFacts),
    consequence_of=("ED151",),
    doc=RuleDoc(
        what="Each AMD GPU's gfx target (sysfs KFD topology, or rocminfo) against the gfx targets the "
        "installed ROCm build carries (torch.cuda.get_arch_list(), else PyTorch's build lists), "
        "counting HSA_OVERRIDE_GFX_VERSION when it stays within the GPU's family.",
        why="torch imports and may even report the GPU, but the first kernel fails with 'HIP error: "
        "invalid device function': PyTorch's ROCm wheels carry kernels for a short list of targets "
        "only (consumer cards such as gfx1031 or gfx1010 are not on it).",
        fix="Install a ROCm build whose list includes the GPU (the command is shown); for a card of a "
        "served family, HSA_OVERRIDE_GFX_VERSION (e.g. 10.3.0 for RDNA 2) is the unofficial "
        "workaround; otherwise build torch with PYTORCH_ROCM_ARCH set, or use the CPU build.",
        example="Radeon RX 6700 XT (gfx1031) with torch 2.5.1+rocm6.2, whose list stops at gfx1030 "
        "and gfx1100: 'RuntimeError: HIP error: invalid device function'.",
    ),
)
def rocm_build_lacks_gfx_target(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    facts = ctx.need(GpuVendorFacts)
    if not torch.imported or not torch.hip:
        return
    arch = build_arch(torch)
    if arch is None:
        return
    override = _override_target(facts)
    missing = [g for g in known_gfx(facts) if _effective(g, override) not in arch]
    if not missing:
        return
    gfx = tuple(dict.fromkeys(g.gfx_target for g in missing if g.gfx_target))
    fixes: list[Fix] = []
    plan = vendor_plan(ctx, gfx)
    native = plan.possible and not any(OVERRIDE_VARIABLE in w for w in plan.warnings)
    if native and plan.variant != torch.variant:
        found = vendor_fix(ctx, "Install a ROCm build that includes it", plan)
        if found is not None:
            fixes.append(found)
    for target in gfx:
        family = known.gfx_family(target)
        if family is not None and family.stand_in in arch and family.override and override is None:
            fixes.append(_override_fix(ctx, target, family.stand_in, family.override))
    if not fixes:
        fixes.append(
            Fix(
                summary=f"No PyTorch ROCm wheel includes {', '.join(gfx)}: build torch from source with "
                f"PYTORCH_ROCM_ARCH={';'.join(gfx)}, or use the CPU build",
                link="https://github.com/pytorch/pytorch#amd-rocm-support",
            )
        )
        cpu = planned_fix(ctx, "Install the CPU build instead", want_cuda=False, torch=torch.public_version)
        if cpu is not None:
            fixes.append(cpu)
    listed = ", ".join(arch)
    source = "its arch list" if any(known.is_gfx(a) for a in torch.arch_list) else "PyTorch's build list"
    said = f" ({OVERRIDE_VARIABLE}={facts.hsa_override} is set)" if facts.hsa_override is not None else ""
    yield Hit(
        title=f"torch {torch.version} has no kernels for {gpus_words(tuple(missing))}",
        detail=f"This ROCm {torch.hip} build carries kernels for {listed} ({source}); {', '.join(gfx)} "
        f"is not among them{said}. torch may still report the GPU, but the first kernel fails with "
        "'HIP error: invalid device function'.",
        evidence=(
            f"torch.version.hip = {torch.hip}",
            f"arch list: {listed}",
            *(f"{g.card}: {g.device_id} {g.gfx_target}" for g in missing),
        ),
        fixes=tuple(fixes),
    )


@rule(
    code="ED151",
    name="hsa-override-wrong-family",
    severity=Severity.ERROR,
    summary="HSA_OVERRIDE_GFX_VERSION names a target of another GPU family, or is malformed",
    needs=(GpuVendorFacts,),
    doc=RuleDoc(
        what="HSA_OVERRIDE_GFX_VERSION (major.minor.stepping, e.g. 10.3.0 = gfx1030) against each AMD "
        "GPU's own gfx target: the override must stay within the GPU's ISA family.",
        why="The variable makes the ROCm runtime load code objects for the named target; another "
        "family's code does not run on the GPU: memory access faults, segfaults or GPU resets. "
        "It is often left in a shell profile from an older card.",
        fix="Unset it (a GPU the build supports needs no override), or set the value of the GPU's "
        "own family (10.3.0 for RDNA 2, 11.0.0 for RDNA 3).",
        example="HSA_OVERRIDE_GFX_VERSION=10.3.0 left set on a machine with an Instinct MI210 "
        "(gfx90a): 'Memory access fault by GPU node-2 on address (nil)'.",
    ),
)
def hsa_override_wrong_family(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(GpuVendorFacts)
    torch = ctx.get(TorchFacts)
    value = facts.hsa_override
    gpus = known_gfx(facts)
    if value is None or not gpus:
        return
    if torch is not None and torch.imported and not torch.hip:
        return  # only ROCm programs read it; a CPU or CUDA torch does not care
    target = known.gfx_from_override(value)
    if target is None:
        wrong = gpus
        why = (
            f"{OVERRIDE_VARIABLE} is set but empty, which the runtime reads as gfx000"
            if not value.strip()
            else f"{OVERRIDE_VARIABLE}={value!r} is not a version such as 10.3.0 (major.minor.stepping)"
        )
    else:
        wrong = tuple(g for g in gpus if not _fits(g.gfx_target or "", target))
        why = f"{OVERRIDE_VARIABLE}={value} makes the runtime treat every AMD GPU as {target}"
    if not wrong:
        return
    fixes = [
        Fix(
            summary=f"Unset {OVERRIDE_VARIABLE} where the job starts and in your shell profile",
            commands=(unset_command(ctx.platform.os, None, OVERRIDE_VARIABLE),),
        )
    ]
    arch = build_arch(torch) if torch is not None and torch.imported and torch.hip else None
    for gpu in wrong:
        family = known.gfx_family(gpu.gfx_target or "")
        own_missing = arch is not None and gpu.gfx_target not in arch
        if family is not None and family.override and family.stand_in and own_missing and len(wrong) == 1:
            fixes.append(
                Fix(
                    summary=f"Or, as the {gpu.gfx_target} is not in this build, set the value of its own "
                    f"family ({family.name}): {family.override}",
                    commands=(set_command(ctx.platform.os, None, OVERRIDE_VARIABLE, family.override),),
                )
            )
    names = ", ".join(f"{g.label}" for g in wrong)
    shown = f"{OVERRIDE_VARIABLE}={value}" if value.strip() else f"An empty {OVERRIDE_VARIABLE}"
    yield Hit(
        title=f"{shown} does not fit {names}",
        detail=f"{why}; code built for another GPU family does not run on {names}: expect memory access "
        "faults, segfaults or 'HIP error: invalid device function'. AMD treats the variable as a "
        "debugging aid, not a supported setting.",
        evidence=(f"{OVERRIDE_VARIABLE}={value}", *(f"{g.card}: {g.gfx_target}" for g in wrong)),
        fixes=tuple(fixes),
    )


@rule(
    code="ED152",
    name="amd-gpu-without-rocm-torch",
    severity=Severity.ERROR,
    summary="a CPU or CUDA torch is installed where the GPU is an AMD one",
    needs=(TorchFacts, GpuVendorFacts),
    doc=RuleDoc(
        what="torch is a CPU or CUDA build, there is no NVIDIA GPU, and an AMD GPU is there that a "
        "PyTorch ROCm build serves (its gfx target against the builds' lists).",
        why="CUDA builds run only on NVIDIA GPUs and CPU builds on none: torch.cuda.is_available() "
        "is False and everything runs on the CPU. ROCm builds use the same torch.cuda API, so no "
        "code changes are needed.",
        fix="Install the ROCm build for the GPU from PyTorch's rocmX.Y index (the command is shown).",
        example="Radeon RX 6800 (gfx1030) with torch 2.0.1+cpu: 'torch.cuda.is_available() returns False'.",
    ),
)
def amd_gpu_without_rocm_torch(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    facts = ctx.need(GpuVendorFacts)
    variant = torch.variant or ""
    if not torch.imported or torch.hip or not (variant == "cpu" or variant.startswith("cu")):
        return
    gpus = known_gfx(facts)
    if not gpus or nvidia_here(ctx) or ctx.platform.os != "linux":
        return
    plan = vendor_plan(ctx, tuple(dict.fromkeys(g.gfx_target for g in gpus if g.gfx_target)))
    if not plan.possible:
        if torch.cuda:  # a CUDA build serves no AMD GPU: the CPU build is the one that fits
            yield _cuda_without_rocm_target(ctx, torch, gpus)
        return  # a GPU no ROCm build serves (an old APU, RDNA 1): the CPU build is right
    overridden = any(OVERRIDE_VARIABLE in w for w in plan.warnings)
    if overridden and all(g.integrated for g in gpus):
        return  # a small integrated GPU through an unofficial override: not worth a finding
    fixes: list[Fix] = []
    found = vendor_fix(ctx, "Replace it with the ROCm build", plan)
    if found is not None:
        fixes.append(found)
    if overridden:
        for gpu in gpus:
            family = known.gfx_family(gpu.gfx_target or "")
            if family is not None and family.override and family.stand_in and facts.hsa_override is None:
                fixes.append(_override_fix(ctx, gpu.gfx_target or "", family.stand_in, family.override))
                break
    kind = f"CUDA {torch.cuda}" if torch.cuda else "CPU-only"
    detail = (
        f"torch {torch.version} is a {kind} build; CUDA builds serve NVIDIA GPUs only and CPU builds "
        "none, so torch.cuda.is_available() is False and every model runs on the CPU. ROCm builds "
        "serve AMD GPUs through the same torch.cuda API."
    )
    if facts.kfd_device is False:
        detail += f" {KFD_DEVICE} is missing: the ROCm build also needs the amdgpu driver's compute device."
    yield Hit(
        title=f"torch {torch.version} is a {kind} build, but this machine's GPU is an AMD {gpus_words(gpus)}",
        detail=detail,
        evidence=(
            f"torch.__version__ = {torch.version}",
            "torch.version.hip = None",
            *(f"{g.card}: {g.device_id} {g.gfx_target}" for g in gpus),
        ),
        fixes=tuple(fixes),
    )


def _cuda_without_rocm_target(ctx: RuleContext, torch: TorchFacts, gpus: tuple[VendorGpu, ...]) -> Hit:
    cpu = planned_fix(ctx, "Install the CPU build instead", want_cuda=False, torch=torch.public_version)
    cpu = cpu or planned_fix(ctx, "Install the CPU build instead", want_cuda=False)
    fixes = [cpu] if cpu is not None else [Fix(summary="Install torch's CPU build", link=GET_STARTED)]
    return Hit(
        title=f"torch {torch.version} is a CUDA {torch.cuda} build, but this machine's GPU is "
        f"{gpus_words(gpus)} (AMD)",
        detail=f"torch {torch.version} serves NVIDIA GPUs only, and no PyTorch ROCm build serves "
        f"{gpus_words(gpus)}: CUDA calls fail ('Found no NVIDIA driver', 'CUDA driver version is "
        "insufficient') and the CPU build is the one that fits this machine.",
        evidence=(
            f"torch.__version__ = {torch.version}",
            *(f"{g.card}: {g.device_id} {g.gfx_target}" for g in gpus),
        ),
        fixes=tuple(fixes),
    )


@rule(
    code="ED155",
    name="rocm-build-but-gpu-unavailable",
    severity=Severity.ERROR,
    summary="a ROCm build of torch cannot use the AMD GPU that is there",
    needs=(TorchFacts, GpuVendorFacts),
    consequence_of=("ED157",),
    doc=RuleDoc(
        what="A ROCm build, an AMD GPU in sysfs (or WSL 2's GPU device), and torch.cuda.is_available() "
        "False: whether /dev/kfd is there, the variables that hide devices, and on WSL the HSA runtime "
        "torch carries in its lib folder.",
        why="Without the amdgpu driver's compute device (/dev/kfd, passed into containers with "
        "--device) or access to it (the render and video groups), or with the GPUs hidden by "
        "HIP_VISIBLE_DEVICES/CUDA_VISIBLE_DEVICES, ROCm finds no GPU and torch runs on the CPU. On "
        "WSL, PyTorch's own ROCm wheels bundle a libhsa-runtime64 that cannot reach WSL's GPU: only "
        "AMD's WSL wheels with the system's runtime can (hipErrorNoDevice).",
        fix="Pass /dev/kfd and /dev/dri into the container, add the user to the render and video "
        "groups, or unset the variable that hides the GPUs; on WSL, install AMD's WSL wheels and "
        "replace the bundled libhsa-runtime64 with /opt/rocm's.",
        example="torch 2.6.0+rocm6.2 in `docker run` without --device=/dev/kfd: "
        "torch.cuda.is_available() is False.",
    ),
)
def rocm_build_but_gpu_unavailable(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    facts = ctx.need(GpuVendorFacts)
    if not torch.imported or not torch.hip or torch.cuda_available is not False:
        return
    if not facts.amd:
        if facts.torch_hsa_runtime is not None:  # WSL 2: no sysfs GPU, the GPU is behind /dev/dxg
            yield _wsl_hit(ctx, torch, facts)
        return
    fixes: list[Fix] = []
    hidden = torch.cuda_visible_devices
    if facts.kfd_device is False:
        fixes.append(
            Fix(
                summary=f"{KFD_DEVICE} is missing: in a container, pass the GPU in (docker/podman run "
                "--device=/dev/kfd --device=/dev/dri --group-add video; Apptainer --bind=/dev/kfd,/dev/dri); "
                "on the host, install the amdgpu driver",
                commands=("docker run --device=/dev/kfd --device=/dev/dri --group-add video IMAGE",),
                link=ROCM_INSTALL,
            )
        )
    for name, value in (
        ("CUDA_VISIBLE_DEVICES", hidden),
        (HIP_VISIBLE, facts.hip_visible_devices),
        (ROCR_VISIBLE, facts.rocr_visible_devices),
    ):
        if value is not None:
            fixes.append(
                Fix(
                    summary=f"{name}={value!r} hides the GPUs from torch; unset it where the job starts",
                    commands=(unset_command(ctx.platform.os, None, name),),
                )
            )
    if not fixes:
        fixes.append(
            Fix(
                summary="Let your user open the GPU: add it to the render and video groups, then log "
                "in again",
                commands=('sudo usermod -aG render,video "$USER"',),
                link=ROCM_INSTALL,
            )
        )
    said = "; ".join(w.splitlines()[0].rstrip(".") for w in torch.warnings if w.strip())
    yield Hit(
        title=f"torch {torch.version} is a ROCm build but cannot use the AMD GPU",
        detail=f"sysfs shows {gpus_words(facts.amd)}, yet torch.cuda.is_available() is False"
        + (
            f"; torch said: {said}."
            if said
            else ": ROCm found no GPU it may use (RuntimeError: No HIP GPUs are available)."
        ),
        evidence=(
            f"torch.version.hip = {torch.hip}",
            "torch.cuda_available = false",
            f"{KFD_DEVICE}: {'present' if facts.kfd_device else 'missing'}",
        ),
        fixes=tuple(fixes),
    )


def _torch_lib(torch: TorchFacts) -> str:
    """torch's lib folder, from where torch/__init__.py was found."""
    folder = (
        posixpath.dirname(torch.location or "")
        or "$(python -c 'import torch, os; print(os.path.dirname(torch.__file__))')"
    )
    return f"{folder}/lib"


def _wsl_hit(ctx: RuleContext, torch: TorchFacts, facts: GpuVendorFacts) -> Hit:
    bundled = facts.torch_hsa_runtime or ()
    lib = _torch_lib(torch)
    steps: list[str] = []
    words = []
    if not facts.system_hsa_runtime:
        words.append(
            "install AMD's ROCm for WSL (the Adrenalin driver on Windows, then amdgpu-install in WSL)"
        )
        steps.append("sudo amdgpu-install -y --usecase=wsl,rocm --no-dkms")
    words.append(
        "install AMD's WSL builds of torch (repo.radeon.com, as AMD's WSL guide lists them for your ROCm "
        "release) in place of PyTorch's"
    )
    if bundled:
        words.append(f"then replace the bundled {', '.join(bundled)} in torch's lib folder with /opt/rocm's")
        steps += [f"rm {lib}/libhsa-runtime64.so*", f"cp -L {SYSTEM_HSA_RUNTIME} {lib}/libhsa-runtime64.so"]
    text = "; ".join(words)
    fixes = (Fix(summary=text[:1].upper() + text[1:], commands=tuple(steps), link=ROCM_WSL),)
    detail = (
        f"On WSL 2 the AMD GPU is reached through /dev/dxg and AMD's WSL HSA runtime; torch {torch.version} "
        "finds no GPU (hipErrorNoDevice)."
    )
    if bundled:
        detail += (
            f" Its lib folder carries its own {', '.join(bundled)}, as PyTorch's ROCm wheels do, and that "
            "runtime knows nothing of WSL."
        )
    if not facts.system_hsa_runtime:
        detail += f" {SYSTEM_HSA_RUNTIME} is missing: AMD's ROCm for WSL is not installed."
    return Hit(
        title=f"torch {torch.version} is a ROCm build but finds no GPU on WSL",
        detail=detail,
        evidence=(
            f"torch.version.hip = {torch.hip}",
            "torch.cuda_available = false",
            f"torch/lib: {', '.join(bundled) or 'no bundled libhsa-runtime64'}",
            f"{SYSTEM_HSA_RUNTIME}: {'present' if facts.system_hsa_runtime else 'missing'}",
        ),
        fixes=fixes,
    )


@rule(
    code="ED156",
    name="rocm-sees-integrated-gpu",
    severity=Severity.WARNING,
    summary="ROCm counts an APU's integrated GPU beside the AMD card, and nothing hides it",
    needs=(TorchFacts, GpuVendorFacts),
    doc=RuleDoc(
        what="A ROCm build, a discrete AMD GPU and an integrated one (a Ryzen APU's graphics: the KFD "
        "topology counts CPU cores on its node) both in the compute topology, while "
        "HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES are unset and torch does "
        "not see the card alone.",
        why="ROCm enumerates every KFD GPU node, the CPU's display graphics included: work lands on the "
        "integrated GPU or HIP's initialisation fails ('shared object initialization failed', "
        "segfaults, 'module is not initialized') though the card alone works.",
        fix="Hide the integrated GPU: export HIP_VISIBLE_DEVICES with the card's index before the "
        "program starts (in the shell, not inside the script), or disable the iGPU in the BIOS.",
        example="A Radeon RX 9070 XT beside a Ryzen 9000's integrated graphics: training fails until "
        "`export HIP_VISIBLE_DEVICES=0`.",
    ),
)
def rocm_sees_integrated_gpu(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    facts = ctx.need(GpuVendorFacts)
    if not torch.imported or not torch.hip:
        return
    cards = tuple(g for g in facts.amd if g.integrated is False and g.gfx_target)
    apus = tuple(g for g in facts.amd if g.integrated and g.gfx_target)
    if not cards or not apus:
        return
    hidden = (torch.cuda_visible_devices, facts.hip_visible_devices, facts.rocr_visible_devices)
    if any(v is not None for v in hidden):
        return  # somebody chose the devices: ED155 judges a choice that hides them all
    if torch.device_count is not None and torch.device_count == len(cards):
        return  # torch sees the cards only: this ROCm leaves the integrated GPU out
    indices = [g.hip_index for g in cards]
    known_order = all(i is not None for i in indices)
    value = ",".join(str(i) for i in indices) if known_order else "0"
    check = "rocm-smi --showproductname"
    fixes = [
        Fix(
            summary=f"Hide the integrated GPU: set {HIP_VISIBLE}={value} "
            + (
                "(the card's place in ROCm's order) "
                if known_order
                else f"(check the card's index with `{check}`) "
            )
            + "in the shell before the program starts (set inside the script, it comes too late)",
            commands=(set_command(ctx.platform.os, None, HIP_VISIBLE, value),),
        ),
        Fix(summary="Disable the integrated graphics in the BIOS/UEFI setup (the card drives the display)"),
    ]
    count = (
        f"torch counts {torch.device_count} GPUs" if torch.device_count is not None else "ROCm counts both"
    )
    yield Hit(
        title=f"ROCm sees the integrated {gpus_words(apus)} beside the {gpus_words(cards)}",
        detail=f"The CPU's integrated GPU is in ROCm's compute topology next to the card ({count}): work "
        "placed on it fails or crashes, and HIP's initialisation may fail for both ('shared object "
        "initialization failed', segmentation faults), though the card alone works.",
        evidence=(
            *(f"{g.card}: {g.gfx_target} discrete, ROCm index {g.hip_index}" for g in cards),
            *(f"{g.card}: {g.gfx_target} integrated, ROCm index {g.hip_index}" for g in apus),
            f"{HIP_VISIBLE}, {ROCR_VISIBLE}, CUDA_VISIBLE_DEVICES: unset",
        ),
        fixes=tuple(fixes),
    )
