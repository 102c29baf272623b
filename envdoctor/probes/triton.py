"""Triton, the compiler behind torch.compile's GPU kernels: which Triton is installed, the ptxas it
will run (its own, TRITON_PTXAS_PATH's, or the one torch keeps), and where it will look for libcuda.

Read from the files of the examined environment and two programs (`ptxas --version`,
`/sbin/ldconfig -p`), never by importing triton: the version comes from the dist-info folder's
name. Nothing is run when Triton is not installed, so the probe costs a check without it nothing.
"""

from __future__ import annotations

import dataclasses
import ntpath
import posixpath
import re
from collections.abc import Mapping
from types import ModuleType

from envdoctor.host.base import Host
from envdoctor.knowledge import triton as triton_table
from envdoctor.probes.base import NotApplicable, ProbeContext, ProbeSpec
from envdoctor.util.records import record

_PROGRAM_TIMEOUT = 2.0  # `ptxas --version` and `ldconfig -p` answer in milliseconds; up to four run
LDCONFIG = "/sbin/ldconfig"  # the path Triton runs, not whichever ldconfig is on PATH
# Distributions that install the `triton` package: upstream, PyTorch's own builds, the Windows fork.
DISTRIBUTIONS = ("triton", "pytorch_triton", "pytorch_triton_rocm", "pytorch_triton_xpu", "triton_windows")
_RELEASE = re.compile(r"release (\d+\.\d+)")
LIBCUDA = "libcuda.so.1"  # what Triton's lookup asserts exists
LIBCUDA_LINK = "libcuda.so"  # what its launcher's `-lcuda` needs beside it


@record
class Ptxas:
    """One ptxas Triton may run, in the order it prefers them."""

    path: str
    role: str  # "TRITON_PTXAS_PATH", "torch" (torch/bin/ptxas, which torch.compile sets), "bundled"
    exists: bool = True
    release: str | None = None  # "12.3", from `ptxas --version`
    error: str | None = None  # why it gave no version


@record
class LibcudaCopy:
    """A libcuda file found where Triton looks for one."""

    path: str
    found_by: str  # "ldconfig", "TRITON_LIBCUDA_PATH", "LD_LIBRARY_PATH", "LIBRARY_PATH", "beside"


@record
class TritonFacts:
    installed: bool
    distribution: str | None = None  # triton, pytorch_triton, triton_windows
    version: str | None = None  # from the dist-info folder: "3.1.0"
    location: str | None = None  # the triton package folder
    ptxas: tuple[Ptxas, ...] = ()
    ptxas_path_env: str | None = None  # TRITON_PTXAS_PATH, verbatim
    libcuda_path_env: str | None = None  # TRITON_LIBCUDA_PATH, verbatim
    ldconfig_ran: bool = False  # `/sbin/ldconfig -p` answered (Linux)
    ldconfig_failure: str | None = None
    libcuda: tuple[LibcudaCopy, ...] = ()

    def chosen_ptxas(self) -> Ptxas | None:
        """The ptxas Triton runs: TRITON_PTXAS_PATH's when set, else its own (torch.compile sets the
        variable to torch's ptxas first, when torch has one)."""
        for role in ("TRITON_PTXAS_PATH", "torch", "bundled"):
            found = next((p for p in self.ptxas if p.role == role and p.exists), None)
            if found is not None:
                return found
        return None

    def bundled(self) -> Ptxas | None:
        return next((p for p in self.ptxas if p.role == "bundled"), None)

    @property
    def libcuda_dirs(self) -> tuple[str, ...]:
        """The folders Triton's lookup settles on: TRITON_LIBCUDA_PATH, else ldconfig's, else
        LD_LIBRARY_PATH's folders that hold libcuda.so.1."""
        if self.libcuda_path_env:
            return (self.libcuda_path_env,)
        for source in ("ldconfig", "LD_LIBRARY_PATH"):
            dirs = [posixpath.dirname(c.path) for c in self.libcuda if c.found_by == source]
            dirs = [d for d in dirs if self._has(d, LIBCUDA)]
            if dirs:
                return tuple(dict.fromkeys(dirs))
        return ()

    def _has(self, folder: str, name: str) -> bool:
        return any(c.path == posixpath.join(folder, name) for c in self.libcuda)

    def linkable(self) -> bool:
        """Whether `-lcuda` finds an unversioned libcuda.so in Triton's folders or LIBRARY_PATH."""
        if any(self._has(d, LIBCUDA_LINK) for d in self.libcuda_dirs):
            return True
        return any(c.found_by == "LIBRARY_PATH" for c in self.libcuda)


