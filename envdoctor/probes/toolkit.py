"""CUDA toolkits the environment can see, and the search paths that decide which CUDA libraries load.

Facts only: every toolkit (nvcc on PATH, CUDA_HOME, CUDA_PATH, CUDA_PATH_Vx_y, the default
install folders, conda's cuda-nvcc), the CUDA bin folders on PATH in order, the toolkit
torch.utils.cpp_extension would pick, the CUDA libraries in LD_LIBRARY_PATH folders and the ones
torch's nvidia-* wheels (and torch/lib) bundle; and what compiling an extension needs besides the
toolkit: the host compiler nvcc would run, ninja, the Python headers, an x64 MSVC environment,
TORCH_CUDA_ARCH_LIST and room in the temporary folder. At most three short subprocesses
(`nvcc --version`, once per real file, and the host compiler's `--version` where an nvcc is
there to use it; each bounded, none after one hangs).
"""

from __future__ import annotations

import json
import ntpath
import posixpath
import re
from dataclasses import replace
from types import ModuleType

from envdoctor.host.base import CommandResult, Host
from envdoctor.host.ending import ending_of_result
from envdoctor.knowledge import cuda_libraries
from envdoctor.model.ending import EndingKind
from envdoctor.probes.base import CheckOptions, NotApplicable, ProbeContext, ProbeSpec
from envdoctor.util.limits import small_int
from envdoctor.util.records import record

_NVCC_TIMEOUT = 10.0
_RELEASE = re.compile(r"release (\d+\.\d+)(?:, V(\d+(?:\.\d+)+))?")
_FOLDER_VERSION = re.compile(r"(?:^|[-_vV])(\d+\.\d+)$")
_CUDA_PATH_VERSIONED = re.compile(r"^CUDA_PATH_V(\d+)_(\d+)$", re.IGNORECASE)
_CONDA_PACKAGE = re.compile(
    r"^(cuda-nvcc|cudatoolkit|cuda-toolkit|cuda-cudart|cuda-version)-(\d[^-]*)-[^-]+\.json$"
)
_WRAPPER_TARGET = re.compile(r"(/[^\s'\"]*/bin/nvcc)\b")
_LOOKS_CUDA = re.compile(r"cuda|nvidia gpu computing toolkit", re.IGNORECASE)
# "gcc (GCC) 13.2.1 20231011 (Red Hat 13.2.1-4)", "gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0"
_GCC_VERSION = re.compile(r"\)\s+(\d+\.\d+(?:\.\d+)?)\b")
_CLANG_VERSION = re.compile(r"clang version (\d+\.\d+(?:\.\d+)?)")
_ANY_VERSION = re.compile(r"\b(\d+\.\d+\.\d+)\b")


@record
class NvccRun:
    """`nvcc --version` of the nvcc found on PATH."""

    path: str
    resolved: str
    wrapper_for: str | None = None  # a small script on PATH that execs this nvcc
    release: str | None = None  # "13.0"
    build: str | None = None  # "13.0.88"
    error: str | None = None


@record
class Toolkit:
    root: str
    version: str | None = None  # "12.4.1" or "12.4"
    version_from: str | None = None  # version.json, version.txt, nvcc --version, folder name, conda
    found_by: tuple[str, ...] = ()
    exists: bool = True
    has_nvcc: bool = False
    has_headers: bool = False  # include/cuda_runtime.h: what compiling an extension needs

    @property
    def major(self) -> int | None:
        head = (self.version or "").split(".")[0]
        return small_int(head)

    @property
    def major_minor(self) -> str | None:
        parts = (self.version or "").split(".")
        return ".".join(parts[:2]) if len(parts) >= 2 else None


@record
class EnvSetting:
    name: str
    value: str


@record
class CudaBinEntry:
    """A PATH entry that is (or was) a CUDA toolkit's bin folder."""

    index: int  # position on PATH, 0 first
    path: str
    exists: bool
    has_nvcc: bool
    version: str | None = None
    duplicate_of: int | None = None  # index of the earlier, identical entry


@record
class CudaHome:
    """The toolkit torch.utils.cpp_extension would compile extensions with, and why that one."""

    path: str
    chosen_by: str  # CUDA_HOME, CUDA_PATH, nvcc on PATH, default location
    exists: bool
    has_nvcc: bool
    has_headers: bool
    version: str | None = None


