"""Windows runtime facts as typed queries: the VC++ redistributable, torch's DLL loading, path limits.

Data: windows.json beside this file (sources cited there, per table).
"""

from __future__ import annotations

from functools import cache

from packaging.version import Version

from envdoctor.knowledge import load_table, parse_version
from envdoctor.knowledge.provenance import Provenance, provenance
from envdoctor.util.records import record

_TABLE = "windows.json"


@record
class VcRedist:
    registry_key: str
    registry_views: tuple[int, ...]
    download: str
    silent_install: str
    winget_id: str
    runtime_dlls: tuple[str, ...]
    vcruntime140_1_from: Version  # the first redistributable that ships vcruntime140_1.dll (2019)


@record
class RuntimeMinimum:
    """From torch `torch` on, `dll` must be at least `minimum` (with the caveat to state)."""

    torch: Version
    dll: str
    minimum: Version
    error: str
    caveat: str
    provenance: Provenance

    @property
    def source(self) -> tuple[str, ...]:
        return self.provenance.source


@record
class DeeperFiles:
    """torch releases whose deepest installed file is not in the torch folder: the dist-info's
    license tree (2.13 on), the caffe2 package of torch 1.x."""

    torch_from: Version
    torch_through: Version | None
    length: int | None = None  # below site-packages
    dist_info_licenses: int | None = None  # below the dist-info folder, whose name has the version
    nightly_dist_info_name: int | None = None  # that folder's name for a nightly, when none is installed


@record
class PathLimits:
    max_path: int
    torch_longest_relative_path: int
    long_paths_key: str
    store_python_markers: tuple[str, ...]
    deeper: tuple[DeeperFiles, ...] = ()

    def torch_longest(self, torch_version: str | None) -> int:
        """The length below site-packages of the deepest file torch `torch_version` installs; for
        None (torch not installed yet), of the current releases, counted with a nightly's name."""
        longest = self.torch_longest_relative_path
        wanted = parse_version((torch_version or "").split("+", 1)[0])
        if wanted is None or not torch_version:
            for row in self.deeper:
                if row.torch_through is None and row.dist_info_licenses and row.nightly_dist_info_name:
                    longest = max(longest, row.nightly_dist_info_name + 1 + row.dist_info_licenses)
            return longest
        for row in self.deeper:
            if wanted < row.torch_from or (row.torch_through is not None and wanted > row.torch_through):
                continue
            if row.length is not None:
                longest = max(longest, row.length)
            if row.dist_info_licenses is not None:
                longest = max(longest, len(f"torch-{torch_version}.dist-info") + 1 + row.dist_info_licenses)
        return longest


@cache
def vc_redist() -> VcRedist:
    row = load_table(_TABLE)["vc_redist"]
    return VcRedist(
        registry_key=row["registry_key"],
        registry_views=tuple(int(v) for v in row["registry_views"]),
        download=row["download"],
        silent_install=row["silent_install"],
        winget_id=row["winget_id"],
        runtime_dlls=tuple(row["runtime_dlls"]),
        vcruntime140_1_from=Version(row["vcruntime140_1_from"]),
    )


@cache
def _minimums() -> tuple[RuntimeMinimum, ...]:
    return tuple(
        RuntimeMinimum(
            torch=Version(row["torch"]),
            dll=row["dll"],
            minimum=Version(row["minimum"]),
            error=row["error"],
            caveat=row["caveat"],
            provenance=provenance(row),
        )
        for row in load_table(_TABLE)["runtime_minimums"]
    )


def runtime_minimum(torch_version: str | None, dll: str = "msvcp140.dll") -> RuntimeMinimum | None:
    """The floor `dll` must meet for this torch ("2.9.1+cu128"); None when none is known."""
    wanted = parse_version((torch_version or "").split("+", 1)[0])
    if wanted is None:
        return None
    found = [m for m in _minimums() if m.dll == dll and wanted >= m.torch]
    return max(found, key=lambda m: m.torch, default=None)


def winerror_meaning(code: int) -> str | None:
    meaning = load_table(_TABLE)["dll_loading"]["winerrors"].get(str(code))
    return str(meaning) if meaning is not None else None


def loads_before_system32(origin: str) -> bool:
    """Whether a DLL copy found in `origin` (torch_lib, app_dir, ...) is mapped before System32's."""
    return origin in load_table(_TABLE)["dll_loading"]["loads_before_system32"]


