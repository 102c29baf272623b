"""Where a CUDA extension build looks for its toolkit and what it compiles for: a toolkit on disk
that builds cannot find (ED410), a CUDA_HOME written like PATH (ED411), an nvcc too old for the GPU
(ED413), a TORCH_CUDA_ARCH_LIST torch or nvcc rejects (ED414), and a build with no GPU to take the
architectures from (ED415)."""

from __future__ import annotations

import ntpath
import posixpath
from collections.abc import Iterator

from envdoctor.knowledge import nvcc as nvcc_data
from envdoctor.knowledge.archs import Capability, cubin_runs_on, parse_capability
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.system import SystemFacts
from envdoctor.probes.toolkit import ToolkitFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import set_variable_fixes
from envdoctor.rules.toolkit.builds import (
    TargetGpu,
    arch_text,
    best_toolkit,
    build_toolkit,
    no_gpu_visible,
    toolkit_fixes,
    torch_release,
    visible_gpus,
)
from envdoctor.rules.toolkit.toolkits import (
    TOOLKIT_ARCHIVE,
    complete_toolkits,
    major_minor,
    torch_cuda,
)

ARCH_LIST_DOC = "https://pytorch.org/docs/stable/cpp_extension.html"


_SUDO = (
    "A build started with sudo, from a service, an IDE or a non-login shell does not get the PATH "
    "and CUDA_HOME your ~/.bashrc sets: run it as yourself in a shell that has them, or hand them "
    'over (`sudo env PATH="$PATH" CUDA_HOME="$CUDA_HOME" ...`).'
)