@record
class LibraryCopy:
    """CUDA libraries of one family in one folder: a loader-path entry or a bundled wheel."""

    family: str  # cudnn, cublas, nccl, nvjitlink, cudart, cusparse
    directory: str
    resolved: str
    files: tuple[str, ...]
    version: str | None = None  # the most precise version the names (or the wheel) tell
    package: str | None = None  # for bundled copies: the wheel's dist-info folder
    position: int | None = None  # for loader-path copies: the LD_LIBRARY_PATH index


@record
class CondaPackage:
    name: str
    version: str


@record
class HostCompiler:
    """The compiler nvcc runs for host code on Linux: $CC (torch's cpp_extension passes it as
    -ccbin), else $NVCC_CCBIN, else gcc on PATH."""

    path: str
    chosen_by: str  # CC, NVCC_CCBIN, gcc on PATH
    family: str | None = None  # gcc, clang
    version: str | None = None  # "13.2.1"
    error: str | None = None

    @property
    def major(self) -> int | None:
        return small_int((self.version or "").split(".")[0])


@record
class Ninja:
    """Where torch.utils.cpp_extension's `ninja --version` would find ninja: on PATH, and whether
    the examined environment has one of its own (`pip install ninja` puts it in its bin folder)."""

    on_path: str | None = None
    in_environment: str | None = None


@record
class MsvcEnvironment:
    """The Visual Studio developer environment of the shell (Windows): the architecture it targets
    and the cl.exe a build runs."""

    target_arch: str | None = None  # VSCMD_ARG_TGT_ARCH: x64, x86, arm64
    host_arch: str | None = None  # VSCMD_ARG_HOST_ARCH
    cl_on_path: str | None = None


@record
class PythonHeaders:
    """Where the examined Python's C headers belong (its base installation's include folder) and
    whether Python.h is there: extension builds and Triton's launcher compile against it."""

    include: str
    has_python_h: bool


@record
class TempSpace:
    """The temporary folder pip unpacks wheels in and nvcc writes its intermediate files to."""

    path: str
    chosen_by: str  # TMPDIR, TEMP, TMP, default
    free_bytes: int | None = None
    total_bytes: int | None = None


@record
class InstalledPackage:
    """A package in the examined environment's site-packages that loads CUDA libraries by soname."""

    name: str
    version: str


@record
class BuildRequirements:
    """The [build-system] requires of the project in the current folder that name torch: an
    isolated build (pip's and uv's default) installs those into a throwaway environment."""

    path: str
    torch: tuple[str, ...]  # the requirement strings that name torch, as written


@record
class ToolkitFacts:
    os: str
    shell: str | None = None  # basename of $SHELL, for fix commands
    path: tuple[str, ...] = ()
    ld_library_path: tuple[str, ...] = ()
    cuda_env: tuple[EnvSetting, ...] = ()
    nvcc: NvccRun | None = None
    toolkits: tuple[Toolkit, ...] = ()
    cuda_bins: tuple[CudaBinEntry, ...] = ()
    cuda_home: CudaHome | None = None
    loader_path_libraries: tuple[LibraryCopy, ...] = ()
    bundled_libraries: tuple[LibraryCopy, ...] = ()
    site_packages: tuple[str, ...] = ()
    conda_packages: tuple[CondaPackage, ...] = ()
    errors: tuple[str, ...] = ()
    # What an extension build needs besides the toolkit. None: not looked at (an older snapshot,
    # or not applicable here), which rules never read as "missing".
    host_compiler: HostCompiler | None = None
    ninja: Ninja | None = None
    msvc: MsvcEnvironment | None = None
    python_headers: PythonHeaders | None = None
    temp: TempSpace | None = None
    torch_cuda_arch_list: str | None = None  # TORCH_CUDA_ARCH_LIST as the environment sets it
    soname_users: tuple[InstalledPackage, ...] = ()
    # The cuDNN libraries in the loader's own folders (/usr/lib/<triplet>, the ld.so.conf.d
    # folders); read where a package needs cuDNN by soname or torch's cuDNN wheel is installed.
    system_libraries: tuple[LibraryCopy, ...] = ()
    build_requirements: BuildRequirements | None = None

    def env_value(self, name: str) -> str | None:
        for setting in self.cuda_env:
            if setting.name == name:
                return setting.value
        return None


