"""What a bug report adds to a check, as torch's collect_env prints it: the distribution, the C
library, compilers and build tools, and the torch/NumPy/Triton/nvidia-* packages installed.

Collected only when asked (`envdoctor report`, `envdoctor snapshot`): `check` skips it, so it costs
a check nothing and shows no area line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envdoctor.host.base import Host
from envdoctor.probes.base import NotApplicable, ProbeContext, ProbeSpec

_TOOL_TIMEOUT = 5.0
_CHILD_TIMEOUT = 20.0
# (name, argv): the first line of each answer is the version, as collect_env shows it.
_TOOLS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("gcc", ("gcc", "--version")),
    ("clang", ("clang", "--version")),
    ("cmake", ("cmake", "--version")),
)
_WINDOWS_TOOLS: tuple[tuple[str, tuple[str, ...]], ...] = (("cl", ("cl",)), ("cmake", ("cmake", "--version")))


@dataclass(frozen=True)
class Tool:
    name: str
    version: str | None = None  # the first line it printed; None: not found or no answer
    path: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class InstalledPackage:
    name: str
    version: str


@dataclass(frozen=True)
class EnvironmentFacts:
    distribution: str | None = None  # "Ubuntu 22.04.4 LTS" (/etc/os-release PRETTY_NAME)
    libc: str | None = None  # "glibc 2.35", as the target interpreter reports it
    tools: tuple[Tool, ...] = ()
    packages: tuple[InstalledPackage, ...] = ()
    errors: tuple[str, ...] = ()

    def package(self, name: str) -> str | None:
        for package in self.packages:
            if package.name.lower() == name.lower():
                return package.version
        return None


def os_release_name(text: str) -> str | None:
    """PRETTY_NAME (else NAME VERSION) from an os-release file."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key and not key.startswith("#"):
            values[key] = value.strip().strip("\"'")
    if values.get("PRETTY_NAME"):
        return values["PRETTY_NAME"]
    name = " ".join(v for v in (values.get("NAME"), values.get("VERSION")) if v)
    return name or None


def _distribution(host: Host, errors: list[str]) -> str | None:
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        if not host.exists(path):
            continue
        try:
            return os_release_name(host.read_text(path, max_bytes=64 * 1024))
        except OSError as exc:
            errors.append(f"{path}: {exc}")
    return None


def _tool(host: Host, name: str, argv: tuple[str, ...]) -> Tool:
    path = host.which(argv[0])
    if path is None:
        return Tool(name)
    result = host.run((path, *argv[1:]), _TOOL_TIMEOUT)
    if result.timed_out or result.start_error:
        return Tool(name, path=path, error=result.start_error or f"no answer within {_TOOL_TIMEOUT:.0f} s")
    # cl.exe prints its banner on stderr and exits non-zero without arguments.
    text = (result.stdout or result.stderr).strip()
    return Tool(name, version=text.splitlines()[0].strip() if text else None, path=path)


def _packages(ctx: ProbeContext, errors: list[str]) -> tuple[str | None, tuple[InstalledPackage, ...]]:
    outcome = ctx.host.python_json(ctx.target.interpreter.path, "packages.py", (), _CHILD_TIMEOUT)
    records = [r for r in outcome.records if r.get("record") == "packages"]
    if not records:
        errors.append(
            f"package list: the interpreter gave no answer ({outcome.start_error or outcome.returncode})"
        )
        return None, ()
    raw: Mapping[str, Any] = records[-1]
    libc = raw.get("libc") if isinstance(raw.get("libc"), str) else None
    packages = tuple(
        InstalledPackage(str(p["name"]), str(p["version"]))
        for p in raw.get("packages") or ()
        if isinstance(p, Mapping) and "name" in p and "version" in p
    )
    return libc, packages


def collect(ctx: ProbeContext) -> EnvironmentFacts:
    if not ctx.options.details:
        raise NotApplicable("collected for `envdoctor report` and `envdoctor snapshot` only")
    host = ctx.host
    errors: list[str] = []
    system = host.platform().system
    distribution = _distribution(host, errors) if system == "Linux" else None
    tools = _WINDOWS_TOOLS if system == "Windows" else _TOOLS
    libc, packages = _packages(ctx, errors)
    return EnvironmentFacts(
        distribution=distribution,
        libc=libc,
        tools=tuple(_tool(host, name, argv) for name, argv in tools),
        packages=packages,
        errors=tuple(errors),
    )


def describe(facts: EnvironmentFacts) -> str:
    parts = [p for p in (facts.distribution, facts.libc) if p]
    found = [t.name for t in facts.tools if t.version]
    if found:
        parts.append("tools: " + ", ".join(found))
    parts.append(f"{len(facts.packages)} torch-related package(s)")
    return "; ".join(parts)


PROBE = ProbeSpec(
    name="environment",
    title="Environment details",
    facts_type=EnvironmentFacts,
    collect=collect,
    describe=describe,
    timeout=30.0,
    on_request=True,
)
