"""Other frameworks in the same process as torch, with CUDA libraries of their own by torch's file
names: copies of other versions that serve torch when that framework loads first (ED613), and a
framework built for another CUDA major than the libraries this machine has (ED614).

Neither shows when torch is imported alone, as envdoctor's check does: the facts are the installed
frameworks (their metadata, read without importing them) and the DLL copies they load.
"""

from __future__ import annotations

import ntpath
from collections.abc import Iterator
from dataclasses import replace

from envdoctor import knowledge as releases
from envdoctor.install import plan as install
from envdoctor.knowledge import variant_cuda
from envdoctor.knowledge import windows as knowledge
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.probes.windows import DllFile, WindowsFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import install_target, plan_fix
from envdoctor.rules.windows.dlls import torch_version
from envdoctor.shell import quote

ORT_PRELOAD = "https://github.com/microsoft/onnxruntime/issues/24266"


def installed_frameworks(facts: WindowsFacts) -> list[tuple[knowledge.Framework, str]]:
    """The frameworks of windows.json that are installed here, with their versions."""
    table = knowledge.frameworks()
    found = []
    for dist in facts.dll_load.distributions:
        framework = table.get(dist.name)
        if framework is not None:
            found.append((framework, dist.version))
    return found


def _foreign_copies(facts: WindowsFacts) -> list[tuple[DllFile, DllFile]]:
    """(their copy, torch's) for CUDA DLLs named like one in torch\\lib, of another version, that
    another framework can load: PATH folders (the CUDA toolkit), the nvidia-* wheels and NVIDIA's
    cuDNN install folders."""
    torch_dlls = {f.name: f for f in facts.torch_cuda_dlls}
    found = []
    for theirs in (*facts.package_cuda_dlls, *facts.cuda_dlls_on_path):
        own = torch_dlls.get(theirs.name)
        if own is None or not theirs.version or not own.version or theirs.version == own.version:
            continue
        found.append((theirs, own))
    return found


def _what_for(framework: knowledge.Framework) -> str:
    if framework.dist == "onnxruntime-gpu":
        return (
            "call onnxruntime.preload_dlls() only after `import torch`, without a directory of another "
            "cuDNN (onnxruntime 1.21 and later then reuse the CUDA 12 torch's DLLs)"
        )
    if framework.dist == "tensorrt":
        return "import torch before tensorrt (NVIDIA/TensorRT#1693)"
    return f"import torch before {framework.label}"