class _Paths:
    """Path arithmetic for the examined OS, which need not be the OS envdoctor runs on."""

    def __init__(self, windows: bool) -> None:
        self.windows = windows
        self.mod: ModuleType = ntpath if windows else posixpath
        self.sep = ";" if windows else ":"

    def join(self, *parts: str) -> str:
        return str(self.mod.join(*parts))

    def dirname(self, path: str) -> str:
        return str(self.mod.dirname(path))

    def basename(self, path: str) -> str:
        return str(self.mod.basename(path))

    def norm(self, path: str) -> str:
        """A comparison key: trailing separators dropped, case folded on Windows."""
        path = path.rstrip("\\/") or path
        return path.lower().replace("/", "\\") if self.windows else path

    def exe(self, name: str) -> str:
        return f"{name}.exe" if self.windows else name


def _split(value: str | None, paths: _Paths) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(part.strip().strip('"') for part in value.split(paths.sep) if part.strip())


def _read_json(host: Host, path: str) -> object:
    try:
        return json.loads(host.read_text(path))
    except (OSError, ValueError):
        return None


def _toolkit_version(host: Host, root: str, paths: _Paths) -> tuple[str | None, str | None]:
    data = _read_json(host, paths.join(root, "version.json"))
    if isinstance(data, dict):
        cuda = data.get("cuda")
        if isinstance(cuda, dict) and isinstance(cuda.get("version"), str):
            return cuda["version"], "version.json"
    try:
        text = host.read_text(paths.join(root, "version.txt"))
    except OSError:
        text = ""
    match = re.search(r"CUDA Version (\d+(?:\.\d+)+)", text)
    if match:
        return match.group(1), "version.txt"
    folder = _FOLDER_VERSION.search(paths.basename(root.rstrip("\\/")))
    if folder:
        return folder.group(1), "folder name"
    return None, None


class _Nvcc:
    """Runs `nvcc --version` at most once per real file, each run bounded; after one hangs, no
    other is started (a hang means a stuck file system or driver, and the probe's time is short)."""

    def __init__(self, host: Host, timeout: float) -> None:
        self.host = host
        self.timeout = timeout
        self.runs: dict[str, tuple[str | None, str | None, str | None]] = {}
        self.hung: str | None = None

    def version(self, nvcc: str) -> tuple[str | None, str | None, str | None]:
        """(release, build, error) from `nvcc --version`."""
        real = self.host.realpath(nvcc)
        if real in self.runs:
            return self.runs[real]
        if self.hung is not None:
            return None, None, f"{nvcc} --version not run: {self.hung} --version hung before"
        result = self.host.run([nvcc, "--version"], self.timeout)
        self.runs[real] = found = _nvcc_outcome(nvcc, result, self.timeout)
        if result.timed_out:
            self.hung = nvcc
        return found


def _nvcc_outcome(
    nvcc: str, result: CommandResult, timeout: float
) -> tuple[str | None, str | None, str | None]:
    if not result.ok:
        ending = ending_of_result(result, limit=timeout)
        said = ending.last_output(width=300) if ending.kind is not EndingKind.TIMEOUT else ""
        # The path names which nvcc hung (PATH's or CUDA_HOME's may be another file).
        shown = nvcc if ending.kind is EndingKind.TIMEOUT else "nvcc"
        return None, None, f"{shown} --version {ending.describe()}" + (f": {said}" if said else "")
    match = _RELEASE.search(result.stdout)
    if not match:
        return None, None, "nvcc --version printed no release number"
    return match.group(1), match.group(2), None


def nvcc_timeout(options: CheckOptions) -> float:
    """A third of the probe's time, at most 10 s: two runs and the rest of the probe still fit."""
    return options.child_limit(PROBE.timeout, _NVCC_TIMEOUT, share=1 / 3)


def _wrapper_target(host: Host, nvcc: str, paths: _Paths) -> tuple[bool, str | None]:
    """(is a script, the nvcc it runs) for a small script on PATH such as /usr/local/bin/nvcc
    holding `exec /usr/local/cuda-13.0/bin/nvcc "$@"`.

    Only read when nvcc's folder is not inside a toolkit, so a real 30 MB nvcc is never read.
    """
    root = paths.dirname(paths.dirname(nvcc))
    if paths.windows or host.exists(paths.join(root, "include", "cuda_runtime.h")):
        return False, None
    try:
        text = host.read_text(nvcc)
    except OSError:
        return False, None
    if not text.startswith("#!") or len(text) > 4096:
        return False, None
    match = _WRAPPER_TARGET.search(text)
    return True, (match.group(1) if match else None)


