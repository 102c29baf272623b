"""What `envdoctor install` learns about this machine when an option does not say: the OS and
machine, the target interpreter's Python, the NVIDIA driver and GPUs (the NVML probe), and the index
pip is configured with. Everything goes through the Host; nothing imports torch."""

from __future__ import annotations

import configparser
from dataclasses import dataclass

from envdoctor.host.base import Host
from envdoctor.probes.base import ProbeContext
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.nvml import collect as collect_nvml
from envdoctor.target import Target, TargetError, resolve_target


@dataclass(frozen=True)
class PipIndex:
    url: str
    where: str  # "PIP_INDEX_URL" or the config file it came from


@dataclass(frozen=True)
class Detected:
    os: str
    machine: str
    target: Target | None = None
    target_error: str | None = None
    nvml: NvmlFacts | None = None
    nvml_error: str | None = None
    pip_index: PipIndex | None = None


def detect_python(host: Host, interpreter: str | None) -> tuple[Target | None, str | None]:
    try:
        return resolve_target(host, interpreter), None
    except TargetError as exc:
        return None, str(exc)


def detect_nvml(host: Host, target: Target) -> tuple[NvmlFacts | None, str | None]:
    try:
        return collect_nvml(ProbeContext(host=host, target=target)), None
    except Exception as exc:  # e.g. NotApplicable on macOS; the plan then says "no driver found"
        return None, str(exc) or type(exc).__name__


def _pip_files(host: Host, prefix: str | None) -> list[tuple[str, str]]:
    """(level, path) in pip's override order: global, user, site, PIP_CONFIG_FILE.

    Locations and precedence: mirror_facts.md 1.1-1.2 (pip's configuration.py).
    """
    env = host.env
    windows = host.platform().system == "Windows"
    files: list[tuple[str, str]] = []
    if windows:
        program_data = env.get("ProgramData", "C:\\ProgramData")
        files.append(("global", f"{program_data}\\pip\\pip.ini"))
        home = env.get("USERPROFILE", "")
        if home:
            files.append(("user", f"{home}\\pip\\pip.ini"))
        if env.get("APPDATA"):
            files.append(("user", f"{env['APPDATA']}\\pip\\pip.ini"))
        if prefix:
            files.append(("site", f"{prefix}\\pip.ini"))
    else:
        for folder in (env.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":"):
            if folder:
                files.append(("global", f"{folder}/pip/pip.conf"))
        files.append(("global", "/etc/pip.conf"))
        home = env.get("HOME", "")
        if home:
            files.append(("user", f"{home}/.pip/pip.conf"))
            files.append(("user", f"{env.get('XDG_CONFIG_HOME') or home + '/.config'}/pip/pip.conf"))
        if prefix:
            files.append(("site", f"{prefix}/pip.conf"))
    chosen = env.get("PIP_CONFIG_FILE")
    if chosen:
        if host.exists(chosen):
            files = [f for f in files if f[0] != "user"]  # pip skips the user file then
        files.append(("env", chosen))
    return files


def _index_in(text: str) -> str | None:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    found = None
    for section in ("global", "install"):  # [install] overrides [global]
        if parser.has_option(section, "index-url"):
            found = parser.get(section, "index-url").strip() or found
    return found


def configured_pip_index(host: Host, prefix: str | None) -> PipIndex | None:
    """The index-url pip would use here, and where it is set; None when pip uses its default."""
    from_env = host.env.get("PIP_INDEX_URL", "").strip()
    if from_env:
        return PipIndex(from_env, "PIP_INDEX_URL")
    found = None
    for _, path in _pip_files(host, prefix):
        try:
            text = host.read_text(path)
        except OSError:
            continue
        url = _index_in(text)
        if url:
            found = PipIndex(url, path)
    return found


def detect(
    host: Host,
    *,
    interpreter: str | None,
    want_python: bool,
    want_gpu: bool,
    want_index: bool,
) -> Detected:
    plat = host.platform()
    target, error = (
        detect_python(host, interpreter) if (want_python or want_gpu or want_index) else (None, None)
    )
    nvml = nvml_error = None
    if want_gpu and target is not None:
        nvml, nvml_error = detect_nvml(host, target)
    index = configured_pip_index(host, target.info.prefix if target else None) if want_index else None
    return Detected(
        os=plat.os,
        machine=plat.machine,
        target=target,
        target_error=error,
        nvml=nvml,
        nvml_error=nvml_error,
        pip_index=index,
    )
