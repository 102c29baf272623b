"""Native libraries around torch that break its import (or an extension's load): two sets of
nvidia-* wheels, torch's nvidia-* wheels missing, conda's MKL 2024.1, static TLS exhausted, a
libstdc++ older than what the binaries need.

Each reads the error the torch child captured (import torch, or an extension's load) together with
the packages and paths that explain it; ED002 (import torch fails) folds under these when one fires.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from packaging.requirements import InvalidRequirement, Requirement

from envdoctor.install.packages import CondaRequest, PackageRequest
from envdoctor.knowledge import torch_extensions as table
from envdoctor.knowledge.signatures import PASTED, ErrorEvidence
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.toolkit import ToolkitFacts
from envdoctor.probes.torch_build import Distribution, TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import prepend_command, set_variable_fixes
from envdoctor.rules.fixes import conda_fix, package_fix, with_uninstall
from envdoctor.rules.torch import companions
from envdoctor.shell import join, quote
from envdoctor.util.pep503 import normalize_name
from envdoctor.util.records import record

_NVIDIA_WHEEL = re.compile(r"^nvidia-(?P<lib>[a-z0-9-]+?)-cu(?P<major>\d+)$")
_STATIC_TLS = re.compile(r"(?P<lib>\S+\.so[\w.-]*): cannot allocate memory in static TLS block")
_STATIC_TLS_OLD = re.compile(r"cannot load any more object with static TLS")
_GLIBCXX = re.compile(
    r"(?P<loaded>\S*libstdc\+\+\.so\.6)\S*: version [`'‘]?(?P<symbol>(?:GLIBCXX|CXXABI)_[\d.]+)['’]? "
    r"not found(?: \(required by (?P<by>[^)\s]+)\))?"
)
_MISSING_CUDA_LIBRARY = re.compile(r"(lib\w+\.so)\.\*\[0-9\][^ ]* not found in the system path")


def shell_of(ctx: RuleContext) -> str | None:
    facts = ctx.get(ToolkitFacts)
    return facts.shell if facts is not None else None


def failure_texts(torch: TorchFacts, ctx: RuleContext | None = None) -> tuple[tuple[str, str], ...]:
    """(where, message) of each failure the torch child captured: the import, extension loads,
    companion loads; and the error pasted to `envdoctor why`, which these rules read with this
    machine's facts (the conda env, the loaded library's folder)."""
    found: list[tuple[str, str]] = []
    evidence = ctx.get(ErrorEvidence) if ctx is not None else None
    for text in evidence.texts if evidence is not None else ():
        if text.source == PASTED:
            found.append(("the pasted error", text.text[:20000]))
    if torch.import_error is not None:
        found.append(("import torch", f"{torch.import_error.message}\n{torch.import_error.traceback or ''}"))
    if torch.extensions is not None:
        for load in torch.extensions.extension_loads:
            if load.error is not None:
                found.append((f"loading {load.name}", load.error.message))
        for companion in torch.extensions.loads:
            if companion.error is not None:
                found.append(
                    (f"loading {companion.name}", f"{companion.error.message}\n{companion.cause or ''}")
                )
    if torch.crash is not None and torch.crash.stderr_tail:
        found.append(("import torch", torch.crash.stderr_tail))
    return tuple(found)


def explained_elsewhere(message: str) -> bool:
    """Whether a load error is one of the native-library causes these rules name (so ED212 does
    not call it an extension built for another torch)."""
    return bool(_GLIBCXX.search(message) or _STATIC_TLS.search(message) or _STATIC_TLS_OLD.search(message))


def _first_line(text: str, pattern: re.Pattern[str]) -> str:
    for line in text.splitlines():
        if pattern.search(line):
            return line.strip()[:300]
    return text.strip().splitlines()[0][:300] if text.strip() else ""


# -- ED220 -----------------------------------------------------------------------------------


@record
class NvidiaWheel:
    dist: Distribution
    lib: str
    major: str


def nvidia_wheels(torch: TorchFacts) -> tuple[NvidiaWheel, ...]:
    found = []
    for dist in (torch.extensions.distributions or ()) if torch.extensions is not None else ():
        match = _NVIDIA_WHEEL.match(normalize_name(dist.name))
        if match:
            found.append(NvidiaWheel(dist, match.group("lib"), match.group("major")))
    return tuple(found)


def _torch_major(torch: TorchFacts, wheels: tuple[NvidiaWheel, ...]) -> str | None:
    """The CUDA major torch uses: its own torch.version.cuda, else the nvidia wheels it requires."""
    if torch.cuda:
        return torch.cuda.split(".", 1)[0]
    dist = torch.extensions.distribution("torch") if torch.extensions is not None else None
    for text in dist.requires if dist is not None else ():
        match = _NVIDIA_WHEEL.match(normalize_name(re.split(r"[ ;<>=!~\[]", text, maxsplit=1)[0]))
        if match:
            return match.group("major")
    majors = sorted({w.major for w in wheels})
    return majors[-1] if majors else None


@rule(
    code="ED220",
    name="mixed-nvidia-cuda-wheels",
    severity=Severity.ERROR,
    summary="nvidia-* wheels for two CUDA majors (-cu11 and -cu12) are installed side by side",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="The installed nvidia-*-cuNN distributions (read from metadata in the torch child): one "
        "CUDA major beside another, such as nvidia-nccl-cu11 next to nvidia-nccl-cu12.",
        why="Both majors unpack into the same site-packages/nvidia/<library>/lib folders, so the files "
        "of whichever was installed last sit where torch looks: torch built for CUDA 12 then loads "
        "CUDA 11's NCCL or cuBLAS and fails with 'undefined symbol: ncclMemFree' or "
        "'ncclCommRegister'.",
        fix="Uninstall the wheels of the other CUDA major, then reinstall the ones torch uses (the "
        "uninstall removes the shared files too).",
        example="nvidia-nccl-cu11 2.14.3 beside nvidia-nccl-cu12 2.27.3: 'libtorch_cuda.so: undefined "
        "symbol: ncclMemFree' (rwth-i6/returnn#1802).",
    ),
)
def mixed_nvidia_cuda_wheels(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    wheels = nvidia_wheels(torch)
    if len({w.major for w in wheels}) < 2:
        return
    keep = _torch_major(torch, wheels)
    other = [w for w in wheels if w.major != keep]
    kept = [w for w in wheels if w.major == keep]
    if not other or not kept:
        return
    pip = [ctx.interpreter.path, "-m", "pip"]
    names = ", ".join(f"{w.dist.name} {w.dist.version}" for w in other)
    said = next((m for _, m in failure_texts(torch, ctx) if "undefined symbol" in m), None)
    detail = (
        f"CUDA {keep} wheels (the ones torch uses) share their folders under site-packages/nvidia with "
        f"CUDA {other[0].major} ones: {names}. Whichever was installed last owns the library files "
        "torch loads."
    )
    if said:
        detail += f" Here: {_first_line(said, re.compile('undefined symbol'))}."
    yield Hit(
        title=f"nvidia-* wheels for CUDA {other[0].major} are installed beside torch's CUDA {keep} ones",
        detail=detail,
        evidence=tuple(f"{w.dist.name} {w.dist.version}" for w in wheels)[:8],
        fixes=(
            with_uninstall(
                join([*pip, "uninstall", "-y", *(w.dist.name for w in other)], ctx.platform.os),
                package_fix(
                    ctx,
                    f"Uninstall the CUDA {other[0].major} wheels, then reinstall torch's CUDA {keep} "
                    "ones exactly as they are (the uninstall removed their shared files)",
                    PackageRequest(
                        tuple(f"{w.dist.name}=={w.dist.version}" for w in kept),
                        options=("--force-reinstall", "--no-deps"),
                    ),
                ),
            ),
        ),
    )


# -- ED221 -----------------------------------------------------------------------------------


def missing_nvidia(ctx: RuleContext, torch: TorchFacts) -> tuple[Requirement, ...]:
    """torch's own nvidia-* requirements (markers evaluated here) that no distribution fulfils."""
    if torch.extensions is None or torch.extensions.distributions is None:
        return ()
    dist = torch.extensions.distribution("torch")
    if dist is None or dist.installer == "conda":
        return ()
    installed = {normalize_name(d.name) for d in torch.extensions.distributions}
    environment = companions.marker_environment(ctx)
    missing = []
    for text in dist.requires:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        name = normalize_name(requirement.name)
        if not name.startswith("nvidia-") or name in installed:
            continue
        try:
            if requirement.marker is not None and not requirement.marker.evaluate(environment):
                continue
        except Exception:  # a marker this packaging cannot evaluate: not judged
            continue
        missing.append(requirement)
    return tuple(missing)