class _Collector:
    """Gathers toolkits under one key per real folder, merging how each was found."""

    def __init__(self, host: Host, paths: _Paths) -> None:
        self.host = host
        self.paths = paths
        self.order: list[str] = []
        self.roots: dict[str, str] = {}
        self.found_by: dict[str, list[str]] = {}
        self.versions: dict[str, tuple[str, str]] = {}

    def key(self, root: str) -> str:
        return self.paths.norm(self.host.realpath(root))

    def add(self, root: str, how: str, version: tuple[str, str] | None = None) -> None:
        key = self.key(root)
        if key not in self.roots:
            self.order.append(key)
            self.roots[key] = self.host.realpath(root)
            self.found_by[key] = []
        if how not in self.found_by[key]:
            self.found_by[key].append(how)
        if version is not None and key not in self.versions:
            self.versions[key] = version

    def toolkits(self) -> tuple[Toolkit, ...]:
        found = []
        for key in self.order:
            root = self.roots[key]
            exists = self.host.is_dir(root)
            # The toolkit's own version file is the most precise; then nvcc or conda; then the name.
            version, version_from = _toolkit_version(self.host, root, self.paths) if exists else (None, None)
            if version_from not in ("version.json", "version.txt") and key in self.versions:
                version, version_from = self.versions[key]
            found.append(
                Toolkit(
                    root=root,
                    version=version,
                    version_from=version_from,
                    found_by=tuple(self.found_by[key]),
                    exists=exists,
                    has_nvcc=self.host.exists(self.paths.join(root, "bin", self.paths.exe("nvcc"))),
                    has_headers=self.host.exists(self.paths.join(root, "include", "cuda_runtime.h")),
                )
            )
        return tuple(found)


def _cuda_env(host: Host) -> tuple[EnvSetting, ...]:
    names = ["CUDA_HOME", "CUDA_PATH"]
    names += sorted(n for n in host.env if _CUDA_PATH_VERSIONED.match(n) and n not in names)
    return tuple(EnvSetting(n, host.env[n]) for n in names if host.env.get(n))


def _default_roots(host: Host, paths: _Paths) -> tuple[str, ...]:
    if paths.windows:
        program_files = host.env.get("ProgramFiles", "C:\\Program Files")
        base = paths.join(program_files, "NVIDIA GPU Computing Toolkit", "CUDA")
        try:
            names = host.list_dir(base)
        except OSError:
            return ()
        return tuple(paths.join(base, n) for n in names if re.match(r"^v\d+\.\d+$", n))
    try:
        names = host.list_dir("/usr/local")
    except OSError:
        return ()
    return tuple(f"/usr/local/{n}" for n in names if re.match(r"^cuda(-\d+(\.\d+)*)?$", n))


def _conda_packages(host: Host, prefix: str, paths: _Paths) -> tuple[CondaPackage, ...]:
    try:
        names = host.list_dir(paths.join(prefix, "conda-meta"))
    except OSError:
        return ()
    found = []
    for name in names:
        match = _CONDA_PACKAGE.match(name)
        if match:
            found.append(CondaPackage(match.group(1), match.group(2)))
    return tuple(found)


def _cuda_bins(
    host: Host, entries: tuple[str, ...], paths: _Paths, nvcc: NvccRun | None
) -> tuple[CudaBinEntry, ...]:
    found: list[CudaBinEntry] = []
    first_seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        key = paths.norm(entry)
        exists = host.is_dir(entry)
        has_nvcc = exists and host.exists(paths.join(entry, paths.exe("nvcc")))
        earlier = first_seen.get(key)
        if earlier is None:
            first_seen[key] = index
        if not has_nvcc and (exists or not _LOOKS_CUDA.search(entry)):
            continue  # an ordinary folder, or a missing one that was never CUDA's
        version = None
        if has_nvcc:
            root = paths.dirname(entry.rstrip("\\/"))
            version, _ = _toolkit_version(host, host.realpath(root), paths)
            if nvcc is not None and nvcc.release and paths.norm(paths.dirname(nvcc.resolved)) == key:
                version = version or nvcc.release
        found.append(CudaBinEntry(index, entry, exists, has_nvcc, version, earlier))
    return tuple(found)


