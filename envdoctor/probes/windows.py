"""The Windows runtime torch loads into: VC++ redistributable, DLL copies, and a real DLL load.

Facts only: the v14 redistributable as the registry records it (both views); the file versions of
msvcp140.dll, vcruntime140.dll and vcruntime140_1.dll in System32 and of every copy in the
folders searched before it (torch\\lib, python.exe's folder) or after it (torch's DLL directories,
the environment, PATH); libiomp5md.dll copies; CUDA DLLs on PATH next to torch's own; Store
Python and the long-path setting; and what loading torch's DLLs in the target interpreter
(child/dll_probe.py) did. Also what other packages bring into the same process: msvcp140.dll
copies bundled in site-packages (the Qt bindings, pyzmq, ...), the CUDA DLLs of other frameworks
(the nvidia-* wheels, TensorRT) and their versions, the MKL DLLs and which scheme torch was
installed in (environment, user, a --target folder), and whether the OpenMP workaround variable is
set. On other systems it stops at once (NotApplicable).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import ntpath
from collections.abc import Mapping
from typing import Any

from envdoctor.host.base import ChildOutcome, Host
from envdoctor.host.ending import ending_of_outcome
from envdoctor.knowledge import cuda_libraries
from envdoctor.knowledge import windows as knowledge
from envdoctor.model.ending import EndingKind
from envdoctor.model.findings import TextEnum
from envdoctor.probes.base import NotApplicable, ProbeContext, ProbeSpec
from envdoctor.util.limits import small_int
from envdoctor.util.records import record

_CHILD_TIMEOUT = 30.0

# Where a DLL copy sits, in the order the loader would reach it for torch (windows.json cites it).
TORCH_LIB = "torch_lib"
APP_DIR = "app_dir"
SYSTEM32 = "system32"
DLL_DIRECTORY = "dll_directory"
ENV = "env"
PATH = "path"
PACKAGE = "package"  # inside a Python package in site-packages (DllFile.package names it)
OTHER = "other"  # anywhere else (NVIDIA's own cuDNN install folder)

# Which scheme torch was installed in (pip's words): the environment's site-packages, the user's
# (pip --user), or another folder (pip --target, an add-on's own dependency folder).
SCOPE_ENVIRONMENT = "environment"
SCOPE_USER = "user"
SCOPE_TARGET = "target"


class DllStatus(TextEnum):
    OK = "ok"
    FAILED = "failed"  # a DLL did not load: the failures say which and why
    NO_TORCH = "no_torch"  # no torch\\lib to load
    NOT_WINDOWS = "not_windows"
    ERROR = "error"  # the check itself raised
    CRASHED = "crashed"  # the child died while loading (last_dll names the DLL)
    TIMEOUT = "timeout"
    NOT_RUN = "not_run"  # the interpreter could not be started


# How the child ended when it gave no report -> the load status.
_STATUS_BY_ENDING = {
    EndingKind.TIMEOUT: DllStatus.TIMEOUT,
    EndingKind.NOT_STARTED: DllStatus.NOT_RUN,
    EndingKind.SIGNAL: DllStatus.CRASHED,
    EndingKind.EXITED: DllStatus.CRASHED,
}


@record
class RedistRegistration:
    view: int  # 64 or 32: the registry view the key was read in
    installed: bool | None = None
    version: str | None = None  # "14.40.33810.0"


@record
class DllFile:
    name: str  # lower-case base name
    path: str
    version: str | None = None
    origin: str = PATH  # torch_lib, app_dir, system32, dll_directory, env, path, package
    path_index: int | None = None  # position on PATH when origin is path
    package: str | None = None  # the Python package whose folder holds it, when origin is package


@record
class Distribution:
    name: str
    version: str


@record
class DllFailure:
    dll: str
    winerror: int | None = None
    message: str = ""


@record
class DllLoadFacts:
    """What loading torch\\lib's DLLs in the target interpreter did."""

    status: DllStatus
    torch_lib: str | None = None
    dll_directories: tuple[str, ...] = ()
    attempted: int = 0
    loaded: int = 0
    failures: tuple[DllFailure, ...] = ()
    via_path: tuple[str, ...] = ()  # loaded only through torch's PATH fallback after error 126
    modules: tuple[DllFile, ...] = ()  # runtime/CUDA modules mapped into the process, with files
    app_dir: str | None = None
    site_packages: tuple[str, ...] = ()
    last_dll: str | None = None  # the DLL being loaded when the child died or hung
    error: str | None = None
    exec_prefix: str | None = None
    base_exec_prefix: str | None = None  # differs from exec_prefix inside a venv
    userbase: str | None = None  # pip --user's scheme: <userbase>\\Library\\bin holds its DLLs
    user_site: str | None = None
    distributions: tuple[Distribution, ...] = ()  # the frameworks asked about that are installed
    # Folders (that exist) today's torch adds to its DLL search and the installed release does not.
    missed_directories: tuple[str, ...] = ()

    def distribution(self, name: str) -> str | None:
        key = name.lower().replace("_", "-")
        return next((d.version for d in self.distributions if d.name.lower() == key), None)

    @property
    def first_failure(self) -> DllFailure | None:
        return self.failures[0] if self.failures else None

    def module(self, name: str) -> DllFile | None:
        for module in self.modules:
            if module.name == name:
                return module
        return None


