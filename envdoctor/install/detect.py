"""What `envdoctor install` learns about this machine when an option does not say: the OS and
machine, the target interpreter's Python, the NVIDIA driver and GPUs (the NVML probe), the index
pip is configured with, the sources pip or uv will really use (the mirrors and sources probes'
readings) and the torch already installed. Everything goes through the Host; nothing imports torch.

The GPU probes (NVML, AMD/Intel) are imported only when this machine's GPUs are asked about: a
described machine (--driver/--gpu given) never loads them, and one of another platform loads no
probe and no interpreter machinery at all: each is imported where it runs (start-up, issue #9).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from envdoctor.install import sources as planner_sources
from envdoctor.util import threads
from envdoctor.util.lazy_re import Lazy
from envdoctor.util.records import record

if TYPE_CHECKING:
    from envdoctor.host.base import Host
    from envdoctor.probes.gpu_vendors import GpuVendorFacts
    from envdoctor.probes.nvml import NvmlFacts
    from envdoctor.target import PythonInfo, Target

_TORCH_DIST = Lazy(r"^torch-(?P<version>[^-]+)\.dist-info$", re.IGNORECASE)


@record
class PipIndex:
    url: str
    where: str  # the variable (PIP_INDEX_URL) or the config file it came from


@record
class Detected:
    os: str
    machine: str
    target: Target | None = None
    target_error: str | None = None
    nvml: NvmlFacts | None = None
    nvml_error: str | None = None
    pip_index: PipIndex | None = None
    sources: planner_sources.Sources | None = None
    installed_torch: str | None = None
    vendors: GpuVendorFacts | None = None  # AMD and Intel GPUs (the gpu_vendors probe)


def detect_python(host: Host, interpreter: str | None) -> tuple[Target | None, str | None]:
    from envdoctor.target import TargetError, resolve_target

    try:
        return resolve_target(host, interpreter), None
    except TargetError as exc:
        return None, str(exc)


def detect_nvml(host: Host, target: Target) -> tuple[NvmlFacts | None, str | None]:
    from envdoctor.probes.base import ProbeContext
    from envdoctor.probes.nvml import collect as collect_nvml

    try:
        return collect_nvml(ProbeContext(host=host, target=target)), None
    except Exception as exc:  # e.g. NotApplicable on macOS; the plan then says "no driver found"
        return None, str(exc) or type(exc).__name__


def detect_vendors(host: Host, target: Target) -> GpuVendorFacts | None:
    from envdoctor.probes.base import ProbeContext
    from envdoctor.probes.gpu_vendors import collect as collect_vendors

    try:
        return collect_vendors(ProbeContext(host=host, target=target))
    except Exception:  # NotApplicable off Linux; an unreadable sysfs is already facts
        return None


def configured_pip_index(host: Host, info: PythonInfo | None) -> PipIndex | None:
    """The index-url `pip install` would use here and where it is set (the mirrors probe's reading
    of pip's files and variables); None when pip uses its default."""
    from envdoctor.probes.mirrors import collect_pip

    setting = collect_pip(host, host.platform().os, info).get("index-url")
    if setting is None:
        return None
    return PipIndex(setting.value.strip(), setting.origin)


def installed_torch(host: Host, os_name: str, info: PythonInfo) -> str | None:
    """The torch version installed in the environment, from its dist-info folder's name."""
    if os_name == "windows":
        site = f"{info.prefix}\\Lib\\site-packages"
    else:
        site = f"{info.prefix}/lib/python{info.minor}/site-packages"
    try:
        names = host.list_dir(site)
    except OSError:
        return None
    for name in names:
        match = _TORCH_DIST.match(name)
        if match:
            return match.group("version")
    return None


def detect_sources(
    host: Host, info: PythonInfo | None, manager: str, offline: bool
) -> planner_sources.Sources:
    """The planner's Sources as `check` builds them, without the network (see `with_answers`)."""
    from envdoctor.probes.mirrors import collect_conda, collect_pip, collect_uv
    from envdoctor.probes.sources import collect_sources, default_index_url

    os_name = host.platform().os
    pip = collect_pip(host, os_name, info)
    uv = collect_uv(host, os_name)
    conda = collect_conda(host, os_name, info) if info is not None and manager == "conda" else None
    facts = collect_sources(host, os_name, info, offline=offline, reach=False, pip=pip, uv=uv)
    return planner_sources.from_facts(manager, pip, uv, conda, facts, default_index_url())


def with_answers(
    host: Host, sources: planner_sources.Sources, extra: tuple[str, ...] = ()
) -> planner_sources.Sources:
    """`sources` with one bounded request to each index a plan may name (all at once, <= 2 s)."""
    from envdoctor.model.sources import PYTORCH_WHEELS
    from envdoctor.probes.sources import check_reach

    if sources.offline:
        return sources
    inside = sources.pip_inside
    both = (sources,) if inside is None else (sources, inside)
    configured = [s.url for each in both for s in ((each.index,) if each.index else ()) + each.extra]
    wanted = [
        PYTORCH_WHEELS,
        *(each.index.url if each.index else (each.default_index or "") for each in both),
    ]
    urls = tuple(
        dict.fromkeys(u for u in [*wanted, *extra, *configured] if u.startswith(("http://", "https://")))
    )
    answers = tuple(planner_sources.answer_of(check) for check in check_reach(host, urls[:6]))
    # pip's own view (the pip step inside a conda environment, a uv plan's borrowed wheels) hears
    # the same answers.
    return replace(
        sources, answers=answers, pip_inside=replace(inside, answers=answers) if inside is not None else None
    )


def detect(
    host: Host,
    *,
    interpreter: str | None,
    want_python: bool,
    want_gpu: bool,
    want_index: bool,
    want_sources: str | None = None,
    offline: bool = False,
) -> Detected:
    """`want_sources`: the manager whose sources to read ("pip", "uv", "conda"), None for none."""
    plat = host.platform()
    wants_target = want_python or want_gpu or want_index or want_sources is not None
    target, error = detect_python(host, interpreter) if wants_target else (None, None)
    info = target.info if target else None
    # The sources are file reads: they go on while the NVML child runs.
    found: list[planner_sources.Sources] = []
    reader = None
    if want_sources is not None:
        manager = want_sources
        reader = threads.start(
            lambda: found.append(detect_sources(host, info, manager, offline)), "read-sources"
        )
    nvml = nvml_error = None
    if want_gpu and target is not None:
        nvml, nvml_error = detect_nvml(host, target)
    vendors = detect_vendors(host, target) if want_gpu and target is not None else None
    index = configured_pip_index(host, info) if want_index else None
    installed = installed_torch(host, plat.os, info) if info is not None and want_sources else None
    if reader is not None:
        reader.join()
    return Detected(
        os=plat.os,
        machine=plat.machine,
        target=target,
        target_error=error,
        nvml=nvml,
        nvml_error=nvml_error,
        pip_index=index,
        sources=found[0] if found else None,
        installed_torch=installed,
        vendors=vendors,
    )