def _site_packages(host: Host, prefix: str, paths: ModuleType, windows: bool) -> tuple[str, ...]:
    if windows:
        candidate = paths.join(prefix, "Lib", "site-packages")
        return (candidate,) if host.is_dir(candidate) else ()
    found: list[str] = []
    for lib in ("lib", "lib64"):
        try:
            names = host.list_dir(f"{prefix}/{lib}")
        except OSError:
            continue
        for name in sorted(names):
            candidate = f"{prefix}/{lib}/{name}/site-packages"
            if name.startswith("python") and host.is_dir(candidate) and candidate not in found:
                found.append(candidate)
    unique: dict[str, str] = {}
    for candidate in found:
        unique.setdefault(host.realpath(candidate), candidate)
    return tuple(unique.values())


def _dist_info(names: tuple[str, ...]) -> tuple[str, str] | None:
    """(distribution, version) of the first Triton dist-info folder among `names`."""
    for name in sorted(names):
        if not name.endswith(".dist-info"):
            continue
        dist, _, version = name[: -len(".dist-info")].rpartition("-")
        if dist.lower().replace("-", "_").replace(".", "_") in DISTRIBUTIONS and version:
            return dist.lower().replace("-", "_"), version
    return None


def _ptxas_release(host: Host, path: str) -> Ptxas:
    result = host.run([path, "--version"], _PROGRAM_TIMEOUT)
    found = _RELEASE.search(result.stdout + result.stderr)
    if found is not None:
        return Ptxas(path=path, role="", release=found.group(1))
    why = result.start_error or ("timed out" if result.timed_out else f"exit status {result.returncode}")
    return Ptxas(path=path, role="", error=f"`{path} --version` gave no release ({why})")


def _ptxas(
    host: Host, env: Mapping[str, str], site: str, package: str, paths: ModuleType
) -> tuple[Ptxas, ...]:
    exe = ".exe" if paths is ntpath else ""
    wanted: list[tuple[str, str]] = []
    given = env.get("TRITON_PTXAS_PATH")
    if given:
        wanted.append(("TRITON_PTXAS_PATH", given))
    torch_ptxas = paths.join(site, "torch", *triton_table.torch_ptxas().split("/")) + exe
    if host.exists(torch_ptxas):
        wanted.append(("torch", torch_ptxas))
    for relative in triton_table.ptxas_in_package():
        candidate = paths.join(package, *relative.split("/")) + exe
        if host.exists(candidate):
            wanted.append(("bundled", candidate))
            break
    found = []
    for role, path in wanted:
        if not host.exists(path):
            found.append(Ptxas(path=path, role=role, exists=False))
            continue
        answer = _ptxas_release(host, path)
        found.append(Ptxas(path=path, role=role, release=answer.release, error=answer.error))
    return tuple(found)


def parse_ldconfig(text: str) -> tuple[str, ...]:
    """The paths of libcuda.so.1 and libcuda.so that `ldconfig -p` lists, in its order."""
    found: list[str] = []
    for line in text.splitlines():
        name, _, rest = line.strip().partition(" ")
        if name not in (LIBCUDA, LIBCUDA_LINK) or "=>" not in rest:
            continue
        path = rest.rsplit("=>", 1)[1].strip()
        if path and path not in found:
            found.append(path)
    return tuple(found)