def _library_copies(
    host: Host, directory: str, os_name: str, position: int | None = None
) -> tuple[LibraryCopy, ...]:
    try:
        names = host.list_dir(directory)
    except OSError:
        return ()
    by_family: dict[str, list[tuple[str, str | None]]] = {}
    for name in names:
        known = cuda_libraries.family_of(name, os_name)
        if known is not None:
            by_family.setdefault(known[0], []).append((name, known[1]))
    copies = []
    resolved = host.realpath(directory)
    for family, files in by_family.items():
        versions = [v for _, v in files if v]
        best = max(versions, key=lambda v: (v.count("."), v), default=None)
        copies.append(
            LibraryCopy(
                family=family,
                directory=directory,
                resolved=resolved,
                files=tuple(sorted(n for n, _ in files)),
                version=best,
                position=position,
            )
        )
    return tuple(copies)


def _site_packages(host: Host, prefix: str, paths: _Paths) -> tuple[str, ...]:
    if paths.windows:
        candidate = paths.join(prefix, "Lib", "site-packages")
        return (candidate,) if host.is_dir(candidate) else ()
    found = []
    for lib in ("lib", "lib64"):
        try:
            names = host.list_dir(f"{prefix}/{lib}")
        except OSError:
            continue
        for name in names:
            candidate = f"{prefix}/{lib}/{name}/site-packages"
            if name.startswith("python") and host.is_dir(candidate):
                found.append(candidate)
    unique: dict[str, str] = {}
    for candidate in found:
        unique.setdefault(host.realpath(candidate), candidate)
    return tuple(unique.values())


def _bundled(host: Host, site_packages: tuple[str, ...], os_name: str) -> tuple[LibraryCopy, ...]:
    """The CUDA libraries of torch's nvidia-* wheels: site-packages/nvidia/<lib>/lib."""
    copies: list[LibraryCopy] = []
    for site in site_packages:
        try:
            entries = host.list_dir(site)
        except OSError:
            continue
        wheels: dict[str, tuple[str, str]] = {}
        for name in entries:
            known = cuda_libraries.wheel_family(name)
            if known is not None:
                wheels[known[0]] = (name, known[1])
        torch_lib = f"{site}/torch/lib"
        if "torch" in entries and host.is_dir(torch_lib):
            # torch <= 1.13 (and some builds since) carry cuDNN, cuBLAS and NCCL in torch/lib itself.
            copies += [replace(c, package="torch") for c in _library_copies(host, torch_lib, os_name)]
        if "nvidia" not in entries:
            continue
        try:
            subdirs = host.list_dir(f"{site}/nvidia")
        except OSError:
            continue
        for sub in subdirs:
            for copy in _library_copies(host, f"{site}/nvidia/{sub}/lib", os_name):
                wheel = wheels.get(copy.family)
                if wheel is not None:
                    copy = LibraryCopy(
                        family=copy.family,
                        directory=copy.directory,
                        resolved=copy.resolved,
                        files=copy.files,
                        version=wheel[1],
                        package=wheel[0],
                    )
                copies.append(copy)
    return tuple(copies)


def _cuda_home(
    host: Host, paths: _Paths, nvcc: NvccRun | None, toolkits: tuple[Toolkit, ...], defaults: tuple[str, ...]
) -> tuple[CudaHome | None, bool]:
    """What torch.utils.cpp_extension._find_cuda_home would return; and whether nvcc must be run."""
    variables, linux_default, _ = cuda_libraries.cpp_extension_defaults()
    chosen: tuple[str, str] | None = None
    for name in variables:
        value = host.env.get(name)
        if value:
            chosen = (value, name)
            break
    if chosen is None and nvcc is not None:
        # cpp_extension takes the folder above nvcc's as found on PATH, links unresolved.
        chosen = (paths.dirname(paths.dirname(nvcc.path)), "nvcc on PATH")
    if chosen is None:
        windows_roots = sorted(d for d in defaults if paths.windows)
        default = windows_roots[0] if windows_roots else (None if paths.windows else linux_default)
        if default is not None and host.exists(default):
            chosen = (default, "default location")
    if chosen is None:
        return None, False
    root, how = chosen
    exists = host.is_dir(root)
    nvcc_path = paths.join(root, "bin", paths.exe("nvcc"))
    has_nvcc = exists and host.exists(nvcc_path)
    version = None
    key = paths.norm(host.realpath(root))
    for toolkit in toolkits:
        if paths.norm(toolkit.root) == key:
            version = toolkit.version
    same_nvcc = nvcc is not None and paths.norm(host.realpath(nvcc_path)) == paths.norm(nvcc.resolved)
    if version is None and same_nvcc and nvcc is not None:
        version = nvcc.release
    home = CudaHome(
        path=root,
        chosen_by=how,
        exists=exists,
        has_nvcc=has_nvcc,
        has_headers=exists and host.exists(paths.join(root, "include", "cuda_runtime.h")),
        version=version,
    )
    return home, has_nvcc and version is None


