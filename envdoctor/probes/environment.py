"""The environment the examined interpreter runs in: the variables that steer CUDA and torch
(CUDA_VISIBLE_DEVICES, CUDA_LAUNCH_BLOCKING, PYTORCH_CUDA_ALLOC_CONF, ...), and what a bug report
adds, as torch's collect_env prints it: the distribution, the C library, compilers and build tools,
and the torch/NumPy/Triton/nvidia-* packages installed.

The variables are read on every check: a curated list of names (none of them holds a secret), from
the environment envdoctor passes on to the interpreter it examines, so it costs microseconds. The
rest runs programs and a child, and is collected only when asked (`envdoctor report`, `envdoctor
snapshot`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envdoctor.host.base import Host
from envdoctor.probes.base import ProbeContext, ProbeSpec
from envdoctor.util.records import record

_TOOL_TIMEOUT = 5.0
_CHILD_TIMEOUT = 20.0
# (name, argv): the first line of each answer is the version, as collect_env shows it.
_TOOLS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("gcc", ("gcc", "--version")),
    ("clang", ("clang", "--version")),
    ("cmake", ("cmake", "--version")),
)
_WINDOWS_TOOLS: tuple[tuple[str, tuple[str, ...]], ...] = (("cl", ("cl",)), ("cmake", ("cmake", "--version")))


@record
class Tool:
    name: str
    version: str | None = None  # the first line it printed; None: not found or no answer
    path: str | None = None
    error: str | None = None


@record
class InstalledPackage:
    name: str
    version: str


# The variables CUDA and torch read that change what a check finds or how fast work runs; their
# values are settings, never credentials, so they are recorded as set. Any name added here must be
# one whose value cannot hold a secret.
STEERING_VARIABLES = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_MODULE_LOADING",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "PYTORCH_HIP_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "PYTORCH_NVML_BASED_CUDA_CHECK",
    "TORCH_USE_CUDA_DSA",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
)
# A value longer than this is cut: no setting of these is anywhere near it.
_VALUE_MAX = 512


@record
class Variable:
    name: str
    value: str


@record
class EnvironmentFacts:
    distribution: str | None = None  # "Ubuntu 22.04.4 LTS" (/etc/os-release PRETTY_NAME)
    libc: str | None = None  # "glibc 2.35", as the target interpreter reports it
    tools: tuple[Tool, ...] = ()
    packages: tuple[InstalledPackage, ...] = ()
    errors: tuple[str, ...] = ()
    # The STEERING_VARIABLES that are set (an empty value counts: CUDA_VISIBLE_DEVICES= hides every
    # GPU). variables_read False: a snapshot from before the probe read them, so "not set" is unknown.
    variables: tuple[Variable, ...] = ()
    variables_read: bool = False

    def variable(self, name: str) -> str | None:
        """The value of `name`; None when it is not set (or was not read)."""
        for variable in self.variables:
            if variable.name == name:
                return variable.value
        return None

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


def read_variables(env: Mapping[str, str]) -> tuple[Variable, ...]:
    """The steering variables that are set, in STEERING_VARIABLES order."""
    return tuple(
        Variable(name, env[name][:_VALUE_MAX]) for name in STEERING_VARIABLES if env.get(name) is not None
    )


def collect(ctx: ProbeContext) -> EnvironmentFacts:
    host = ctx.host
    variables = read_variables(host.env)
    if not ctx.options.details:  # a check: the variables only, no program and no child
        return EnvironmentFacts(variables=variables, variables_read=True)
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
        variables=variables,
        variables_read=True,
    )


def _shown(value: str) -> str:
    return repr(value) if value == "" or value != value.strip() else value


def describe(facts: EnvironmentFacts) -> str:
    parts = []
    if facts.variables:
        parts.append(", ".join(f"{v.name}={_shown(v.value)}" for v in facts.variables))
    details = bool(facts.distribution or facts.libc or facts.tools or facts.packages)
    parts += [p for p in (facts.distribution, facts.libc) if p]
    found = [t.name for t in facts.tools if t.version]
    if found:
        parts.append("tools: " + ", ".join(found))
    if details:
        parts.append(f"{len(facts.packages)} torch-related package(s)")
    if not parts:
        return "no variable that steers CUDA or torch is set"
    return "; ".join(parts)


PROBE = ProbeSpec(
    name="environment",
    title="Environment",
    facts_type=EnvironmentFacts,
    collect=collect,
    describe=describe,
    timeout=30.0,
)