@cache
def path_limits() -> PathLimits:
    row = load_table(_TABLE)["paths"]
    return PathLimits(
        max_path=int(row["max_path"]),
        torch_longest_relative_path=int(row["torch_longest_relative_path"]),
        long_paths_key=row["long_paths_key"],
        store_python_markers=tuple(row["store_python_markers"]),
        deeper=tuple(
            DeeperFiles(
                torch_from=Version(r["torch_from"]),
                torch_through=Version(r["torch_through"]) if r.get("torch_through") else None,
                length=r.get("length"),
                dist_info_licenses=r.get("dist_info_licenses"),
                nightly_dist_info_name=r.get("nightly_dist_info_name"),
            )
            for r in row.get("deeper") or ()
        ),
    )


def openmp_dll() -> str:
    return str(load_table(_TABLE)["openmp"]["dll"])


@record
class OpenMp:
    dll: str
    error: str
    workaround_variable: str  # KMP_DUPLICATE_LIB_OK: the workaround, never the fix
    intel_words: str  # what Intel's own message says of that workaround
    provenance: Provenance


@cache
def openmp() -> OpenMp:
    row = load_table(_TABLE)["openmp"]
    return OpenMp(
        dll=row["dll"],
        error=row["error"],
        workaround_variable=row["workaround_variable"],
        intel_words=row["intel_words"],
        provenance=provenance(row),
    )


@record
class BundledFolder:
    folder: str  # relative to site-packages: "PyQt5\\Qt5\\bin"
    package: str  # the distribution that puts it there, as users know it: "PyQt5"


@record
class BundledRuntime:
    """Where Python packages carry their own msvcp140.dll under its plain name."""

    dll: str
    folders: tuple[BundledFolder, ...]
    vendored_suffix: str  # delvewheel's "<name>.libs" folders
    provenance: Provenance


@cache
def bundled_runtime() -> BundledRuntime:
    row = load_table(_TABLE)["bundled_runtime"]
    return BundledRuntime(
        dll=row["dll"].lower(),
        folders=tuple(BundledFolder(f["folder"], f["package"]) for f in row["folders"]),
        vendored_suffix=row["vendored_suffix"],
        provenance=provenance(row),
    )


def file_version(text: str | None) -> Version | None:
    """A comparable version from "14.40.33810.0" or the registry's "v14.40.33810.00"."""
    if not text:
        return None
    return parse_version(text.strip().lstrip("vV"))


@record
class PagingFile:
    """[WinError 1455]: what it means and the commands that give Windows a bigger page file."""

    winerror: int
    settings_command: str
    system_managed_command: str
    link: str
    provenance: Provenance


@cache
def paging_file() -> PagingFile:
    row = load_table(_TABLE)["paging_file"]
    return PagingFile(
        winerror=int(row["winerror"]),
        settings_command=row["settings_command"],
        system_managed_command=row["system_managed_command"],
        link=row["link"],
        provenance=provenance(row),
    )


@record
class DllRegression:
    """A torch release whose own DLL needs something no redistributable installs, or whose wheel
    left out DLLs its build needs (`absent_families`, CUDA library families torch\\lib lacks)."""

    torch: tuple[Version, ...]
    dll: str  # lower-case; "*": whichever of torch's DLLs fails
    winerror: int
    missing: str
    fixed_in: Version | None  # None: no release is known to fix it (fixed_note says what did)
    why: str
    provenance: Provenance
    absent_families: tuple[str, ...] = ()
    older_release: Version | None = None  # a release before the regression that also works
    fixed_note: str | None = None

    @property
    def fixed_words(self) -> str:
        return str(self.fixed_in) if self.fixed_in is not None else (self.fixed_note or "a later build")

    def matches(self, dll: str, winerror: int) -> bool:
        return winerror == self.winerror and self.dll in ("*", dll.lower())


@cache
def _regressions() -> tuple[DllRegression, ...]:
    return tuple(
        DllRegression(
            torch=tuple(Version(v) for v in row["torch"]),
            dll=row["dll"].lower(),
            winerror=int(row["winerror"]),
            missing=row["missing"],
            fixed_in=Version(row["fixed_in"]) if row.get("fixed_in") else None,
            why=row["why"],
            provenance=provenance(row),
            absent_families=tuple(row.get("absent_families") or ()),
            older_release=Version(row["older_release"]) if row.get("older_release") else None,
            fixed_note=row.get("fixed_note"),
        )
        for row in load_table(_TABLE)["dll_regressions"]
    )


def _public(torch_version: str | None) -> Version | None:
    return parse_version((torch_version or "").split("+", 1)[0])