def _compiler_version(result: CommandResult) -> tuple[str | None, str | None]:
    """(family, version) from a compiler's `--version`; the family is None when the output names none."""
    first = (result.stdout or result.stderr).strip().splitlines()[:1]
    line = first[0] if first else ""
    clang = _CLANG_VERSION.search(line)
    if clang:
        return "clang", clang.group(1)
    gcc = _GCC_VERSION.search(line) or _ANY_VERSION.search(line)
    family = "gcc" if re.search(r"gcc|g\+\+|GCC", line) else None
    return family, (gcc.group(1) if gcc else None)


def _host_compiler(host: Host, runner: _Nvcc) -> HostCompiler | None:
    """The host compiler nvcc would run, and its version; None when none is named or on PATH, or
    when an earlier `--version` hung (the machine is stuck; its errors already say so)."""
    if runner.hung is not None:
        return None
    for name in ("CC", "NVCC_CCBIN"):
        value = (host.env.get(name) or "").strip()
        if value:
            chosen: tuple[str, str] = (value, name)
            break
    else:
        found = host.which("gcc")
        if found is None:
            return None
        chosen = (found, "gcc on PATH")
    program, how = chosen
    result = host.run([program, "--version"], runner.timeout)
    if result.timed_out:
        runner.hung = program
    if not result.ok:
        ending = ending_of_result(result, limit=runner.timeout)
        return HostCompiler(program, how, error=f"{program} --version {ending.describe()}")
    family, version = _compiler_version(result)
    return HostCompiler(program, how, family, version)


def _first_on_path(host: Host, entries: tuple[str, ...], name: str, paths: _Paths) -> str | None:
    """The first `name` in the PATH folders, as a shell would find it (existence only: nothing runs)."""
    for entry in entries:
        candidate = paths.join(entry, paths.exe(name))
        if host.exists(candidate):
            return candidate
    return None


def _ninja(host: Host, entries: tuple[str, ...], ctx: ProbeContext, paths: _Paths) -> Ninja:
    prefix = ctx.target.info.prefix
    folders = (
        [paths.join(prefix, "Scripts"), paths.join(prefix, "Library", "bin"), prefix]
        if paths.windows
        else [paths.join(prefix, "bin")]
    )
    own = next((p for f in folders if host.exists(p := paths.join(f, paths.exe("ninja")))), None)
    return Ninja(on_path=_first_on_path(host, entries, "ninja", paths), in_environment=own)


def _base_prefix(host: Host, ctx: ProbeContext, paths: _Paths) -> str:
    """The installation a venv was made from: pyvenv.cfg's `home` names its folder of python."""
    info = ctx.target.info
    config = paths.join(info.prefix, "pyvenv.cfg")
    if not info.is_venv or not host.exists(config):
        return info.prefix
    try:
        text = host.read_text(config, max_bytes=64 * 1024)
    except OSError:
        return info.prefix
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip().lower() == "home" and value.strip():
            home = value.strip().rstrip("\\/")
            # Windows keeps python.exe in the installation's own folder; POSIX in its bin folder.
            return home if paths.windows else paths.dirname(home)
    return info.prefix


def _python_headers(host: Host, ctx: ProbeContext, paths: _Paths) -> PythonHeaders | None:
    info = ctx.target.info
    parts = info.version.split(".")
    # Windows installers always bring the headers; Linux distributions split them into a -dev
    # package. PyPy and others keep theirs elsewhere.
    if paths.windows or len(parts) < 2 or info.implementation != "CPython":
        return None
    base = _base_prefix(host, ctx, paths)
    abi = "t" if info.free_threaded else ""
    include = paths.join(base, "include", f"python{parts[0]}.{parts[1]}{abi}")
    return PythonHeaders(include, host.exists(paths.join(include, "Python.h")))


def _temp(host: Host, paths: _Paths) -> TempSpace | None:
    names = ("TMPDIR", "TEMP", "TMP") if paths.windows else ("TMPDIR",)
    chosen = next(((host.env[n], n) for n in names if host.env.get(n)), None)
    if chosen is None:
        if paths.windows:
            return None  # Windows always sets TEMP; without it there is nothing to name
        chosen = ("/tmp", "default")
    path, how = chosen
    usage = host.disk_usage(path)
    return TempSpace(path, how, usage.free_bytes if usage else None, usage.total_bytes if usage else None)