@rule(
    code="ED221",
    name="torch-nvidia-wheels-missing",
    severity=Severity.ERROR,
    summary="nvidia-* wheels torch's metadata requires (cuBLAS, cuDNN, NVRTC, ...) are not installed",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="torch's own Requires-Dist entries for nvidia-* wheels, markers evaluated for this "
        "interpreter, against the installed distributions.",
        why="A CUDA torch from PyPI loads cuBLAS, cuDNN and NVRTC from those wheels; installed without "
        "them (poetry resolving torch 2.0.1 from metadata that did not list them, --no-deps, a "
        "half-finished install) import torch fails with 'ValueError: libcublas.so.*[0-9] not found in "
        "the system path'.",
        fix="Install the missing wheels exactly as torch requires them (or reinstall torch with its "
        "dependencies); with poetry and torch 2.0.1, exclude that release (`!=2.0.1`) and lock again.",
        example="poetry installs torch 2.0.1 without nvidia-cublas-cu11: 'ValueError: libcublas.so.*[0-9] "
        "not found in the system path' (kennethleungty/Llama-2-Open-Source-LLM-CPU-Inference#8).",
    ),
)
def torch_nvidia_wheels_missing(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    missing = missing_nvidia(ctx, torch)
    if not missing:
        return
    version = torch.version or torch.dist_version or "?"
    pins = [f"{r.name}{r.specifier}" for r in missing]
    said = next((m for _, m in failure_texts(torch, ctx) if _MISSING_CUDA_LIBRARY.search(m)), None)
    detail = (
        f"torch {version}'s metadata requires {', '.join(pins[:6])}{' and more' if len(pins) > 6 else ''}, "
        "which are not installed: torch loads its CUDA libraries from them."
    )
    if said:
        detail += f" Here: {_first_line(said, _MISSING_CUDA_LIBRARY)}."
    fixes = [
        package_fix(
            ctx, "Install the wheels torch requires, as its metadata pins them", PackageRequest(tuple(pins))
        )
    ]
    if (torch.public_version or "") == "2.0.1":
        fixes.append(
            Fix(
                summary="With poetry: torch 2.0.1's metadata as poetry reads it lists no nvidia-* wheels; "
                'exclude it (torch = ">=2.0.0, !=2.0.1") and lock again',
                commands=('poetry add "torch>=2.0.0,!=2.0.1"',),
            )
        )
    yield Hit(
        title=f"torch {version} is installed without the nvidia-* wheels it requires",
        detail=detail,
        evidence=tuple(f"missing: {p}" for p in pins[:8]),
        fixes=tuple(fixes),
    )


# -- ED222 -----------------------------------------------------------------------------------


@rule(
    code="ED222",
    name="conda-mkl-breaks-torch",
    severity=Severity.ERROR,
    summary="conda's MKL 2024.1 lacks iJIT_NotifyEvent, which conda's torch builds need",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="The conda packages of the examined prefix (conda-meta): an MKL release the knowledge "
        "lists as breaking conda's torch (2024.1), beside conda's pytorch or an import error that "
        "names its missing symbol.",
        why="MKL 2024.1 dropped iJIT_NotifyEvent; the pytorch channel's builds link it, so after an "
        "unpinned `conda install` or an environment.yml without an MKL pin, import torch fails with "
        "'libtorch_cpu.so: undefined symbol: iJIT_NotifyEvent'.",
        fix="Pin MKL to 2024.0 in the environment (and in environment.yml).",
        example="environment.yml with pytorch from the pytorch channel and an unpinned mkl resolves to "
        "mkl 2024.1: 'undefined symbol: iJIT_NotifyEvent' (pytorch/pytorch#123097).",
    ),
)
def conda_mkl_breaks_torch(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    around = torch.surroundings
    if around is None or around.conda_packages is None:
        return
    for package in around.conda_packages:
        broken = table.conda_break(package.name, package.version)
        if broken is None:
            continue
        said = next((m for _, m in failure_texts(torch, ctx) if broken.symbol in m), None)
        if around.conda("pytorch") is None and said is None:
            continue  # pip's torch bundles its own MKL: only conda's build links the system one
        detail = (
            f"{package.name} {package.version} (conda) lacks {broken.symbol}, which the pytorch "
            "channel's torch builds link."
        )
        if said:
            detail += f" Here: {_first_line(said, re.compile(re.escape(broken.symbol)))}."
        yield Hit(
            title=f"conda's {package.name} {package.version} breaks torch: {broken.symbol} is missing",
            detail=detail,
            evidence=(f"conda: {package.name} {package.version} {package.build}".strip(),),
            fixes=(
                conda_fix(
                    ctx,
                    f"Pin {package.name} {broken.pin} in this environment (and as "
                    f"`- {package.name}={broken.pin}` in environment.yml)",
                    CondaRequest((f"{package.name}=={broken.pin}",), _conda_prefix(ctx)),
                ),
            ),
        )


# -- ED223 -----------------------------------------------------------------------------------


@rule(
    code="ED223",
    name="static-tls-exhausted",
    severity=Severity.ERROR,
    summary="a library torch loads cannot get static TLS ('cannot allocate memory in static TLS block')",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="The error of import torch (or of an extension's load) for the loader's 'cannot allocate "
        "memory in static TLS block' and 'cannot load any more object with static TLS', with the "
        "library it names.",
        why="A library with initial-exec thread-local storage (torch's bundled libgomp, most often on "
        "aarch64) loaded late finds the static TLS space already taken by what the process loaded "
        "before, and dlopen refuses it.",
        fix="Preload that library when the process starts (LD_PRELOAD=<path>), or import torch before "
        "the libraries loaded ahead of it.",
        example="aarch64 conda env: 'torch/lib/libgomp-d22c30c5.so.1: cannot allocate memory in static "
        "TLS block' (triton-inference-server/server#4952).",
    ),
)
def static_tls_exhausted(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    for where, message in failure_texts(torch, ctx):
        match = _STATIC_TLS.search(message)
        old = _STATIC_TLS_OLD.search(message)
        if match is None and old is None:
            continue
        line = _first_line(message, _STATIC_TLS if match else _STATIC_TLS_OLD)
        if match is not None:
            library = match.group("lib")
            fixes: tuple[Fix, ...] = (
                Fix(
                    summary=f"Preload {library.rsplit('/', 1)[-1]} when the process starts, so it gets "
                    "static TLS before anything else takes it (add it where the program is started)",
                    commands=(prepend_command(ctx.platform.os, shell_of(ctx), "LD_PRELOAD", library),),
                ),
            )
        else:
            fixes = (
                Fix(
                    summary="Import torch first in the program (before the libraries loaded ahead of "
                    "it), or preload torch's libraries with LD_PRELOAD; a newer glibc has more room"
                ),
            )
        yield Hit(
            title=f"{where} fails: static TLS is exhausted",
            detail=f"{line}. The process had used up its static thread-local storage before this "
            "library was loaded.",
            evidence=(line,),
            fixes=fixes,
        )
        return


# -- ED224 -----------------------------------------------------------------------------------


def _prefix(ctx: RuleContext) -> str | None:
    python = ctx.get(PythonFacts)
    return python.prefix if python is not None else None


@rule(
    code="ED224",
    name="libstdcxx-too-old",
    severity=Severity.ERROR,
    summary="the libstdc++ loaded lacks the GLIBCXX/CXXABI version torch or an extension needs",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="The error of import torch (or of an extension's load) for \"libstdc++.so.6: version "
        "`GLIBCXX_3.4.30' not found\", with which libstdc++ was loaded (the conda environment's or the "
        "system's) and which file needed it.",
        why="A conda environment carries its own libstdc++; an extension compiled with the system's "
        "newer GCC needs symbols the environment's older one lacks, and a conda env without its "
        "libstdc++.so.6 link (or outside the loader path) falls back to an older system one.",
        fix="In a conda env whose libstdc++ is too old, update it (conda-forge's libstdcxx-ng); where the "
        "system's is loaded instead of the environment's newer one, put the environment's lib folder "
        "first (or restore its libstdc++.so.6 link).",
        example="'/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by "
        ".../libtorch_python.so)' in a conda env whose libstdc++.so.6 link was missing "
        "(pytorch/pytorch#157709).",
    ),
)
def libstdcxx_too_old(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    prefix = _prefix(ctx)
    conda = torch.surroundings is not None and torch.surroundings.conda_packages is not None
    python = ctx.get(PythonFacts)
    conda = conda or (python is not None and python.is_conda)
    for where, message in failure_texts(torch, ctx):
        match = _GLIBCXX.search(message)
        if match is None:
            continue
        loaded, symbol, by = match.group("loaded"), match.group("symbol"), match.group("by")
        gcc = table.gcc_for(symbol)
        needs = f"{symbol}" + (f" (the libstdc++ of GCC {gcc} or newer)" if gcc else "")
        requirer = f" for {by.rsplit('/', 1)[-1]}" if by else ""
        system = loaded.startswith(("/lib", "/usr/lib"))
        fixes: list[Fix] = []
        if conda and not system:
            fixes.append(
                conda_fix(
                    ctx,
                    f"Update this conda environment's C++ runtime to one that has {symbol}",
                    CondaRequest(("libstdcxx-ng", "libgcc-ng"), _conda_prefix(ctx), channel="conda-forge"),
                )
            )
            cause = (
                f"The conda environment's own libstdc++ ({loaded}) is older than the compiler that "
                f"built the binary{requirer}."
            )
        elif conda and system:
            env = quote(prefix or "$CONDA_PREFIX", ctx.platform.os)
            fixes.append(
                Fix(
                    summary="The environment's newer libstdc++ is not the one loaded: see whether its "
                    "libstdc++.so.6 link exists (if only libstdc++.so.6.0.N is there, link it as "
                    "libstdc++.so.6), or put the environment's lib folder first on the loader path",
                    commands=(
                        f"ls -l {env}/lib/libstdc++.so.6*",
                        prepend_command(ctx.platform.os, shell_of(ctx), "LD_LIBRARY_PATH", f"{prefix}/lib"),
                    ),
                )
            )
            cause = (
                f"The system's libstdc++ ({loaded}) was loaded instead of the conda environment's, and it "
                f"is too old{requirer}."
            )
        else:
            fixes.append(
                Fix(
                    summary="This system's C++ runtime is older than the binaries need: use a newer "
                    "distribution (or a conda environment, which brings its own libstdc++), or build "
                    "the extension with this system's compiler"
                )
            )
            cause = f"The system's libstdc++ ({loaded}) is older than the binary{requirer} needs."
        yield Hit(
            title=f"{where} fails: libstdc++ lacks {symbol}",
            detail=f"{_first_line(message, _GLIBCXX)}. It needs {needs}. {cause}",
            evidence=(f"{loaded}: no {symbol}", *((f"required by {by}",) if by else ())),
            fixes=tuple(fixes),
        )
        return


def variable_fixes(ctx: RuleContext, variable: str, value: str, why: str) -> tuple[Fix, ...]:
    return set_variable_fixes(ctx.platform.os, shell_of(ctx), variable, value, why)


def _conda_prefix(ctx: RuleContext) -> str | None:
    """The examined conda environment's folder, for `conda install -p`; None: the active one."""
    python = ctx.get(PythonFacts)
    return python.prefix if python is not None and python.is_conda else None