@rule(
    code="ED613",
    name="other-framework-cuda-dlls-load-first",
    severity=Severity.WARNING,
    summary="another framework loads CUDA/cuDNN DLLs of other versions under torch's file names",
    needs=(WindowsFacts, TorchFacts),
    doc=RuleDoc(
        what="The frameworks installed beside a CUDA torch (onnxruntime-gpu, TensorRT, PaddlePaddle, "
        "CTranslate2, TensorFlow: their metadata) and the CUDA DLLs they load (the nvidia-* wheels' "
        "bin folders, tensorrt_libs, NVIDIA's cuDNN install folders, PATH) that have the names of "
        "torch\\lib's cuBLAS/cuDNN DLLs but other file versions.",
        why="Windows gives every later request for a DLL name the copy already loaded: when the other "
        "framework is imported (or preloads its DLLs) first, torch's cublas/cudnn sub-DLLs bind to "
        "that copy and import torch fails with [WinError 127] (a missing procedure), though torch "
        "alone imports fine.",
        fix="Import torch first (the other framework then uses torch's copies where it can), or give "
        "both one version of the library (remove the pip cuDNN wheel the other framework brought "
        "only if it works with torch's).",
        example="import tensorrt, then import torch: [WinError 127] on torch\\lib\\cublas64_11.dll, "
        "because TensorRT loaded CUDA 11.5's cuBLAS from the toolkit (NVIDIA/TensorRT#1693).",
    ),
)
def other_framework_cuda_dlls_load_first(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(WindowsFacts)
    frameworks = installed_frameworks(facts)
    copies = _foreign_copies(facts)
    if not frameworks or not copies or not facts.torch_cuda_dlls or torch_version(ctx) is None:
        return
    names = ", ".join(f"{f.label} {v}" for f, v in frameworks)
    lines = [f"{t.path} {t.version} vs torch\\lib's {o.version}" for t, o in copies]
    python = quote(ctx.interpreter.path, "windows")
    first = frameworks[0][0]
    fixes = [
        Fix(
            summary="Import torch first, so its CUDA DLLs are the ones the process holds: "
            + "; ".join(dict.fromkeys(_what_for(f) for f, _ in frameworks)),
            link=ORT_PRELOAD
            if first.dist == "onnxruntime-gpu"
            else "https://github.com/NVIDIA/TensorRT/issues/1693",
        )
    ]
    wheels = sorted({t.package for t, _ in copies if t.package == "nvidia"})
    if wheels:
        folders = sorted({ntpath.dirname(t.path) for t, _ in copies if t.package == "nvidia"})
        fixes.append(
            Fix(
                summary="Let both use one cuDNN/cuBLAS: the nvidia-* wheels in "
                + ", ".join(folders)
                + " came with the other framework; remove them only if it runs on torch's copies "
                "(PaddlePaddle/Paddle#66947), or install the versions torch bundles",
                commands=(f"{python} -m pip list --format=freeze",),
            )
        )
    yield Hit(
        title=f"{names} can load CUDA DLLs of other versions under torch's names: importing it first "
        "breaks torch",
        detail=f"Installed beside torch {torch_version(ctx)}: {names}. Same names as torch\\lib's, other "
        f"versions: {'; '.join(lines)}. Whichever copy is loaded first serves the whole process, so "
        "when that framework (or its preload_dlls) runs before import torch, torch's DLLs bind to its "
        "copies and fail with [WinError 127] ('The specified procedure could not be found'); torch "
        f'imported alone, as envdoctor checks it, works. Tell them apart: `{python} -c "import torch"` '
        "works while the program that imports the other framework first fails.",
        evidence=tuple(lines[:4]),
        fixes=tuple(fixes),
    )


def _available(facts: WindowsFacts) -> set[str]:
    return {f.name for f in (*facts.torch_cuda_dlls, *facts.cuda_dlls_on_path, *facts.package_cuda_dlls)}


def _cuda_major(torch: TorchFacts) -> int | None:
    variant = torch.variant
    cuda = variant_cuda(variant) if variant and variant.startswith("cu") else None
    if cuda is None and torch.cuda:
        cuda = torch.cuda
    try:
        return int(str(cuda).split(".")[0]) if cuda else None
    except ValueError:
        return None


def _torch_for_major(ctx: RuleContext, major: int) -> Fix | None:
    """The newest torch build for CUDA `major` the planner finds for this machine."""
    target = install_target(ctx, want_cuda=True)
    for release in sorted(releases.releases(), key=lambda r: r.version, reverse=True)[:8]:
        builds = release.builds(target.platform)
        if builds is None:
            continue
        variants = [v for v in builds.variants if v.startswith("cu") and _major_of(v) == major]
        for variant in sorted(variants, key=lambda v: int(v[2:]), reverse=True):
            plan = install.plan(replace(target, torch=str(release.version), variant=variant))
            fix = plan_fix(ctx, plan, f"Install a torch built for CUDA {major} ({variant})")
            if fix is not None:
                return fix
    return None


def _major_of(variant: str) -> int | None:
    cuda = variant_cuda(variant)
    try:
        return int(cuda.split(".")[0]) if cuda else None
    except ValueError:
        return None


@rule(
    code="ED614",
    name="other-framework-needs-other-cuda-major",
    severity=Severity.WARNING,
    summary="another framework needs CUDA libraries of a major version nothing here provides",
    needs=(WindowsFacts, TorchFacts),
    doc=RuleDoc(
        what="The installed frameworks that load cuBLAS by a CUDA-major file name (CTranslate2 4.x: "
        "cublas64_12.dll, 3.x: cublas64_11.dll; onnxruntime-gpu 1.19+: CUDA 12) against the cuBLAS "
        "DLLs of that name in torch\\lib, on PATH and in the nvidia-* wheels.",
        why="On Windows these frameworks often run on the CUDA DLLs torch brings: with a torch for "
        "another CUDA major they fail at their first GPU call, 'Library cublas64_12.dll is not found "
        "or cannot be loaded', while torch itself works.",
        fix="Install the torch build for the CUDA major the framework needs (the exact command is "
        "shown), or the framework's release built for torch's CUDA major.",
        example="faster-whisper's CTranslate2 4.x beside torch 2.x+cu118: 'RuntimeError: Library "
        "cublas64_12.dll is not found or cannot be loaded' (KoljaB/RealtimeSTT#220).",
    ),
)
def other_framework_needs_other_cuda_major(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(WindowsFacts)
    torch = ctx.need(TorchFacts)
    if not torch.installed or torch_version(ctx) is None:
        return
    available = _available(facts)
    torch_major = _cuda_major(torch)
    for framework, version in installed_frameworks(facts):
        build = framework.build_for(version)
        if build is None or build.dll in available:
            continue
        fixes: list[Fix] = []
        planned = _torch_for_major(ctx, build.major)
        if planned is not None:
            fixes.append(planned)
        other = next((b for b in framework.cuda if b.major == torch_major), None) if torch_major else None
        if other is not None:
            release = f"{framework.older}, its last release" if framework.older else "a release"
            bound = f" below {other.below}" if other.below else f" from {other.since}" if other.since else ""
            note = f"; {framework.older_note}" if framework.older_note else ""
            fixes.append(
                Fix(
                    summary=f"Install {framework.label}{bound} ({release} built for CUDA "
                    f"{other.major}), which runs on the CUDA {other.major} DLLs torch brings{note}",
                )
            )
        have = sorted(n for n in available if n.startswith(build.dll.split("64_")[0]))
        torch_words = f"torch {torch_version(ctx)}" + (
            f" (CUDA {torch_major})" if torch_major else " (no CUDA)"
        )
        yield Hit(
            title=f"{framework.label} {version} needs {build.dll} (CUDA {build.major}), which nothing "
            "here provides",
            detail=f"{framework.label} {version} is built for CUDA {build.major} and loads {build.dll} at "
            f"its first GPU call; {torch_words} brings {', '.join(have) or 'no cuBLAS DLL'}, and PATH and "
            f"the nvidia-* wheels have no {build.dll} either. It then fails with 'Library {build.dll} is "
            "not found or cannot be loaded' (or falls back to the CPU) while torch itself works.",
            evidence=(f"{framework.dist} {version}", f"cuBLAS DLLs found: {', '.join(have) or 'none'}"),
            fixes=tuple(fixes),
        )