def _msvc(host: Host, entries: tuple[str, ...], paths: _Paths) -> MsvcEnvironment | None:
    if not paths.windows:
        return None
    target = host.env.get("VSCMD_ARG_TGT_ARCH")
    cl = _first_on_path(host, entries, "cl", paths)
    if target is None and cl is None:
        return None
    return MsvcEnvironment(target, host.env.get("VSCMD_ARG_HOST_ARCH"), cl)


_SYSTEM_LIBRARY_FOLDERS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
)
_DIST_INFO = re.compile(r"^([A-Za-z0-9_.]+)-(\d[^-]*)\.dist-info$")


def _soname_users(host: Host, site_packages: tuple[str, ...]) -> tuple[InstalledPackage, ...]:
    wanted = {name.lower().replace("-", "_"): name for name in cuda_libraries.soname_loader_names()}
    found = []
    for site in site_packages:
        try:
            names = host.list_dir(site)
        except OSError:
            continue
        for name in names:
            match = _DIST_INFO.match(name)
            key = match.group(1).lower().replace("-", "_") if match else None
            if match and key in wanted:
                found.append(InstalledPackage(wanted[key], match.group(2)))
    return tuple(found)


def _ld_so_conf_folders(host: Host) -> tuple[str, ...]:
    """The folders /etc/ld.so.conf.d/*.conf add to the loader's search (include lines not followed)."""
    base = "/etc/ld.so.conf.d"
    if not host.is_dir(base):
        return ()
    folders: list[str] = []
    try:
        names = sorted(host.list_dir(base))
    except OSError:
        return ()
    for name in names:
        if not name.endswith(".conf"):
            continue
        try:
            text = host.read_text(f"{base}/{name}", max_bytes=64 * 1024)
        except OSError:
            continue
        for line in text.splitlines():
            entry = line.split("#", 1)[0].strip()
            if entry.startswith("/") and entry not in folders:
                folders.append(entry)
    return tuple(folders)


def _system_libraries(host: Host, os_name: str) -> tuple[LibraryCopy, ...]:
    copies: list[LibraryCopy] = []
    for folder in (*_ld_so_conf_folders(host), *_SYSTEM_LIBRARY_FOLDERS):
        if host.is_dir(folder):
            copies += [c for c in _library_copies(host, folder, os_name) if c.family == "cudnn"]
    return tuple(copies)


def _build_requirements(host: Host, paths: _Paths) -> BuildRequirements | None:
    from envdoctor.probes.config_files import ConfigSyntaxError, parse_toml

    path = paths.join(host.cwd(), "pyproject.toml")
    if not host.exists(path):
        return None
    try:
        data = parse_toml(host.read_text(path, max_bytes=1024 * 1024))
    except (OSError, ConfigSyntaxError, UnicodeDecodeError):
        return None
    system = data.get("build-system")
    requires = system.get("requires") if isinstance(system, dict) else None
    if not isinstance(requires, list):
        return None
    torch = tuple(r for r in requires if isinstance(r, str) and re.match(r"^\s*torch\b(?![-_.\w])", r))
    return BuildRequirements(path, torch) if torch else None