@rule(
    code="ED410",
    name="toolkit-not-found-by-builds",
    severity=Severity.INFO,
    summary="a CUDA toolkit is installed, but CUDA_HOME is unset and nvcc is not on PATH",
    needs=(ToolkitFacts, TorchFacts),
    doc=RuleDoc(
        what="For a CUDA build of torch: a complete toolkit (bin/nvcc and include/cuda_runtime.h) "
        "on disk while neither CUDA_HOME nor CUDA_PATH is set and no nvcc is on PATH.",
        why="torch itself needs no toolkit, but compiling CUDA extensions does: build scripts "
        "that run `nvcc` stop with 'nvcc: not found', and torch's cpp_extension, unless "
        "/usr/local/cuda exists, with 'CUDA_HOME environment variable is not set'.",
        fix="Set CUDA_HOME to the toolkit and put its bin folder on PATH (the commands are shown); "
        "a build run through sudo needs them passed on.",
        example="CUDA 11.3 in /usr/local/cuda-11.3, the build script run with sudo, whose PATH lacks "
        "/usr/local/cuda-11.3/bin: 'build.sh: nvcc: not found'.",
    ),
)
def toolkit_not_found_by_builds(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    cuda = torch_cuda(ctx)
    if cuda is None or facts.nvcc is not None or facts.env_value("CUDA_HOME") or facts.env_value("CUDA_PATH"):
        return
    toolkit = best_toolkit(facts, cuda)
    if toolkit is None:
        return
    home = facts.cuda_home
    if home is not None and home.has_nvcc:
        finds = (
            f"torch's cpp_extension still finds {home.path} (the default location), but build "
            "scripts and setup.py checks that run `nvcc` stop with 'nvcc: not found'."
        )
    else:
        finds = (
            "torch's cpp_extension finds no toolkit either and stops with 'CUDA_HOME environment "
            "variable is not set'; build scripts stop with 'nvcc: not found'."
        )
    version = f"CUDA {toolkit.version}" if toolkit.version else "A CUDA"
    yield Hit(
        title=f"{version} toolkit is installed at {toolkit.root}, but CUDA_HOME is unset and nvcc is "
        "not on PATH",
        detail=f"Only compiling CUDA extensions needs it (torch itself does not): {finds} {_SUDO}",
        evidence=(f"toolkit {toolkit.root}: {toolkit.version}", "nvcc on PATH: none", "CUDA_HOME: unset"),
        fixes=toolkit_fixes(ctx, facts, toolkit, f"(the {version} toolkit)"),
    )


def _malformed(value: str, sep: str) -> str | None:
    """Why a CUDA_HOME value is no single toolkit folder; None when it is one."""
    stripped = value.strip()
    if sep in stripped:
        return f"a {sep!r}-separated list, as PATH is written"
    if stripped != value or stripped[:1] in "\"'" or stripped[-1:] in "\"'":
        return "quotes or spaces around the folder"
    tail = stripped.replace("\\", "/").rstrip("/").lower()
    if tail.endswith(("/bin/nvcc", "/bin/nvcc.exe")):
        return "the nvcc program, not the toolkit folder above its bin"
    if tail.endswith("/bin"):
        return "the toolkit's bin folder, not the toolkit folder itself"
    return None


def _intended(ctx: RuleContext, facts: ToolkitFacts, value: str, sep: str) -> str | None:
    """The one folder the value meant: an entry that is an installed toolkit, else the last entry."""
    windows = ctx.platform.os == "windows"
    mod = ntpath if windows else posixpath
    entries = [e.strip().strip("\"'") for e in value.split(sep) if e.strip().strip("\"'")]
    candidates = []
    for entry in entries:
        tail = entry.replace("\\", "/").rstrip("/").lower()
        if tail.endswith(("/bin/nvcc", "/bin/nvcc.exe")):
            entry = mod.dirname(mod.dirname(entry.rstrip("\\/")))
        elif tail.endswith("/bin"):
            entry = mod.dirname(entry.rstrip("\\/"))
        candidates.append(entry)
    usable = {t.root.rstrip("\\/"): t for t in complete_toolkits(facts.toolkits)}
    for candidate in candidates:
        if candidate.rstrip("\\/") in usable:
            return candidate
    # A link such as /usr/local/cuda resolves to a toolkit the probe lists by its real folder.
    for candidate in candidates:
        if any(t.found_by and candidate.rstrip("\\/") in t.root for t in usable.values()):
            return candidate
    return candidates[-1] if candidates else None


def malformed_homes(ctx: RuleContext, facts: ToolkitFacts) -> list[tuple[str, str, str, str | None]]:
    """(variable, value, what is wrong, the folder it meant) for CUDA_HOME and CUDA_PATH."""
    sep = ";" if ctx.platform.os == "windows" else ":"
    found = []
    for name in ("CUDA_HOME", "CUDA_PATH"):
        value = facts.env_value(name)
        if not value:
            continue
        problem = _malformed(value, sep)
        if problem is not None:
            found.append((name, value, problem, _intended(ctx, facts, value, sep)))
    return found


@rule(
    code="ED411",
    name="cuda-home-malformed",
    severity=Severity.WARNING,
    summary="CUDA_HOME or CUDA_PATH is a list, a bin folder or nvcc itself, not one toolkit folder",
    needs=(ToolkitFacts,),
    doc=RuleDoc(
        what="Whether CUDA_HOME and CUDA_PATH each name one folder: no ':' (';' on Windows) "
        "separated list, no surrounding quotes, not the bin folder or the nvcc program.",
        why="torch's cpp_extension takes the value as the toolkit folder and runs <value>/bin/nvcc, "
        "so `export CUDA_HOME=$CUDA_HOME:/usr/local/cuda` (written like PATH) makes every CUDA "
        "extension build fail with \"No such file or directory: ':/usr/local/cuda/bin/nvcc'\".",
        fix="Set the variable to the one toolkit folder, and make the start-up file line that "
        "appends to it a plain assignment.",
        example="CUDA_HOME=:/usr/local/cuda-9.0 from `export CUDA_HOME=$CUDA_HOME:/usr/local/cuda-9.0` "
        "in ~/.bashrc.",
    ),
)
def cuda_home_malformed(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    for name, value, problem, intended in malformed_homes(ctx, facts):
        windows = ctx.platform.os == "windows"
        nvcc = (ntpath if windows else posixpath).join(value, "bin", "nvcc.exe" if windows else "nvcc")
        fixes: tuple[Fix, ...] = ()
        if intended is not None:
            fixes = set_variable_fixes(ctx.platform.os, facts.shell, name, intended, "(one folder)")
        if not windows:
            fixes += (
                Fix(
                    summary=f"In the start-up file, replace a line such as `export {name}=${name}:...` "
                    f"by a plain assignment (export {name}={intended or '/usr/local/cuda'}); this "
                    "shows where it is",
                    commands=(f"grep -n {name} ~/.bashrc ~/.zshrc ~/.profile /etc/environment 2>/dev/null",),
                ),
            )
        yield Hit(
            title=f"{name} is {problem}: {value!r}",
            detail=f"Extension builds take {name} as the toolkit folder and run {nvcc}, which does not "
            f"exist (\"No such file or directory: '{nvcc}'\"). "
            + (f"It meant {intended}." if intended else ""),
            evidence=(f"{name} = {value}",),
            fixes=fixes,
        )


def _fallback_arch(cuda: str | None, capability: Capability) -> str | None:
    """The newest architecture of the GPU's major that nvcc `cuda` builds for and the GPU runs
    (a cubin of X.Y runs on X.Z for Z >= Y); None when there is none."""
    for minor in range(capability[1], -1, -1):
        candidate = f"{capability[0]}.{minor}"
        # Code for a Tegra part (8.7, 7.2) runs on that part alone: never a stand-in.
        if nvcc_data.nvcc_builds_for(cuda, candidate) and cubin_runs_on((capability[0], minor), capability):
            return candidate
    return None


@rule(
    code="ED413",
    name="nvcc-too-old-for-gpu",
    severity=Severity.WARNING,
    summary="the toolkit extensions build with cannot generate code for this machine's GPU",
    needs=(ToolkitFacts,),
    doc=RuleDoc(
        what="Without TORCH_CUDA_ARCH_LIST, builds target the visible GPUs' compute capabilities: "
        "whether the build's nvcc (CUDA_HOME's, else PATH's) knows each of them (sm_89 needs CUDA "
        "11.8, sm_120 CUDA 12.8; CUDA 12 dropped sm_35, CUDA 13 everything below sm_75).",
        why="nvcc stops with \"nvcc fatal : Unsupported gpu architecture 'compute_89'\" and no "
        "extension builds, although torch itself runs on the GPU.",
        fix="Build with a toolkit that knows the GPU (point CUDA_HOME at an installed one, or "
        "install one, ideally torch's CUDA version), or target an older architecture the toolkit "
        "knows with TORCH_CUDA_ARCH_LIST.",
        example="RTX 4090 (8.9) with CUDA 11.3's nvcc: 'Unsupported gpu architecture compute_89'.",
    ),
)
def nvcc_too_old_for_gpu(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    if facts.torch_cuda_arch_list:
        return  # the list is what builds target: ED414 judges it
    toolkit = build_toolkit(facts)
    if toolkit is None:
        return
    failing: list[TargetGpu] = [
        g
        for g in visible_gpus(ctx)
        if nvcc_data.nvcc_builds_for(toolkit.version, arch_text(g.capability)) is False
    ]
    if not failing:
        return
    gpu = failing[0]
    arch = arch_text(gpu.capability)
    support = nvcc_data.arch_support(arch)
    needed = support.first if support is not None else None
    cuda = torch_cuda(ctx)
    have, dropped = (
        nvcc_data.version2(toolkit.version),
        nvcc_data.version2(support.dropped if support else None),
    )
    if have is not None and dropped is not None and have >= dropped and support is not None:
        reason = f"CUDA {support.dropped} dropped compute capability {arch}"
    else:
        reason = f"compute capability {arch} needs CUDA {needed} or newer"
    fixes: list[Fix] = []
    good = [
        t
        for t in complete_toolkits(facts.toolkits)
        if all(nvcc_data.nvcc_builds_for(t.version, arch_text(g.capability)) for g in failing)
    ]
    pick = next((t for t in good if cuda and t.major_minor == major_minor(cuda)), None) or next(
        iter(good), None
    )
    if pick is not None:
        fixes.extend(
            toolkit_fixes(ctx, facts, pick, f"(CUDA {pick.version}, which knows sm_{arch.replace('.', '')})")
        )
    else:
        want = cuda if cuda and nvcc_data.nvcc_builds_for(cuda, arch) else needed
        fixes.append(
            Fix(
                summary=f"Install a CUDA {want} toolkit (torch's own CUDA version where it knows the GPU; "
                f"CUDA {needed} or newer knows sm_{arch.replace('.', '')}) and point CUDA_HOME at it",
                link=TOOLKIT_ARCHIVE,
            )
        )
    fallback = _fallback_arch(toolkit.version, gpu.capability)
    if fallback is not None:
        fixes.extend(
            set_variable_fixes(
                ctx.platform.os,
                facts.shell,
                "TORCH_CUDA_ARCH_LIST",
                f"{fallback}+PTX",
                f"(target {fallback}, which CUDA {major_minor(toolkit.version)} knows and the GPU runs; "
                "the code may be a little slower, and other build systems have their own setting, such "
                "as TCNN_CUDA_ARCHITECTURES)",
            )
        )
    names = ", ".join(f"{g.name} ({arch_text(g.capability)})" for g in failing)
    yield Hit(
        title=f"nvcc {major_minor(toolkit.version)} cannot build for the {gpu.name}: {reason}",
        detail=f"Extension builds compile with {toolkit.where} and, without TORCH_CUDA_ARCH_LIST, "
        f'target the visible GPUs: {names}. nvcc stops with "nvcc fatal : Unsupported gpu '
        f"architecture 'compute_{arch.replace('.', '')}'\". torch itself is unaffected (its wheels "
        "bring their own compiled kernels).",
        evidence=(f"build toolkit: CUDA {toolkit.version} ({toolkit.where})", f"GPU: {names}"),
        fixes=tuple(fixes),
    )


def _arch_of(entry: str) -> str:
    return entry[: -len("+PTX")] if entry.endswith("+PTX") else entry


@rule(
    code="ED414",
    name="torch-cuda-arch-list-unsupported",
    severity=Severity.WARNING,
    summary="TORCH_CUDA_ARCH_LIST names architectures this torch or this nvcc does not know",
    needs=(ToolkitFacts, TorchFacts),
    doc=RuleDoc(
        what="Each TORCH_CUDA_ARCH_LIST entry (named architectures expanded as cpp_extension does) "
        "against the entries the installed torch's cpp_extension accepts and the architectures "
        "the build's nvcc knows; without the variable, the visible GPUs' architectures against "
        "torch's list.",
        why="cpp_extension stops every build with 'ValueError: Unknown CUDA arch (9.0+PTX) or GPU not "
        "supported' for an entry it does not know, and nvcc with 'Unsupported gpu architecture' "
        "for one it cannot build.",
        fix="Set TORCH_CUDA_ARCH_LIST to the entries both accept (the value is shown), or install a "
        "newer torch and toolkit.",
        example="TORCH_CUDA_ARCH_LIST='5.2 6.0 6.1 7.0 7.5 8.0 8.6 9.0+PTX' with nvcc 11.7 and "
        "torch 1.13: 'Unknown CUDA arch (9.0+PTX) or GPU not supported'.",
    ),
)
def torch_cuda_arch_list_unsupported(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    torch = torch_release(ctx)
    if torch is None or torch_cuda(ctx) is None:
        return
    toolkit = build_toolkit(facts)
    value = facts.torch_cuda_arch_list
    if value is None:
        yield from _gpu_unknown_to_torch(ctx, facts, torch)
        return
    entries = nvcc_data.arch_list_entries(value)
    torch_rejects = [e for e in entries if nvcc_data.torch_accepts_arch(torch, e) is False]
    nvcc_rejects = [
        e
        for e in entries
        if e not in torch_rejects
        and toolkit is not None
        and nvcc_data.nvcc_builds_for(toolkit.version, _arch_of(e)) is False
    ]
    if not torch_rejects and not nvcc_rejects:
        return
    kept = [e for e in entries if e not in torch_rejects and e not in nvcc_rejects and e]
    if kept and any(e.endswith("+PTX") for e in entries) and not kept[-1].endswith("+PTX"):
        kept[-1] += "+PTX"  # keep PTX for the newest architecture, as the list asked for PTX
    reasons = []
    if torch_rejects:
        reasons.append(
            f"torch {torch}'s cpp_extension does not know {', '.join(repr(e) for e in torch_rejects)} "
            f'("ValueError: Unknown CUDA arch ({torch_rejects[0]}) or GPU not supported")'
        )
    if nvcc_rejects and toolkit is not None:
        reasons.append(
            f"nvcc {major_minor(toolkit.version)} ({toolkit.where}) cannot build "
            f'{", ".join(repr(e) for e in nvcc_rejects)} ("Unsupported gpu architecture '
            f"'compute_{_arch_of(nvcc_rejects[0]).replace('.', '').rstrip('af')}'\")"
        )
    fixes: tuple[Fix, ...] = ()
    if kept:
        fixes = set_variable_fixes(
            ctx.platform.os, facts.shell, "TORCH_CUDA_ARCH_LIST", " ".join(kept), "(the entries both accept)"
        )
    elif (instead := _arch_list_value(ctx)) is not None:
        # Nothing in the list is usable: the architectures torch itself is built for are.
        fixes = set_variable_fixes(
            ctx.platform.os,
            facts.shell,
            "TORCH_CUDA_ARCH_LIST",
            instead,
            "(the architectures torch itself is built for; list only your GPUs' to build faster)",
        )
    yield Hit(
        title=f"TORCH_CUDA_ARCH_LIST names architectures the build cannot use: {value!r}",
        detail="; ".join(reasons) + ". Every CUDA extension build stops there.",
        evidence=(f"TORCH_CUDA_ARCH_LIST = {value}", f"torch {torch}")
        + ((f"build toolkit: CUDA {toolkit.version}",) if toolkit else ()),
        fixes=fixes,
    )


def _gpu_unknown_to_torch(ctx: RuleContext, facts: ToolkitFacts, torch: str) -> Iterator[Hit]:
    """Without TORCH_CUDA_ARCH_LIST, cpp_extension names the visible GPUs' architectures: one older
    torch releases do not know stops the build the same way."""
    unknown = [
        g for g in visible_gpus(ctx) if nvcc_data.torch_accepts_arch(torch, arch_text(g.capability)) is False
    ]
    if not unknown:
        return
    gpu = unknown[0]
    arch = arch_text(gpu.capability)
    fallback = next(
        (
            f"{gpu.capability[0]}.{minor}"
            for minor in range(gpu.capability[1], -1, -1)
            if nvcc_data.torch_accepts_arch(torch, f"{gpu.capability[0]}.{minor}")
            and cubin_runs_on((gpu.capability[0], minor), gpu.capability)
        ),
        None,
    )
    row = nvcc_data.torch_arch_row(arch)
    fixes: tuple[Fix, ...] = ()
    if fallback is not None:
        fixes = set_variable_fixes(
            ctx.platform.os,
            facts.shell,
            "TORCH_CUDA_ARCH_LIST",
            f"{fallback}+PTX",
            f"(an architecture torch {torch} knows, whose code the {gpu.name} runs)",
        )
    newer = f"; torch {row.first} and later know {arch}" if row is not None else ""
    yield Hit(
        title=f"torch {torch}'s cpp_extension does not know the {gpu.name}'s architecture ({arch})",
        detail=f"Without TORCH_CUDA_ARCH_LIST it builds for the visible GPUs and stops with "
        f'"ValueError: Unknown CUDA arch ({arch}) or GPU not supported"{newer}.',
        evidence=(f"GPU {gpu.name}: {arch}", f"torch {torch}", "TORCH_CUDA_ARCH_LIST: unset"),
        fixes=fixes,
    )


def _arch_list_value(ctx: RuleContext) -> str | None:
    """torch's own arch list as TORCH_CUDA_ARCH_LIST spells it ("5.0 6.0 7.0 7.5 8.0 8.6 9.0+PTX")."""
    torch = ctx.get(TorchFacts)
    if torch is None:
        return None
    capabilities = sorted(
        {c for a in torch.arch_list if a.startswith("sm_") and (c := parse_capability(a)) is not None}
    )
    if not capabilities:
        return None
    return " ".join(arch_text(c) for c in capabilities) + "+PTX"


@rule(
    code="ED415",
    name="extension-build-without-gpu",
    severity=Severity.INFO,
    summary="CUDA extensions would build here with no GPU visible and no TORCH_CUDA_ARCH_LIST",
    needs=(ToolkitFacts, TorchFacts),
    doc=RuleDoc(
        what="A CUDA build of torch and a toolkit with nvcc, while no GPU is visible (no driver, a "
        "container or docker build step without GPUs) and TORCH_CUDA_ARCH_LIST is unset.",
        why="cpp_extension takes the architectures from the visible GPUs; with none it fails "
        "('IndexError: list index out of range' in _get_cuda_arch_flags), and setup.py files that "
        "ask torch.cuda for the device fail too. The same build works on a machine with a GPU.",
        fix="Set TORCH_CUDA_ARCH_LIST to the architectures to build for (torch's own list is shown), "
        "e.g. with ENV in the Dockerfile before the build.",
        example="`docker build` of an image FROM nvidia/cuda:11.1.1-cudnn8-devel: the RUN step that "
        "pip installs an extension sees no GPU.",
    ),
)
def extension_build_without_gpu(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    cuda = torch_cuda(ctx)
    toolkit = build_toolkit(facts)
    if cuda is None or toolkit is None or facts.torch_cuda_arch_list or not no_gpu_visible(ctx):
        return
    value = _arch_list_value(ctx) or "7.0 7.5 8.0 8.6 8.9 9.0+PTX"
    system = ctx.get(SystemFacts)
    where = (
        ' In a Dockerfile: ENV TORCH_CUDA_ARCH_LIST="' + value + '" before the build step.'
        if (system is not None and system.container)
        else ""
    )
    yield Hit(
        title="no GPU is visible, so CUDA extension builds here have no architecture to target",
        detail=f"nvcc is there ({toolkit.where}), but without TORCH_CUDA_ARCH_LIST torch's cpp_extension "
        "derives the architectures from the visible GPUs and fails with none ('IndexError: list "
        "index out of range'); setup.py files that query torch.cuda fail the same way (a docker build "
        f"step never sees the GPUs).{where}",
        evidence=(
            f"build toolkit: CUDA {toolkit.version}",
            "visible GPUs: none",
            "TORCH_CUDA_ARCH_LIST: unset",
        ),
        fixes=set_variable_fixes(
            ctx.platform.os,
            facts.shell,
            "TORCH_CUDA_ARCH_LIST",
            value,
            "(the architectures torch itself is built for)",
        ),
    )