@record
class WindowsFacts:
    system32: str
    dll_load: DllLoadFacts
    redist: tuple[RedistRegistration, ...] = ()
    runtime_files: tuple[DllFile, ...] = ()  # the VC++ runtime DLLs wherever found
    openmp_files: tuple[DllFile, ...] = ()  # libiomp5md.dll copies torch could meet
    cuda_dlls_on_path: tuple[DllFile, ...] = ()  # in PATH folders, System32 among them
    torch_cuda_dlls: tuple[DllFile, ...] = ()
    store_python: bool = False
    long_paths_enabled: bool | None = None
    torch_dir: str | None = None
    path: tuple[str, ...] = ()  # PATH entries in order (fixes edit it)
    errors: tuple[str, ...] = ()
    bundled_runtime: tuple[DllFile, ...] = ()  # msvcp140.dll copies inside site-packages packages
    package_cuda_dlls: tuple[DllFile, ...] = ()  # CUDA DLLs in other frameworks' package folders
    mkl_files: tuple[DllFile, ...] = ()  # mkl_*.dll in the Library\\bin folders of the schemes
    install_scope: str | None = None  # environment, user or target; None: torch not found
    openmp_workaround: str | None = None  # the value of KMP_DUPLICATE_LIB_OK when it is set

    def runtime(self, name: str, origin: str | None = None) -> tuple[DllFile, ...]:
        return tuple(
            f for f in self.runtime_files if f.name == name and (origin is None or f.origin == origin)
        )

    @property
    def redist_version(self) -> str | None:
        """The newest version the registry records as installed."""
        best: str | None = None
        for registration in self.redist:
            version = knowledge.file_version(registration.version)
            if version is None or registration.installed is False:
                continue
            if best is None or version > (knowledge.file_version(best) or version):
                best = registration.version
        return best


