"""The machine: OS, architecture, WSL, containers, CPUs, memory and free disk."""

from __future__ import annotations

from envdoctor.host.base import Host
from envdoctor.probes.base import ProbeContext, ProbeSpec
from envdoctor.util.records import record


@record
class SystemFacts:
    os: str  # linux, windows, macos
    os_release: str
    os_version: str
    machine: str
    wsl: bool = False
    container: str | None = None  # docker, podman, kubernetes, lxc, ...
    cpu_count: int | None = None
    memory_total_bytes: int | None = None
    memory_available_bytes: int | None = None
    disk_path: str | None = None
    disk_free_bytes: int | None = None
    disk_total_bytes: int | None = None
    # Linux distribution from os-release: ID ("ubuntu"), ID_LIKE ("debian"), VERSION_ID ("22.04").
    distro: str | None = None
    distro_like: tuple[str, ...] = ()
    distro_version: str | None = None


def _read(host: Host, path: str) -> str:
    try:
        return host.read_text(path)
    except OSError:
        return ""


_OS_RELEASE = ("/etc/os-release", "/usr/lib/os-release")  # os-release(5): the first that exists


def os_release(text: str) -> dict[str, str]:
    """KEY=value lines of os-release, values unquoted; anything else is skipped."""
    fields: dict[str, str] = {}
    for line in text[:65536].splitlines():
        key, sep, value = line.strip().partition("=")
        if not sep or not key.isidentifier():
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        fields[key] = value.replace("\\", "")
    return fields


def _distro(host: Host) -> dict[str, str]:
    for path in _OS_RELEASE:
        text = _read(host, path)
        if text:
            return os_release(text)
    return {}


def _container(host: Host) -> str | None:
    # One detector for the system line and the GPU-access facts (markers in knowledge/gpu_access.json).
    from envdoctor.probes.gpu_access import detect_container

    return detect_container(host)[0]


def collect(ctx: ProbeContext) -> SystemFacts:
    host = ctx.host
    plat = host.platform()
    linux = plat.system == "Linux"
    proc_version = _read(host, "/proc/version").lower() if linux else ""
    memory = host.memory()
    disk_path = ctx.target.info.prefix or host.cwd()
    disk = host.disk_usage(disk_path)
    release = _distro(host) if linux else {}
    return SystemFacts(
        os=plat.os,
        os_release=plat.release,
        os_version=plat.version,
        machine=plat.machine,
        wsl=linux and ("microsoft" in proc_version or "wsl" in proc_version),
        container=_container(host) if linux else None,
        cpu_count=host.cpu_count(),
        memory_total_bytes=memory.total_bytes if memory else None,
        memory_available_bytes=memory.available_bytes if memory else None,
        disk_path=disk_path,
        disk_free_bytes=disk.free_bytes if disk else None,
        disk_total_bytes=disk.total_bytes if disk else None,
        distro=release.get("ID", "").lower() or None,
        distro_like=tuple(release.get("ID_LIKE", "").lower().split()),
        distro_version=release.get("VERSION_ID") or None,
    )


def gib(value: int | None) -> str:
    return "?" if value is None else f"{value / 2**30:.1f} GiB"


def describe(facts: SystemFacts) -> str:
    names = {"linux": "Linux", "windows": "Windows", "macos": "macOS"}
    parts = [f"{names.get(facts.os, facts.os)} {facts.os_release} {facts.machine}"]
    if facts.wsl:
        parts.append("WSL")
    if facts.container:
        parts.append(f"in a {facts.container} container")
    parts.append(f"{facts.cpu_count or '?'} CPUs")
    parts.append(f"{gib(facts.memory_total_bytes)} RAM")
    parts.append(f"{gib(facts.disk_free_bytes)} free disk")
    return ", ".join(parts)


PROBE = ProbeSpec(
    name="system",
    title="System",
    facts_type=SystemFacts,
    collect=collect,
    describe=describe,
    timeout=5.0,
)
