"""The planner's AMD and Intel branch: which rocmX.Y build serves the GPUs' gfx targets, and whether
a release has an xpu build. Pure: it reads only the knowledge base; plan.py asks it when no NVIDIA
GPU asks for CUDA and an AMD or Intel GPU is there (or given, --gpu gfx1100 / --gpu xpu)."""

from __future__ import annotations

from envdoctor.knowledge import Release, parse_version
from envdoctor.knowledge import gpu_vendors as known
from envdoctor.util.records import record

ROCM_PLATFORM = "linux-x86_64"


@record
class VendorChoice:
    variant: str
    why: str
    warnings: tuple[str, ...] = ()


def _rocm_key(variant: str) -> tuple[int, ...]:
    version = parse_version(known.rocm_version(variant))
    return version.release if version is not None else (0,)


def rocm_variants(release: Release, platform: str) -> list[str]:
    """The release's rocmX.Y builds for `platform`, newest ROCm first."""
    builds = release.builds(platform)
    if builds is None:
        return []
    return sorted((v for v in builds.variants if v.startswith("rocm")), key=_rocm_key, reverse=True)


@record
class GfxFit:
    """How one build's arch list serves one gfx target."""

    native: bool  # the target is in the list
    stand_in: str | None = None  # else: the family member in the list it may pose as
    override: str | None = None  # ... with HSA_OVERRIDE_GFX_VERSION set to this


def gfx_fit(arch: tuple[str, ...], gfx: str) -> GfxFit | None:
    """None when the build can serve the GPU neither natively nor through an override."""
    if gfx in arch:
        return GfxFit(True)
    family = known.gfx_family(gfx)
    if family is not None and family.stand_in in arch and family.override:
        return GfxFit(False, family.stand_in, family.override)
    return None


def override_warning(gfx: str, fit: GfxFit, variant: str) -> str:
    return (
        f"{known.gfx_words(gfx)} is not in {variant}'s arch list: it runs {fit.stand_in} kernels only "
        f"with HSA_OVERRIDE_GFX_VERSION={fit.override} set (an unofficial workaround AMD does not "
        "support; some kernels may still fail)"
    )


def choose_rocm(release: Release, platform: str, gfx_targets: tuple[str, ...]) -> VendorChoice | str:
    """The newest ROCm build whose arch list holds every gfx target; else the newest that serves
    them through HSA_OVERRIDE_GFX_VERSION; else why none does."""
    if platform != ROCM_PLATFORM:
        return f"torch {release.torch}: ROCm builds exist for Linux x86_64 only"
    variants = rocm_variants(release, platform)
    if not variants:
        return f"torch {release.torch} has no ROCm build for {platform}"
    if not gfx_targets:  # an AMD GPU whose gfx target is unknown (an unknown name): the newest build
        return VendorChoice(
            variants[0],
            f"AMD GPU of unknown gfx target -> the newest ROCm build, {variants[0]}",
            (f"whether {variants[0]}'s arch list includes this AMD GPU is not checked",),
        )
    fallback: VendorChoice | None = None
    unknown: list[str] = []
    for variant in variants:
        listed = known.rocm_arch_list(variant)
        if listed is None:
            unknown.append(variant)
            continue
        fits = {gfx: gfx_fit(listed.arch, gfx) for gfx in gfx_targets}
        if any(fit is None for fit in fits.values()):
            continue
        names = ", ".join(known.gfx_words(g) for g in gfx_targets)
        if all(fit is not None and fit.native for fit in fits.values()):
            return VendorChoice(variant, f"AMD GPU {names} is in {variant}'s arch list")
        if fallback is None:
            warnings = tuple(
                override_warning(g, fit, variant)
                for g, fit in fits.items()
                if fit is not None and not fit.native
            )
            fallback = VendorChoice(variant, f"AMD GPU {names}: no ROCm build includes it", warnings)
    if fallback is not None:
        return fallback
    if unknown and len(unknown) == len(variants):
        return VendorChoice(
            variants[0],
            f"AMD GPU -> the newest ROCm build, {variants[0]}",
            (
                f"envdoctor has no arch list for {variants[0]}: whether it includes "
                f"{', '.join(gfx_targets)} is not checked",
            ),
        )
    gpus = ", ".join(known.gfx_words(g) for g in gfx_targets)
    return f"torch {release.torch}: no ROCm build includes {gpus}, nor a GPU of its family"


def choose_xpu(release: Release, platform: str) -> VendorChoice | str:
    if not known.has_xpu_build(release.torch, platform):
        return f"torch {release.torch} has no xpu build for {platform}"
    return VendorChoice("xpu", "an Intel GPU torch.xpu serves -> the xpu build")


def rocm_warnings(release: Release, variant: str, gfx_targets: tuple[str, ...]) -> tuple[str, ...]:
    """What an explicitly asked rocm build means for the given GPUs."""
    listed = known.rocm_arch_list(variant)
    if listed is None:
        return (f"envdoctor has no arch list for {variant}: the AMD GPUs are not checked",)
    warnings = []
    for gfx in gfx_targets:
        fit = gfx_fit(listed.arch, gfx)
        if fit is None:
            warnings.append(
                f"{known.gfx_words(gfx)} is not in {variant}'s arch list for torch {release.torch}: GPU "
                "kernels will fail with 'HIP error: invalid device function'"
            )
        elif not fit.native:
            warnings.append(override_warning(gfx, fit, variant))
    return tuple(warnings)