def collect(ctx: ProbeContext) -> ToolkitFacts:
    host = ctx.host
    plat = host.platform()
    if plat.os == "macos":
        raise NotApplicable("CUDA toolkits are not available for macOS")
    paths = _Paths(plat.os == "windows")
    env = host.env
    path_entries = _split(env.get("PATH") or env.get("Path"), paths)
    ld_entries = () if paths.windows else _split(env.get("LD_LIBRARY_PATH"), paths)
    errors: list[str] = []
    collector = _Collector(host, paths)

    nvcc: NvccRun | None = None
    runner = _Nvcc(host, nvcc_timeout(ctx.options))
    found = host.which("nvcc")
    if found:
        resolved = host.realpath(found)
        is_script, wrapper = _wrapper_target(host, resolved, paths)
        release, build, error = runner.version(found)
        if error:
            errors.append(error)
        nvcc = NvccRun(found, resolved, wrapper, release, build, error)
        real_nvcc = host.realpath(wrapper) if wrapper else resolved
        root = paths.dirname(paths.dirname(real_nvcc))
        if wrapper is not None or not is_script:  # a script we cannot follow names no toolkit
            version = (release, "nvcc --version") if release else None
            collector.add(root, "nvcc on PATH", version)

    cuda_env = _cuda_env(host)
    for setting in cuda_env:
        collector.add(setting.value, setting.name)

    defaults = _default_roots(host, paths)
    for root in defaults:
        collector.add(root, "default location")

    conda = _conda_packages(host, ctx.target.info.prefix, paths)
    if any(p.name == "cuda-nvcc" for p in conda):
        prefix = ctx.target.info.prefix
        conda_root = paths.join(prefix, "Library") if paths.windows else prefix
        nvcc_package = next(p for p in conda if p.name == "cuda-nvcc")
        collector.add(conda_root, "conda package cuda-nvcc", (nvcc_package.version, "conda-meta"))

    toolkits = collector.toolkits()
    home, run_home_nvcc = _cuda_home(host, paths, nvcc, toolkits, defaults)
    if home is not None and run_home_nvcc:
        release, _, error = runner.version(paths.join(home.path, "bin", paths.exe("nvcc")))
        if error:
            errors.append(f"CUDA_HOME {error}")
        home = CudaHome(home.path, home.chosen_by, home.exists, home.has_nvcc, home.has_headers, release)

    loader = tuple(
        copy
        for index, entry in enumerate(ld_entries)
        for copy in _library_copies(host, entry, plat.os, index)
    )
    # nvcc needs a host compiler only where there is an nvcc to run (Windows builds use cl.exe).
    has_nvcc = nvcc is not None or (home is not None and home.has_nvcc)
    compiler = _host_compiler(host, runner) if has_nvcc and not paths.windows else None
    if compiler is not None and compiler.error and " hung" in compiler.error:
        errors.append(compiler.error)
    site_packages = () if paths.windows else _site_packages(host, ctx.target.info.prefix, paths)
    soname_users = _soname_users(host, site_packages)
    bundled = _bundled(host, site_packages, plat.os)
    # The loader's own folders: where a package that loads cuDNN by soname finds it (ED422), and
    # where the sub-libraries torch's cuDNN wheel lacks come from (ED424).
    wheel_cudnn = any(c.family == "cudnn" for c in bundled)
    shell = env.get("SHELL")
    return ToolkitFacts(
        os=plat.os,
        shell=posixpath.basename(shell) if shell and not paths.windows else None,
        path=path_entries,
        ld_library_path=ld_entries,
        cuda_env=cuda_env,
        nvcc=nvcc,
        toolkits=toolkits,
        cuda_bins=_cuda_bins(host, path_entries, paths, nvcc),
        cuda_home=home,
        loader_path_libraries=loader,
        bundled_libraries=bundled,
        site_packages=site_packages,
        conda_packages=conda,
        errors=tuple(errors),
        host_compiler=compiler,
        ninja=_ninja(host, path_entries, ctx, paths),
        msvc=_msvc(host, path_entries, paths),
        python_headers=_python_headers(host, ctx, paths),
        temp=_temp(host, paths),
        torch_cuda_arch_list=env.get("TORCH_CUDA_ARCH_LIST"),
        soname_users=soname_users,
        system_libraries=_system_libraries(host, plat.os) if soname_users or wheel_cudnn else (),
        build_requirements=_build_requirements(host, paths),
    )


def describe(facts: ToolkitFacts) -> str:
    real = [t for t in facts.toolkits if t.exists]
    if not real and facts.nvcc is None:
        return "no CUDA toolkit (not needed to run torch wheels)"
    parts = []
    for toolkit in real:
        version = f"CUDA {toolkit.version}" if toolkit.version else "CUDA (version unknown)"
        how = ", ".join(toolkit.found_by)
        parts.append(f"{version} at {toolkit.root} ({how})")
    if facts.nvcc is not None and not any("nvcc on PATH" in t.found_by for t in real):
        release = facts.nvcc.release or "?"
        parts.append(f"nvcc {release} on PATH ({facts.nvcc.path})")
    # What hung or failed is named on the area line: otherwise a stuck nvcc is invisible.
    parts.extend(e for e in facts.errors if " hung" in e)
    return "; ".join(parts)


PROBE = ProbeSpec(
    name="toolkit",
    title="CUDA toolkit",
    facts_type=ToolkitFacts,
    collect=collect,
    describe=describe,
    timeout=15.0,
)