def _libcuda(host: Host, env: Mapping[str, str]) -> tuple[bool, str | None, tuple[LibcudaCopy, ...]]:
    copies: dict[str, LibcudaCopy] = {}

    def add(path: str, source: str) -> None:
        copies.setdefault(path, LibcudaCopy(path, source))

    result = host.run([LDCONFIG, "-p"], _PROGRAM_TIMEOUT)
    failure = None
    if result.ok:
        for path in parse_ldconfig(result.stdout):
            add(path, "ldconfig")
            # Beside each copy ldconfig names: the other name, which `-lcuda` or the lookup needs.
            folder = posixpath.dirname(path)
            for name in (LIBCUDA, LIBCUDA_LINK):
                other = posixpath.join(folder, name)
                if other != path and host.exists(other):
                    add(other, "beside")
    else:
        failure = result.start_error or (
            "timed out" if result.timed_out else f"exit status {result.returncode}"
        )
    given = env.get("TRITON_LIBCUDA_PATH")
    folders = [("TRITON_LIBCUDA_PATH", given)] if given else []
    folders += [("LD_LIBRARY_PATH", f) for f in env.get("LD_LIBRARY_PATH", "").split(":") if f]
    for source, folder in folders:
        for name in (LIBCUDA, LIBCUDA_LINK):
            path = posixpath.join(folder, name)
            if host.exists(path):
                add(path, source)
    for folder in (f for f in env.get("LIBRARY_PATH", "").split(":") if f):
        path = posixpath.join(folder, LIBCUDA_LINK)
        if host.exists(path):
            add(path, "LIBRARY_PATH")
    return result.ok, failure, tuple(copies.values())


def collect(ctx: ProbeContext) -> TritonFacts:
    host = ctx.host
    windows = host.platform().os == "windows"
    paths: ModuleType = ntpath if windows else posixpath
    env = host.env
    for site in _site_packages(host, ctx.target.info.prefix, paths, windows):
        try:
            names = host.list_dir(site)
        except OSError:
            continue
        found = _dist_info(names)
        if found is None or "triton" not in names:
            continue
        distribution, version = found
        package = paths.join(site, "triton")
        facts = TritonFacts(
            installed=True,
            distribution=distribution,
            version=version,
            location=package,
            ptxas=_ptxas(host, env, site, package, paths),
            ptxas_path_env=env.get("TRITON_PTXAS_PATH") or None,
            libcuda_path_env=env.get("TRITON_LIBCUDA_PATH") or None,
        )
        if windows:
            return facts
        ran, failure, copies = _libcuda(host, env)
        return dataclasses.replace(facts, ldconfig_ran=ran, ldconfig_failure=failure, libcuda=copies)
    raise NotApplicable("Triton is not installed in the examined environment")


def describe(facts: TritonFacts) -> str:
    if not facts.installed:
        return "not installed"
    parts = [f"{facts.distribution or 'triton'} {facts.version or '(version unknown)'}"]
    chosen = facts.chosen_ptxas()
    if chosen is not None:
        which = {"bundled": "its own", "torch": "torch's", "TRITON_PTXAS_PATH": "TRITON_PTXAS_PATH's"}
        release = f"CUDA {chosen.release}" if chosen.release else "version unknown"
        parts.append(f"ptxas: {which.get(chosen.role, chosen.role)} ({release})")
    if facts.ldconfig_ran or facts.libcuda_path_env:
        dirs = facts.libcuda_dirs
        parts.append(f"libcuda: {', '.join(dirs)}" if dirs else "libcuda: not found where Triton looks")
    return "; ".join(parts)


PROBE = ProbeSpec(
    name="triton",
    title="Triton",
    facts_type=TritonFacts,
    collect=collect,
    describe=describe,
    timeout=10.0,
)
