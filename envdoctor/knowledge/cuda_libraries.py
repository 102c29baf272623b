"""Which files are the CUDA libraries torch's wheels bundle, and what their names say about versions.

Data: cuda_libraries.json beside this file (source cited there).
"""

from __future__ import annotations

import re
from functools import cache

from envdoctor.knowledge import load_table
from envdoctor.knowledge.tables import parse_version
from envdoctor.util.limits import small_int
from envdoctor.util.records import record

_TABLE = "cuda_libraries.json"
# nvidia_cudnn_cu12-9.1.0.70.dist-info -> ("cudnn", "9.1.0.70"); cu13 wheels drop the suffix.
_WHEEL_DIST = re.compile(r"^nvidia_([a-z0-9_]+?)(?:_cu\d+)?-(\d[^-]*)\.dist-info$", re.IGNORECASE)


@record
class LibraryFamily:
    family: str  # "cudnn"
    linux_patterns: tuple[re.Pattern[str], ...]
    windows_patterns: tuple[re.Pattern[str], ...]
    wheel: str | None  # the nvidia-* wheel's base name: "cudnn", "cuda_runtime"; None: no such wheel


def _linux_pattern(prefix: str) -> re.Pattern[str]:
    # libcudnn.so.9, libcudnn_ops.so.9.1.0, libcublasLt.so.12 (not libcusparseLt, a separate library)
    return re.compile(rf"^{re.escape(prefix)}(?:_[a-z_]+)?\.so(?P<version>(?:\.\d+)*)$")


def _windows_pattern(prefix: str) -> re.Pattern[str]:
    # cudnn64_9.dll, cudnn_ops64_9.dll, cublasLt64_12.dll, cudart64_110.dll, nvJitLink_120_0.dll
    return re.compile(
        rf"^{re.escape(prefix)}(?:_[a-z_]+)?(?:64)?_(?P<version>\d+)(?:_\d+)?\.dll$", re.IGNORECASE
    )


@cache
def families() -> tuple[LibraryFamily, ...]:
    return tuple(
        LibraryFamily(
            family=row["family"],
            linux_patterns=tuple(_linux_pattern(p) for p in row["linux_files"]),
            windows_patterns=tuple(_windows_pattern(p) for p in row["windows_files"]),
            wheel=row["wheel"],
        )
        for row in load_table(_TABLE)["families"]
    )


def family_of(file_name: str, os_name: str) -> tuple[str, str | None] | None:
    """("nvjitlink", "12.1.105") for libnvJitLink.so.12.1.105; the version is what the name tells
    (None for an unversioned libcudart.so). None when the file is none of the watched libraries."""
    for family in families():
        patterns = family.windows_patterns if os_name == "windows" else family.linux_patterns
        for pattern in patterns:
            match = pattern.match(file_name)
            if match:
                version = match.group("version").lstrip(".")
                return family.family, version or None
    return None


def wheel_family(dist_info_name: str) -> tuple[str, str] | None:
    """("cudnn", "9.1.0.70") for the folder nvidia_cudnn_cu12-9.1.0.70.dist-info."""
    match = _WHEEL_DIST.match(dist_info_name)
    if not match:
        return None
    base = match.group(1).lower()
    for family in families():
        if family.wheel == base:
            return family.family, match.group(2)
    return None


def cpp_extension_text(key: str) -> str:
    return str(load_table(_TABLE)["cpp_extension"][key])


def cpp_extension_defaults() -> tuple[tuple[str, ...], str, str]:
    """(home variables, Linux default root, Windows default glob under Program Files)."""
    data = load_table(_TABLE)["cpp_extension"]
    return tuple(data["home_variables"]), str(data["linux_default"]), str(data["windows_default_glob"])


def same_release(a: str, b: str) -> bool | None:
    """Whether two dotted versions name the same release, comparing the parts both give.

    "9.1.0" and "9.1.0.70" agree; "12.1.105" and "12.4.127" differ; None when either gives only a
    major number, which a soname shares across releases.
    """
    left = [n for n in map(small_int, a.split(".")) if n is not None]
    right = [n for n in map(small_int, b.split(".")) if n is not None]
    common = min(len(left), len(right))
    if common < 2:
        return None
    return left[:common] == right[:common]


@record
class SonameLoader:
    """A package that dlopens a CUDA library by soname, and the major version it needs."""

    package: str
    used_by: str
    family: str  # "cudnn"
    major: str  # "8"
    cuda: str  # the CUDA major it is built for: "12"


def soname_loader_names() -> tuple[str, ...]:
    return tuple(str(row["package"]) for row in load_table(_TABLE)["soname_loaders"]["packages"])


def soname_loader(package: str, version: str) -> SonameLoader | None:
    """What release `version` of `package` loads by soname ("8" for ctranslate2 4.4.0); None when
    the package is not one of them or the version does not parse."""
    have = parse_version(version)
    if have is None:
        return None
    for row in load_table(_TABLE)["soname_loaders"]["packages"]:
        if row["package"] != package:
            continue
        for release in row["releases"]:
            below = parse_version(release["below"]) if release["below"] else None
            if below is None or have < below:
                return SonameLoader(package, row["used_by"], "cudnn", release["cudnn"], release["cuda"])
    return None