def _str_list(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(str(v) for v in value if isinstance(v, str))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _dll_load(
    outcome: ChildOutcome, timeout: float = _CHILD_TIMEOUT
) -> tuple[DllLoadFacts, Mapping[str, Any]]:
    """The child's report as facts (module files get versions and origins later)."""
    reports = [r for r in outcome.records if r.get("record") == "dll"]
    stages = [str(r.get("dll")) for r in outcome.records if r.get("record") == "stage"]
    if not reports:
        ending = ending_of_outcome(outcome, limit=timeout)
        status = _STATUS_BY_ENDING[ending.kind]
        said = ending.last_output(width=300) if status == DllStatus.CRASHED else ""
        error = f"the DLL check {ending.describe()}" + (f": {said}" if said else "")
        return DllLoadFacts(status=status, last_dll=stages[-1] if stages else None, error=error), {}
    raw = reports[-1]
    failures = tuple(
        DllFailure(str(f.get("dll")), _int(f.get("winerror")), str(f.get("message", "")))
        for f in raw.get("failures") or ()
        if isinstance(f, Mapping)
    )
    app_path = raw.get("app_path")
    facts = DllLoadFacts(
        status=DllStatus.parse(raw.get("status"), DllStatus.ERROR),
        torch_lib=raw.get("torch_lib") if isinstance(raw.get("torch_lib"), str) else None,
        dll_directories=_str_list(raw.get("dll_directories")),
        attempted=_int(raw.get("attempted")) or 0,
        loaded=_int(raw.get("loaded")) or 0,
        failures=failures,
        via_path=_str_list(raw.get("via_path")),
        app_dir=ntpath.dirname(app_path) if isinstance(app_path, str) else None,
        site_packages=_str_list(raw.get("site_packages")),
        last_dll=stages[-1] if stages and raw.get("status") == "error" else None,
        error=raw.get("error") if isinstance(raw.get("error"), str) else None,
        exec_prefix=_text(raw.get("exec_prefix")),
        base_exec_prefix=_text(raw.get("base_exec_prefix")),
        userbase=_text(raw.get("userbase")),
        user_site=_text(raw.get("user_site")),
        distributions=_distributions(raw.get("distributions")),
        missed_directories=_str_list(raw.get("missed_directories")),
    )
    return facts, raw


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _distributions(value: Any) -> tuple[Distribution, ...]:
    if not isinstance(value, Mapping):
        return ()
    return tuple(
        Distribution(str(name), str(version))
        for name, version in sorted(value.items())
        if isinstance(name, str) and isinstance(version, str)
    )


def _redist(host: Host) -> tuple[tuple[RedistRegistration, ...], list[str]]:
    info = knowledge.vc_redist()
    found = []
    errors = []
    for view in info.registry_views:
        try:
            values = host.registry_values(info.registry_key, view)
        except (OSError, ValueError) as exc:
            errors.append(f"registry {info.registry_key} ({view}-bit view): {exc}")
            continue
        if values is None:
            continue
        installed = values.get("Installed")
        version = values.get("Version")
        text = str(version).strip().lstrip("vV") if isinstance(version, str) and version.strip() else None
        if text is None and all(isinstance(values.get(k), int) for k in ("Major", "Minor", "Bld")):
            rbld = values.get("Rbld", 0)
            text = f"{values['Major']}.{values['Minor']}.{values['Bld']}.{rbld}"
        if text is not None:
            # "14.40.33810.00" -> "14.40.33810.0": the form file versions use
            text = ".".join(str(small_int(p)) if small_int(p) is not None else p for p in text.split("."))
        found.append(
            RedistRegistration(
                view=view,
                installed=bool(installed) if isinstance(installed, int) else None,
                version=text,
            )
        )
    return tuple(found), errors


def _long_paths(host: Host) -> bool | None:
    try:
        values = host.registry_values(knowledge.path_limits().long_paths_key, 64)
    except (OSError, ValueError):
        return None
    if values is None:
        return None
    enabled = values.get("LongPathsEnabled")
    return bool(enabled) if isinstance(enabled, int) else False


class _Scanner:
    """Lists each folder once and keeps the DLLs torch cares about, with file versions."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.seen: set[str] = set()
        self.runtime: list[DllFile] = []
        self.openmp: list[DllFile] = []
        self.cuda: list[DllFile] = []
        runtime_names = knowledge.vc_redist().runtime_dlls
        self.runtime_names = {n.lower() for n in runtime_names}
        self.openmp_name = knowledge.openmp_dll().lower()

    def scan(self, folder: str | None, origin: str, index: int | None = None) -> None:
        if not folder:
            return
        key = folder.rstrip("\\/").lower()
        if key in self.seen:
            return
        self.seen.add(key)
        try:
            names = self.host.list_dir(folder)
        except OSError:
            return
        for name in names:
            lower = name.lower()
            if not lower.endswith(".dll"):
                continue
            if lower in self.runtime_names:
                self.runtime.append(self._file(folder, name, origin, index))
            elif lower == self.openmp_name:
                self.openmp.append(self._file(folder, name, origin, index))
            elif (
                origin in (TORCH_LIB, SYSTEM32, PATH)
                and cuda_libraries.family_of(name, "windows") is not None
            ):
                self.cuda.append(self._file(folder, name, origin, index))

    def _file(self, folder: str, name: str, origin: str, index: int | None) -> DllFile:
        path = ntpath.join(folder, name)
        return DllFile(name.lower(), path, self.host.file_version(path), origin, index)


def _dll_names(host: Host, folder: str) -> tuple[str, ...]:
    """The DLL file names in `folder`; nothing when it is not there (is_dir asks without failing)."""
    if not host.is_dir(folder):
        return ()
    try:
        return tuple(n for n in host.list_dir(folder) if n.lower().endswith(".dll"))
    except OSError:
        return ()


def _site_folders(load: DllLoadFacts, torch_dir: str | None) -> list[str]:
    """The site-packages folders of the examined Python, and the one torch sits in."""
    found: list[str] = []
    for folder in (*load.site_packages, ntpath.dirname(torch_dir) if torch_dir else None):
        if folder and folder.rstrip("\\").lower() not in {f.rstrip("\\").lower() for f in found}:
            found.append(folder)
    return found


def _bundled_runtime(host: Host, sites: list[str]) -> tuple[DllFile, ...]:
    """msvcp140.dll copies that packages carry under its plain name (windows.json bundled_runtime):
    the one a package loads when imported is the one every later DLL in the process gets."""
    info = knowledge.bundled_runtime()
    found: list[DllFile] = []
    for site in sites:
        folders = [(ntpath.join(site, f.folder), f.package) for f in info.folders]
        if host.is_dir(site):
            try:
                names = host.list_dir(site)
            except OSError:
                names = ()
            folders += [
                (ntpath.join(site, n), n[: -len(info.vendored_suffix)])
                for n in names
                if n.lower().endswith(info.vendored_suffix)
            ]
        for folder, package in folders:
            for name in _dll_names(host, folder):
                if name.lower() == info.dll:
                    path = ntpath.join(folder, name)
                    found.append(DllFile(info.dll, path, host.file_version(path), PACKAGE, None, package))
    return tuple(found)


def _expand(host: Host, root: str, pattern: str) -> list[str]:
    """The folders under `root` that `pattern` names, one folder level per "*" ("nvidia\\*\\bin");
    listing only folders that are there."""
    folders = [root]
    for part in pattern.split("\\"):
        if not part:
            continue
        if "*" not in part:
            folders = [ntpath.join(f, part) for f in folders]
            continue
        deeper: list[str] = []
        for folder in folders:
            if not host.is_dir(folder):
                continue
            try:
                names = host.list_dir(folder)
            except OSError:
                continue
            deeper += [ntpath.join(folder, n) for n in names if fnmatch.fnmatch(n.lower(), part.lower())]
        folders = deeper
    return folders


def _package_cuda_dlls(host: Host, sites: list[str], program_files: str) -> tuple[DllFile, ...]:
    """CUDA DLLs other frameworks load: site-packages\\nvidia\\<lib>\\bin (the nvidia-* wheels
    Paddle and ONNX Runtime use), tensorrt_libs, and NVIDIA's own cuDNN install folders."""
    info = knowledge.frameworks()
    places = [(site, pattern) for site in sites for pattern in info.dll_folders]
    places += [(program_files, pattern) for pattern in info.system_dll_folders]
    found: list[DllFile] = []
    for root, pattern in places:
        for folder in _expand(host, root, pattern):
            inside = folder[len(root) :].strip("\\").split("\\")
            in_site = root in sites
            package = inside[0] if in_site and inside[0] else None
            origin = PACKAGE if in_site else OTHER
            for name in _dll_names(host, folder):
                if cuda_libraries.family_of(name, "windows") is not None:
                    path = ntpath.join(folder, name)
                    found.append(DllFile(name.lower(), path, host.file_version(path), origin, None, package))
    return tuple(found)


def _install_scope(load: DllLoadFacts, torch_dir: str | None) -> str | None:
    if not torch_dir:
        return None
    where = ntpath.dirname(torch_dir).rstrip("\\").lower()
    user = (load.user_site or "").rstrip("\\").lower()
    if user and where == user:
        return SCOPE_USER
    environment = [s.rstrip("\\").lower() for s in load.site_packages if s.rstrip("\\").lower() != user]
    if not environment or where in environment:
        return SCOPE_ENVIRONMENT
    return SCOPE_TARGET


def _origin_of(path: str, known: Mapping[str, tuple[str, int | None]]) -> tuple[str, int | None]:
    return known.get(ntpath.dirname(path).rstrip("\\").lower(), ("other", None))


def collect(ctx: ProbeContext) -> WindowsFacts:
    host = ctx.host
    if host.platform().system != "Windows":
        raise NotApplicable("this is not Windows")
    info = ctx.target.info
    # Most of the probe's time, so that a hang is reported as this area's fact, not lost to the
    # probe's deadline (--timeout 5 used to leave a 30 s child behind).
    timeout = ctx.options.child_limit(PROBE.timeout, _CHILD_TIMEOUT, share=0.75)
    asked = tuple(f.dist for f in knowledge.frameworks().packages)
    outcome = host.python_json(ctx.target.interpreter.path, "dll_probe.py", asked, timeout)
    dll_load, raw = _dll_load(outcome, timeout)
    system_root = host.env.get("SystemRoot") or host.env.get("SYSTEMROOT") or "C:\\Windows"
    system32 = ntpath.join(system_root, "System32")
    redist, errors = _redist(host)

    torch_lib = dll_load.torch_lib
    if torch_lib is None:
        guess = ntpath.join(info.prefix, "Lib", "site-packages", "torch", "lib")
        torch_lib = guess if host.is_dir(guess) else None
    app_dir = dll_load.app_dir or ntpath.dirname(info.executable)
    scanner = _Scanner(host)
    scanner.scan(torch_lib, TORCH_LIB)
    scanner.scan(app_dir, APP_DIR)
    scanner.scan(system32, SYSTEM32)
    for directory in dll_load.dll_directories:
        scanner.scan(directory, DLL_DIRECTORY)
    scanner.scan(info.prefix, ENV)
    scanner.scan(ntpath.join(info.prefix, "Library", "bin"), ENV)
    path_value = host.env.get("PATH") or host.env.get("Path") or ""
    entries = [p.strip().strip('"') for p in path_value.split(";") if p.strip()]
    for index, entry in enumerate(entries):
        scanner.scan(entry, PATH, index)
    torch_dir = ntpath.dirname(torch_lib) if torch_lib else None
    scope = _install_scope(dll_load, torch_dir)
    # The MKL DLLs of a --user or --target install live in that scheme's own Library\\bin.
    schemes = [ntpath.join(info.prefix, "Library", "bin")]
    if dll_load.userbase:
        schemes.append(ntpath.join(dll_load.userbase, "Library", "bin"))
    if scope == SCOPE_TARGET and torch_dir:
        schemes.append(ntpath.join(ntpath.dirname(torch_dir), "Library", "bin"))
    mkl = [
        DllFile(name.lower(), ntpath.join(folder, name), None, ENV)
        for folder in schemes
        for name in _dll_names(host, folder)
        if name.lower().startswith(knowledge.user_install_mkl().mkl_prefix)
    ]
    sites = _site_folders(dll_load, torch_dir)

    # Each module the child saw loaded gets its file version and the origin of its folder.
    known: dict[str, tuple[str, int | None]] = {}
    for file in [*scanner.runtime, *scanner.openmp, *scanner.cuda]:
        known.setdefault(ntpath.dirname(file.path).rstrip("\\").lower(), (file.origin, file.path_index))
    for folder, origin in ((torch_lib, TORCH_LIB), (app_dir, APP_DIR), (system32, SYSTEM32)):
        if folder:
            known.setdefault(folder.rstrip("\\").lower(), (origin, None))
    modules = []
    for path in _str_list(raw.get("modules")):
        origin, position = _origin_of(path, known)
        modules.append(
            DllFile(ntpath.basename(path).lower(), path, host.file_version(path), origin, position)
        )
    if modules:
        dll_load = dataclasses.replace(dll_load, modules=tuple(modules))

    markers = knowledge.path_limits().store_python_markers
    where = " ".join([ctx.target.interpreter.path, info.executable, info.prefix, app_dir])
    # System32 is on PATH too (and searched before it): a cuDNN copied there shadows like one on PATH.
    cuda_on_path = tuple(f for f in scanner.cuda if f.origin in (SYSTEM32, PATH))
    return WindowsFacts(
        system32=system32,
        dll_load=dll_load,
        redist=redist,
        runtime_files=tuple(scanner.runtime),
        openmp_files=tuple(scanner.openmp),
        cuda_dlls_on_path=cuda_on_path,
        torch_cuda_dlls=tuple(f for f in scanner.cuda if f.origin == TORCH_LIB),
        store_python=any(m.lower() in where.lower() for m in markers),
        long_paths_enabled=_long_paths(host),
        torch_dir=torch_dir,
        path=tuple(entries),
        errors=tuple(errors),
        bundled_runtime=_bundled_runtime(host, sites),
        package_cuda_dlls=_package_cuda_dlls(
            host, sites, host.env.get("ProgramFiles") or "C:\\Program Files"
        ),
        mkl_files=tuple(mkl),
        install_scope=scope,
        openmp_workaround=host.env.get(knowledge.openmp().workaround_variable) or None,
    )


def describe(facts: WindowsFacts) -> str:
    parts = []
    redist = facts.redist_version
    parts.append(f"VC++ runtime {redist}" if redist else "VC++ v14 redistributable not registered")
    system_msvcp = facts.runtime("msvcp140.dll", SYSTEM32)
    if system_msvcp and system_msvcp[0].version and system_msvcp[0].version != redist:
        parts.append(f"System32 msvcp140.dll {system_msvcp[0].version}")
    load = facts.dll_load
    if load.status == DllStatus.OK:
        parts.append(f"torch's {load.loaded} DLLs load")
    elif load.status == DllStatus.FAILED and load.first_failure is not None:
        first = load.first_failure
        parts.append(f"{first.dll} fails to load (WinError {first.winerror})")
    elif load.status == DllStatus.NO_TORCH:
        parts.append("no torch\\lib to load")
    else:
        parts.append(f"DLL check {load.status}")
    if facts.store_python:
        parts.append("Microsoft Store Python")
    return ", ".join(parts)


PROBE = ProbeSpec(
    name="windows",
    title="Windows runtime",
    facts_type=WindowsFacts,
    collect=collect,
    describe=describe,
    timeout=40.0,
    slow=True,
)
