"""Torch extensions: packages whose compiled parts link one torch build (flash-attn, xformers,
torch-scatter, detectron2, mmcv, apex, vllm, torchao, ...).

The torch child finds every installed distribution whose compiled files link torch's libraries
(libc10, libtorch_cpu, c10.dll) and loads each file beside torch after the smoke test, as
torch.ops.load_library does. A file that does not load names its cause in the loader's words: an
undefined symbol (built against another torch release), a CUDA library of another major version, a
std::string of the other C++ ABI. Where no load ran (a snapshot), what the extension says it was
built for decides: its build tag (flash-attn's +cu122torch2.3cxx11abiFALSE, PyG's +pt23cu121), its
build-info file (xformers' cpp_lib.json), its exact torch pin, or the pairs in
knowledge/torch_extensions.json (torchao).

Fixes give a matching pair: the extension's build for the installed torch (torch held as it is),
or the torch the extension was built for (from the planner, with its companions).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from envdoctor.install.packages import PackageRequest
from envdoctor.knowledge import torch_extensions as table
from envdoctor.model.findings import Fix, FixKind, Severity
from envdoctor.probes.torch_build import (
    ExtensionLoad,
    LoadStatus,
    TorchExtension,
    TorchFacts,
)
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import package_fix
from envdoctor.rules.torch import companions
from envdoctor.shell import join, quote
from envdoctor.util.pep503 import normalize_name
from envdoctor.util.records import record

# -- what an extension says it was built for -------------------------------------------------

_FLASH_TAG = re.compile(r"cu(\d+)torch(\d+\.\d+)cxx11abi(TRUE|FALSE)", re.IGNORECASE)
_PYG_TAG = re.compile(r"pt(\d)(\d+)(cu\d+|cpu)\b")
_CUDA_LABEL = re.compile(r"\bcu(\d{2,4})\b")
_CUDA_LIBRARY = re.compile(r"lib(?:cudart|cublas|cublasLt|cusparse|cufft|curand|cudnn|nvrtc)\.so\.(\d+)")
_TORCH_CUDA_LIBRARY = re.compile(r"lib(?:c10_cuda|torch_cuda\w*)\.so|c10_cuda\.dll|torch_cuda\w*\.dll")
_UNDEFINED = re.compile(r"undefined symbol: (\S+)|Symbol not found: (\S+)")
_NEW_ABI = re.compile(r"B5cxx11|__cxx11")
_OLD_ABI = re.compile(r"(?:RKSs|ESs|Ss[EIRKPS]|Ss$)")


def cuda_of(digits: str) -> str:
    """ "12.1" from "121" (a cuXXX label), "11.8" from "1108" (xformers' CUDA number)."""
    if len(digits) == 4:
        return f"{int(digits[:2])}.{int(digits[2:])}"
    return f"{digits[:-1]}.{digits[-1]}" if len(digits) > 1 else digits


def _major(cuda: str | None) -> str | None:
    return cuda.split(".", 1)[0] if cuda else None


@record
class BuiltAgainst:
    """The torch (a release "2.1.2" or a series "2.3"), CUDA and C++ ABI an extension was built for."""

    torch: str | None = None
    cuda: str | None = None
    cxx11_abi: bool | None = None
    how: str = ""  # where that was read, in words
    authoritative: bool = False  # the package's own table: it refuses other pairs itself
    variant: str | None = None  # the exact torch build ("cu118"), when a build-info file names it
    pin_only: bool = False  # only its Requires-Dist pin says so: ED205's to report, alone


def _tag_of(text: str) -> BuiltAgainst | None:
    flash = _FLASH_TAG.search(text)
    if flash:
        return BuiltAgainst(
            torch=flash.group(2),
            cuda=cuda_of(flash.group(1)),
            cxx11_abi=flash.group(3).upper() == "TRUE",
            how=f"its build tag {flash.group(0)}",
        )
    pyg = _PYG_TAG.search(text)
    if pyg:
        variant = pyg.group(3)
        return BuiltAgainst(
            torch=f"{pyg.group(1)}.{pyg.group(2)}",
            cuda=cuda_of(variant[2:]) if variant.startswith("cu") else None,
            how=f"its build tag {pyg.group(0)}",
        )
    return None


def _exact_pin(torch: TorchFacts, name: str) -> str | None:
    dist = torch.extensions.distribution(name) if torch.extensions is not None else None
    for text in dist.requires if dist is not None else ():
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        if normalize_name(requirement.name) != "torch" or requirement.marker is not None:
            continue
        for spec in requirement.specifier:
            if spec.operator in ("==", "===") and "*" not in spec.version:
                return spec.version
    return None


def built_against(torch: TorchFacts, ext: TorchExtension) -> BuiltAgainst | None:
    """What `ext` says it was built for, from the most direct evidence there is."""
    if ext.built_for is not None and ext.built_for.torch:
        label = companions.label_variant(ext.built_for.torch)
        cuda = cuda_of(label[2:]) if label and label.startswith("cu") else None
        if cuda is None and ext.built_for.cuda and ext.built_for.cuda.isdigit():
            cuda = cuda_of(ext.built_for.cuda)
        return BuiltAgainst(
            torch=ext.built_for.torch.split("+", 1)[0],
            cuda=cuda,
            how=f"its build-info file says PyTorch {ext.built_for.torch}",
            variant=label,
        )
    for text in (ext.version, (ext.source or "").rsplit("/", 1)[-1]):
        found = _tag_of(text) if text else None
        if found is not None:
            return found
    pinned = _exact_pin(torch, ext.name)
    if pinned:
        label = companions.label_variant(pinned)
        return BuiltAgainst(
            torch=pinned.split("+", 1)[0],
            cuda=cuda_of(label[2:]) if label and label.startswith("cu") else None,
            how=f"its metadata pins torch=={pinned}",
            pin_only=True,
        )
    paired = table.built_for(ext.name, ext.version)
    if paired:
        return BuiltAgainst(
            torch=paired, how=f"{ext.name} {ext.version} is built against torch {paired}", authoritative=True
        )
    tagged = _CUDA_LABEL.search(ext.version.split("+", 1)[1]) if "+" in ext.version else None
    if tagged:
        return BuiltAgainst(cuda=cuda_of(tagged.group(1)), how=f"its version label +{tagged.group(0)}")
    return None


def _release(version: str | None) -> tuple[int, ...]:
    try:
        return Version((version or "").split("+", 1)[0]).release
    except InvalidVersion:
        return ()


def other_torch(built: BuiltAgainst, installed: str | None) -> bool:
    """Whether the torch `built` names is not the installed one (a series "2.3" matches any 2.3.x)."""
    wanted, have = _release(built.torch), _release(installed)
    return bool(wanted and have) and have[: len(wanted)] != wanted


def other_cuda(built: BuiltAgainst, torch: TorchFacts) -> bool:
    """A CUDA major other than torch's, or a CUDA build beside a torch without CUDA."""
    if built.cuda is None or not torch.imported:
        return False
    if not torch.cuda:
        return not torch.hip  # a CUDA extension beside a CPU torch: its CUDA libraries are not there
    return _major(built.cuda) != _major(torch.cuda)


# -- why a load failed -------------------------------------------------------------------------


@record
class LoadCause:
    kind: str  # "symbol", "abi", "cuda", "cuda-torch", "crash", "other"
    words: str
    symbol: str | None = None


def load_cause(load: ExtensionLoad, torch: TorchFacts) -> LoadCause:
    message = load.error.message if load.error is not None else (load.note or "")
    if load.status in (LoadStatus.CRASHED, LoadStatus.TIMEOUT):
        return LoadCause("crash", f"loading it {load.status.value} the process: {message[:300]}")
    undefined = _UNDEFINED.search(message)
    if undefined:
        symbol = undefined.group(1) or undefined.group(2)
        if torch.cxx11_abi is True and _OLD_ABI.search(symbol) and not _NEW_ABI.search(symbol):
            return LoadCause("abi", "it needs a symbol with the pre-C++11 std::string", symbol)
        if torch.cxx11_abi is False and _NEW_ABI.search(symbol):
            return LoadCause("abi", "it needs a symbol with the C++11 std::string (__cxx11)", symbol)
        return LoadCause("symbol", f"undefined symbol {symbol}", symbol)
    library = _CUDA_LIBRARY.search(message)
    if library and torch.cuda and library.group(1) != _major(torch.cuda):
        return LoadCause("cuda", f"it needs CUDA {library.group(1)}'s {library.group(0)}")
    if _TORCH_CUDA_LIBRARY.search(message) and not torch.cuda:
        return LoadCause("cuda-torch", "it needs torch's CUDA libraries, which this torch build lacks")
    if "WinError 127" in message or "procedure could not be found" in message:
        return LoadCause("symbol", "a function it needs is missing from torch's DLLs (WinError 127)")
    first = message.strip().splitlines()[0] if message.strip() else load.status.value
    return LoadCause("other", first[:300])


def problem_loads(torch: TorchFacts, name: str) -> tuple[ExtensionLoad, ...]:
    if torch.extensions is None:
        return ()
    return tuple(load for load in torch.extensions.loads_of(name) if load.problem)


def _named(ext: TorchExtension) -> str:
    return f"{ext.name} {ext.version}".strip()


def _short(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


# -- fixes: a matching pair ------------------------------------------------------------------


def _pip(ctx: RuleContext) -> list[str]:
    return [ctx.interpreter.path, "-m", "pip"]


def extension_fix(ctx: RuleContext, torch: TorchFacts, ext: TorchExtension) -> Fix | None:
    """The extension's build for the installed torch, torch held as it is."""
    built = companions.torch_build(ctx, torch)
    if built is None:
        return None
    row = table.extension(ext.name)
    how = row.get if row is not None else "rebuild"
    hold = companions.installed_pin("torch", torch.dist_version or built.version)
    variant = built.variant
    major, minor = [*_release(built.public), 0, 0][:2]
    request: PackageRequest | None = None
    words = ""
    paired = table.release_for(ext.name, built.public) if row is not None and row.pairs else None
    if paired is not None:
        index = row.index.format(variant=variant) if row and row.index and variant else None
        request = PackageRequest((f"{ext.name}=={paired}",), index=index, hold=(hold,))
        words = f"{ext.name} {paired} is the release built against torch {built.public}"
    elif row is not None and how == "find_links" and row.find_links and variant:
        url = row.find_links.format(
            torch=f"{major}.{minor}.0", torch_minor=f"{major}.{minor}", variant=variant
        )
        options = ("--force-reinstall", "--no-deps", "--no-index")
        request = PackageRequest((ext.name,), find_links=url, options=options)
        words = f"from {url}, the page of builds for torch {major}.{minor} ({variant})"
    elif row is not None and how == "index" and row.index and variant:
        url = row.index.format(variant=variant)
        request = PackageRequest((ext.name,), index=url, hold=(hold,), options=("--upgrade",))
        words = f"from {url}; pip picks the release that accepts the installed torch, which stays as it is"
    if request is None and how in ("rebuild",):
        target = row.rebuild if row is not None and row.rebuild else ext.name
        if target == ext.name and ext.version:
            target = f"{ext.name}=={ext.version}"
        build: tuple[str, ...] = ("--no-build-isolation", "--no-deps", "--force-reinstall", "--no-cache-dir")
        build += tuple(row.build_options) if row is not None else ()
        request = PackageRequest((target,), options=build)
        words = (
            "built against the installed torch (--no-build-isolation: the build sees this torch, not a "
            "fresh one); a release with prebuilt wheels takes the one made for this torch"
        )
    if request is None:
        request = PackageRequest((ext.name,), hold=(hold,), options=("--upgrade",))
        words = "pip looks for a release that accepts the installed torch, keeping torch as it is"
    return package_fix(
        ctx, f"Keep torch {built.version} and install the {ext.name} built for it: {words}", request
    )


def torch_fix(ctx: RuleContext, torch: TorchFacts, ext: TorchExtension, built: BuiltAgainst) -> Fix | None:
    """The torch `ext` was built for, with its companions, from the planner."""
    if not built.torch:
        return None
    from envdoctor import knowledge

    release = knowledge.resolve_release(built.torch)
    installed = companions.torch_build(ctx, torch)
    if release is None or installed is None:
        return None
    variant = installed.variant
    if built.cuda:
        wanted = "cu" + built.cuda.replace(".", "")
        builds = release.builds(companions.platform_key(ctx))
        if builds is not None and wanted in builds.variants:
            variant = wanted
    if variant is None or (release.torch == installed.public and variant == installed.variant):
        return None
    return companions.pair_fix(
        ctx,
        f"Install torch {release.torch} ({variant}), the build {_named(ext)} was made for",
        release.torch,
        variant,
        companions.installed_companions(torch),
    )


# -- ED212 -----------------------------------------------------------------------------------


@record
class Mismatch:
    ext: TorchExtension
    built: BuiltAgainst | None
    loads: tuple[ExtensionLoad, ...]
    causes: tuple[LoadCause, ...]

    @property
    def abi(self) -> bool:
        return any(c.kind == "abi" for c in self.causes)


def _other_build(built: BuiltAgainst, torch: TorchFacts) -> bool:
    """The exact build a build-info file names ("2.0.1+cu118") is not this torch's build."""
    if built.variant is None or not torch.imported:
        return False
    mine = companions.label_variant(torch.version) or torch.variant
    return mine is not None and mine != built.variant


def mismatches(torch: TorchFacts) -> Iterator[Mismatch]:
    """The extensions that do not belong to this torch: a load failed, or what they say they were
    built for is another torch (or CUDA major). A torch pin alone is ED205's."""
    if torch.extensions is None or not torch.extensions.extensions:
        return
    from envdoctor.rules.torch.import_errors import explained_elsewhere

    installed = torch.version or torch.dist_version
    for ext in torch.extensions.extensions:
        built = built_against(torch, ext)
        failed = tuple(
            load
            for load in problem_loads(torch, ext.name)
            if load.error is None or not explained_elsewhere(load.error.message)
        )
        causes = tuple(load_cause(load, torch) for load in failed)
        loaded = bool(torch.extensions.loads_of(ext.name)) and not failed
        abi = bool(
            built is not None
            and built.cxx11_abi is not None
            and torch.cxx11_abi is not None
            and built.cxx11_abi != torch.cxx11_abi
        )
        if abi and built is not None:
            causes += (LoadCause("abi", f"{built.how} says the other C++ ABI"),)
        if failed or abi:
            yield Mismatch(ext, built, failed, causes)
            continue
        if built is None or built.pin_only:
            continue
        if (
            (_other_build(built, torch) and not loaded)
            or (other_torch(built, installed) and (built.authoritative or not loaded))
            or (other_cuda(built, torch) and not loaded)
        ):
            yield Mismatch(ext, built, (), ())


def _built_words(built: BuiltAgainst | None) -> str:
    if built is None:
        return ""
    parts = []
    if built.torch:
        parts.append(f"torch {built.torch}")
    if built.cuda:
        parts.append(f"CUDA {built.cuda}")
    return f" It was built for {' with '.join(parts)} ({built.how})." if parts else ""


@rule(
    code="ED212",
    name="extension-built-for-other-torch",
    severity=Severity.ERROR,
    summary="a torch extension (flash-attn, xformers, torch-scatter, mmcv, ...) was built for another torch",
    needs=(TorchFacts,),
    consequence_of=("ED213",),
    doc=RuleDoc(
        what="Every installed distribution whose compiled files link torch's libraries is loaded beside "
        "torch in the torch child (after the smoke test, each load under a watchdog), and what it says "
        "it was built for is read: its build tag (+cu122torch2.3, +pt23cu121), its build-info file, its "
        "exact torch pin, the release pairs envdoctor knows.",
        why="A compiled extension links one torch build. Beside another release its symbols do not "
        "resolve ('undefined symbol: _ZN3c104cuda9SetDeviceEi'), beside another CUDA major its CUDA "
        "libraries are missing, and some abort the interpreter; pip does not notice, because most "
        "extensions do not pin torch.",
        fix="Install a matching pair: the extension's build for the installed torch (torch held as it "
        "is: from its per-torch wheel page or index, or rebuilt with --no-build-isolation), or the "
        "torch it was built for, with torchvision and torchaudio, from the planner.",
        example="flash-attn 2.5.8 (wheels for torch 2.3) beside torch 2.2.0: 'flash_attn_2_cuda...so: "
        "undefined symbol: _ZN3c104cuda9SetDeviceEi' (Dao-AILab/flash-attention#931).",
    ),
)
def extension_built_for_other_torch(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    if not torch.installed:
        return
    installed = torch.version or torch.dist_version
    for found in mismatches(torch):
        if found.abi:
            continue  # ED213 names the C++ ABI
        ext = found.ext
        evidence = [f"torch {installed}", _named(ext)]
        said = ""
        for load, cause in zip(found.loads, found.causes):
            said = f" Loading {_short(load.file)} beside torch fails: {cause.words}."
            evidence.append(f"load {_short(load.file)}: {load.status.value}")
            if load.error is not None:
                evidence.append(
                    load.error.message.strip().splitlines()[0][:300] if load.error.message else ""
                )
            break
        if found.built is not None:
            evidence.append(found.built.how)
        fixes = [f for f in (extension_fix(ctx, torch, ext),) if f is not None]
        other = torch_fix(ctx, torch, ext, found.built) if found.built is not None else None
        if other is not None:
            # Its build-info file names the exact torch build: that torch is the surer way to a pair.
            if found.built is not None and found.built.variant is not None:
                fixes.insert(0, other)
            else:
                fixes.append(other)
        fixes.append(
            Fix(
                summary=f"When nothing here uses {ext.name} any more (a leftover build), uninstall it",
                commands=(join([*_pip(ctx), "uninstall", "-y", ext.name], ctx.platform.os),),
            )
        )
        yield Hit(
            title=f"{_named(ext)} was built for another torch than torch {installed}",
            detail=f"The compiled parts of {ext.name} link torch's libraries, and they fit one torch build "
            f"only.{said}{_built_words(found.built)} Every {ext.name} call that needs them fails (or "
            "the interpreter aborts) until the pair matches.",
            evidence=tuple(e for e in evidence if e),
            fixes=tuple(fixes),
        )


# -- ED213 -----------------------------------------------------------------------------------


@rule(
    code="ED213",
    name="extension-cxx11-abi-mismatch",
    severity=Severity.ERROR,
    summary="a torch extension was built with the other C++ ABI than torch (cxx11abiTRUE/FALSE)",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="torch._C._GLIBCXX_USE_CXX11_ABI against the extension's build tag (cxx11abiTRUE or "
        "cxx11abiFALSE) and against the std::string in the symbol its load could not find: "
        "'Ss' in a mangled name is the old ABI's std::string, '__cxx11' the new one's.",
        why="torch's Linux wheels switched to the C++11 ABI with 2.6.0+cu126 and 2.7; an extension "
        "compiled against an old-ABI torch (or a wheel picked with the wrong cxx11abi tag) needs "
        "functions that take the other std::string, which torch no longer exports: the import fails "
        "with an undefined symbol such as _ZN3c105ErrorC2ENS_14SourceLocationESs.",
        fix="Install the extension build with this torch's ABI flag (flash-attn: the "
        "cxx11abiTRUE/FALSE wheel, which `pip install --no-build-isolation` picks by itself), or "
        "compile it against the installed torch.",
        example="torch 2.7.0+cu128 (C++11 ABI) with flash-attn 2.7.4.post1 built for the old ABI: "
        "'undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationESs' (Dao-AILab/flash-attention#1644).",
    ),
)
def extension_cxx11_abi_mismatch(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    if not torch.installed:
        return
    installed = torch.version or torch.dist_version
    flag = {True: "TRUE", False: "FALSE", None: "(unknown)"}
    for found in mismatches(torch):
        if not found.abi:
            continue
        ext = found.ext
        cause = next(c for c in found.causes if c.kind == "abi")
        symbol = f" (the missing symbol is {cause.symbol})" if cause.symbol else ""
        evidence = [
            f"torch {installed}",
            f"torch._C._GLIBCXX_USE_CXX11_ABI = {torch.cxx11_abi}",
            _named(ext),
        ]
        if found.built is not None and found.built.cxx11_abi is not None:
            evidence.append(found.built.how)
        if cause.symbol:
            evidence.append(f"undefined symbol: {cause.symbol}")
        fix = extension_fix(ctx, torch, ext)
        want = flag[torch.cxx11_abi]
        yield Hit(
            title=f"{_named(ext)} was built with the other C++ ABI than torch {installed}",
            detail=f"torch {installed} is built with _GLIBCXX_USE_CXX11_ABI={int(bool(torch.cxx11_abi))}; "
            f"{ext.name}: {cause.words}{symbol}. A build for this torch carries the tag "
            f"cxx11abi{want}; a wheel with the other tag, or a build made against an older torch with "
            "the other ABI, cannot load.",
            evidence=tuple(evidence),
            fixes=(fix,) if fix is not None else (),
        )


# -- ED214 -----------------------------------------------------------------------------------


@rule(
    code="ED214",
    name="extension-needs-torch-imported-first",
    severity=Severity.INFO,
    summary="a compiled torch extension importable on its own needs `import torch` before it",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="Compiled extension modules that sit directly in a sys.path folder (a setup.py build of a "
        "cpp_extension: trilinear, smtl_cuda) and link torch's libraries, with no Python package of "
        "their own that would import torch first.",
        why="Such a module finds libc10.so and THPVariableClass only once torch has loaded them: "
        "`import trilinear` before `import torch` fails with 'libc10.so: cannot open shared object "
        "file' or 'undefined symbol: THPVariableClass', although both are installed right.",
        fix="Import torch before the extension module in every program that uses it.",
        example="ImportError: libc10.so: cannot open shared object file, from `import trilinear` in a "
        "script that imports torch later (HuiZeng/Image-Adaptive-3DLUT#28).",
    ),
)
def extension_needs_torch_imported_first(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    if not torch.imported or torch.extensions is None:
        return
    for ext in torch.extensions.extensions or ():
        if ext.python_package or not ext.top_level:
            continue
        modules = ", ".join(ext.top_level)
        first = ext.top_level[0]
        yield Hit(
            title=f"import torch before {modules} ({_named(ext)})",
            detail=f"{modules} is a compiled torch extension that Python imports directly, and it "
            "needs torch's libraries (libc10, libtorch_python) already loaded: imported first it "
            "fails with 'libc10.so: cannot open shared object file' or 'undefined symbol: "
            "THPVariableClass'.",
            evidence=(f"{ext.name} {ext.version}: top-level module {first} links torch",),
            fixes=(Fix(summary=f"Import torch first: `import torch` before `import {first}`"),),
        )


# -- ED215 -----------------------------------------------------------------------------------


def _lite(row: table.ExtensionRow, version: str) -> bool:
    """A release of the lite package (mmcv 1.x); one whose version is not known counts as lite."""
    if row.lite_before is None:
        return False
    try:
        return Version(version.split("+", 1)[0]) < Version(row.lite_before)
    except InvalidVersion:
        return True


@rule(
    code="ED215",
    name="extension-without-compiled-ops",
    severity=Severity.ERROR,
    summary="a torch extension is installed without its compiled ops (apex without --cuda_ext, mmcv lite)",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="Extensions whose use depends on compiled ops (knowledge/torch_extensions.json: apex, "
        "mmcv) installed with no compiled file at all, or as the lite package (mmcv 1.x, whose ops "
        "come with mmcv-full).",
        why="The package imports, but the first op that needs its compiled part fails with "
        "'No module named fused_layer_norm_cuda' or 'No module named mmcv._ext', deep inside a model.",
        fix="Reinstall it with its ops: apex built with --cpp_ext and --cuda_ext against the "
        "installed torch; mmcv-full (or mmcv 2.x) from OpenMMLab's page for this torch and CUDA.",
        example="`pip install mmcv` (1.x, lite) for mmdetection: 'ModuleNotFoundError: No module named "
        "mmcv._ext' (open-mmlab/mmdetection#3272).",
    ),
)
def extension_without_compiled_ops(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    if not torch.installed or torch.extensions is None:
        return
    for ext in torch.extensions.extensions or ():
        row = table.extension(ext.name)
        if row is None or row.ops is None or ext.error is not None:
            continue
        if ext.compiled_files:
            continue
        lite = _lite(row, ext.version)
        modules = ", ".join(row.modules) or "its compiled ops"
        fixes: list[Fix] = []
        if lite and row.instead:
            instead = table.extension(row.instead)
            swap = TorchExtension(name=row.instead, version="")
            install = extension_fix(ctx, torch, swap) if instead is not None else None
            fixes.append(
                Fix(
                    summary=f"Replace {_named(ext)} (the lite package) with {row.instead}, "
                    "built for this torch",
                    commands=(
                        join([*_pip(ctx), "uninstall", "-y", ext.name], ctx.platform.os),
                        *(install.commands if install is not None else ()),
                    ),
                    kind=FixKind.INSTALL,
                )
            )
            what = f"{_named(ext)} is the lite package: {modules} come with {row.instead}"
        else:
            install = extension_fix(ctx, torch, ext)
            if install is not None:
                fixes.append(install)
            what = f"{_named(ext)} has no compiled file at all: {modules} are missing"
        yield Hit(
            title=f"{_named(ext)} is installed without its compiled ops",
            detail=f"{what}. Importing {ext.name} works, but the first op that needs them fails with "
            f"'No module named {row.modules[0] if row.modules else ext.name}'.",
            evidence=(f"{ext.name} {ext.version}: {ext.compiled_files} compiled files",),
            fixes=tuple(fixes),
        )


# -- ED216 -----------------------------------------------------------------------------------

STALE_LOCK_SECONDS = 600.0  # a build holds its lock for minutes at most


def _remove(ctx: RuleContext, path: str, folder: bool) -> str:
    if ctx.platform.os == "windows":
        return f"Remove-Item {'-Recurse ' if folder else ''}-Force {quote(path, 'windows')}"
    return f"rm {'-rf' if folder else '-f'} {quote(path, ctx.platform.os)}"


@rule(
    code="ED216",
    name="jit-extension-cache-stale",
    severity=Severity.WARNING,
    summary="a JIT extension cache holds a lock left by an interrupted build, or builds older than torch",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="The build folders of torch.utils.cpp_extension's cache (~/.cache/torch_extensions or "
        "$TORCH_EXTENSIONS_DIR, keyed by Python and CUDA but not by torch release) and of the other "
        "caches the knowledge names: a lock file older than ten minutes, and libraries built before "
        "the installed torch.",
        why="An interrupted build leaves its lock, and the next cpp_extension.load waits on it for "
        "ever ('Loading extension module packbits_cpp...'); a library built against the previous "
        "torch is loaded again after an upgrade and fails with a cryptic symbol error.",
        fix="Delete the lock file (when no build is running) or the stale build folder: the next load "
        "builds it again against the installed torch.",
        example="RAGatouille stuck at 'Loading packbits_cpp extension' until ~/.cache/torch_extensions "
        "was cleared (AnswerDotAI/RAGatouille#245).",
    ),
)
def jit_extension_cache_stale(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    jit = torch.extensions.jit if torch.extensions is not None else None
    if jit is None:
        return
    for cache in jit.caches:
        for entry in cache.entries:
            name = _short(entry.path)
            if entry.lock is not None and jit.now is not None and jit.now - entry.lock > STALE_LOCK_SECONDS:
                minutes = int((jit.now - entry.lock) // 60)
                lock = entry.path.rstrip("/\\") + ("\\lock" if ctx.platform.os == "windows" else "/lock")
                yield Hit(
                    title=f"{cache.tool}: the build of {name} left its lock {minutes} minutes ago",
                    detail=f"{entry.path} holds a lock file from a build that did not finish. The next "
                    f"load of {name} waits on it without end ('Loading extension module {name}...').",
                    evidence=(f"{lock} (age {minutes} min)",),
                    fixes=(
                        Fix(
                            summary="When no build is running, delete the lock (or the whole folder, "
                            "which rebuilds it)",
                            commands=(_remove(ctx, lock, False),),
                        ),
                    ),
                )
            elif (
                entry.built is not None
                and jit.torch_installed is not None
                and entry.built < jit.torch_installed - 60
            ):
                yield Hit(
                    title=f"{cache.tool}: {name} was built before the installed torch",
                    detail=f"{entry.path} holds a library built against the torch installed before "
                    f"this one; the cache is not keyed by torch release, so it may be loaded again and "
                    "fail with an undefined symbol.",
                    evidence=(f"{entry.path}: built before torch {torch.version or torch.dist_version}",),
                    fixes=(
                        Fix(
                            summary="Delete the stale build: the next load builds it against this torch",
                            commands=(_remove(ctx, entry.path, True),),
                        ),
                    ),
                )