def dll_regression(torch_version: str | None, dll: str) -> DllRegression | None:
    """The known regression of this torch ("2.4.0+cu121") behind a failure to load `dll`: one that
    names that DLL (absent_families rows are judged by dll_regressions, with torch\\lib's files)."""
    wanted = _public(torch_version)
    if wanted is None:
        return None
    return next(
        (r for r in _regressions() if wanted in r.torch and r.dll == dll.lower() and not r.absent_families),
        None,
    )


def dll_regressions(torch_version: str | None) -> tuple[DllRegression, ...]:
    """Every known Windows packaging regression of this torch release."""
    wanted = _public(torch_version)
    if wanted is None:
        return ()
    return tuple(r for r in _regressions() if wanted in r.torch)


@record
class UserInstallMkl:
    """torch releases whose DLLs need MKL DLLs that a --user or --target install puts where those
    releases do not look (their Library\\bin is not in torch's DLL search)."""

    torch: tuple[Version, ...]
    dll: str
    winerror: int
    mkl_prefix: str
    fixed_in: Version
    provenance: Provenance

    def affects(self, torch_version: str | None) -> bool:
        wanted = _public(torch_version)
        return wanted is not None and wanted in self.torch


@cache
def user_install_mkl() -> UserInstallMkl:
    row = load_table(_TABLE)["user_install_mkl"]
    return UserInstallMkl(
        torch=tuple(Version(v) for v in row["torch"]),
        dll=row["dll"].lower(),
        winerror=int(row["winerror"]),
        mkl_prefix=row["mkl_prefix"].lower(),
        fixed_in=Version(row["fixed_in"]),
        provenance=provenance(row),
    )


@record
class CudaBuild:
    """From (or below) a framework release, the CUDA major its build needs and a DLL that shows it."""

    major: int
    dll: str  # lower-case: "cublas64_12.dll"
    since: Version | None = None
    below: Version | None = None

    def covers(self, version: Version) -> bool:
        return (self.since is None or version >= self.since) and (self.below is None or version < self.below)


@record
class Framework:
    """Another framework that loads CUDA libraries of its own, by torch's file names."""

    dist: str  # its distribution name, normalised: "onnxruntime-gpu"
    label: str
    cuda: tuple[CudaBuild, ...] = ()
    older: str | None = None  # its last release for the CUDA major before (3.24.0 for CTranslate2)
    older_note: str | None = None  # how users get that release (the package that pins it)

    def build_for(self, version: str | None) -> CudaBuild | None:
        parsed = parse_version(version)
        if parsed is None:
            return None
        return next((b for b in self.cuda if b.covers(parsed)), None)


@record
class Frameworks:
    packages: tuple[Framework, ...]
    dll_folders: tuple[str, ...]  # relative to site-packages, "*" one folder level
    system_dll_folders: tuple[str, ...]  # relative to %ProgramFiles%: NVIDIA's own installs
    provenance: Provenance

    def get(self, dist: str) -> Framework | None:
        key = dist.lower().replace("_", "-")
        return next((f for f in self.packages if f.dist == key), None)


def _cuda_build(row: dict[str, object]) -> CudaBuild:
    since, below = row.get("from"), row.get("below")
    return CudaBuild(
        major=int(str(row["major"])),
        dll=str(row["dll"]).lower(),
        since=Version(str(since)) if since else None,
        below=Version(str(below)) if below else None,
    )


@cache
def frameworks() -> Frameworks:
    row = load_table(_TABLE)["frameworks"]
    return Frameworks(
        packages=tuple(
            Framework(
                dist=p["dist"].lower(),
                label=p["label"],
                cuda=tuple(_cuda_build(b) for b in p.get("cuda") or ()),
                older=p.get("older"),
                older_note=p.get("older_note"),
            )
            for p in row["packages"]
        ),
        dll_folders=tuple(row["dll_folders"]),
        system_dll_folders=tuple(row.get("system_dll_folders") or ()),
        provenance=provenance(row),
    )


@record
class DllSearchFix:
    """A torch release that fixed how it finds its DLLs under a Python or an environment layout."""

    condition: str  # "python38": Python >= 3.8; "venv_over_base": a venv over a base with Library\\bin
    python: Version
    fixed_in: Version
    symptom: str
    why: str
    provenance: Provenance


@cache
def dll_search_fixes() -> tuple[DllSearchFix, ...]:
    return tuple(
        DllSearchFix(
            condition=row["condition"],
            python=Version(row["python"]),
            fixed_in=Version(row["fixed_in"]),
            symptom=row["symptom"],
            why=row["why"],
            provenance=provenance(row),
        )
        for row in load_table(_TABLE)["dll_search_fixes"]
    )
