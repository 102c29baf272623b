"""`envdoctor install` end to end, without the CLI: options + what this machine shows -> a planner target
and the list of inputs (each value with where it came from), then the plan."""

from __future__ import annotations

from dataclasses import replace

from envdoctor import knowledge
from envdoctor.host.base import Host
from envdoctor.install import sources as planner_sources
from envdoctor.install.commands import MirrorChoice, resolve_mirror
from envdoctor.install.detect import Detected, detect, detect_python, with_answers
from envdoctor.install.plan import InstallPlan, InstallTarget, Route, plan
from envdoctor.install.request import (
    Given,
    GpuNote,
    RequestError,
    VendorGpuOption,
    check_combination,
    check_mirror,
    looks_like_python_version,
    parse_arch,
    parse_driver_option,
    parse_gpu_option,
    parse_os,
    parse_python,
    parse_release,
    parse_variant,
)
from envdoctor.knowledge import mirrors
from envdoctor.knowledge.archs import sm
from envdoctor.knowledge.gpus import GpuSpec
from envdoctor.util.records import record

_DEFAULT_MACHINE = {"linux": "x86_64", "windows": "x86_64", "macos": "arm64"}


@record
class Input:
    """One line of "what was detected vs given"."""

    name: str
    value: str
    origin: str  # "given", "detected", "default", or "detected (...)"


@record
class Session:
    target: InstallTarget
    inputs: tuple[Input, ...]
    plan: InstallPlan


def _machine(given_arch: str | None, os_name: str, local_os: str, local_machine: str) -> tuple[str, str]:
    if given_arch is not None:
        return given_arch, "given"
    if os_name == local_os:
        return local_machine, "detected"
    return _DEFAULT_MACHINE[os_name], "default"


def _mirror(given: str | None, detected: Detected, looked: bool) -> tuple[MirrorChoice | None, Input]:
    if given is not None:
        return resolve_mirror(given, "given"), Input("Mirror", given, "given")
    index = detected.pip_index
    if index is None:
        return None, Input("Mirror", "none (PyPI's default index)", "detected" if looked else "default")
    known = mirrors.recognise(index.url)
    pypi = mirrors.pypi_default_url()
    if pypi is not None and index.url.rstrip("/") == pypi.rstrip("/"):
        return None, Input("Mirror", "none (PyPI's default index)", f"detected ({index.where})")
    choice = resolve_mirror(index.url, "detected")
    if known is not None and known.kind == mirrors.IndexKind.PYTORCH_WHEELS:
        # pip is pointed at a PyTorch index: a command relying on the default index would get that
        # index's build (often /whl/cpu), so every command names its index.
        wheels = None if known.name == "official-pytorch" else known
        choice = MirrorChoice(index.url, "detected", None, wheels, known)
    label = index.url if known is None else f"{known.title} ({index.url})"
    return choice, Input("Mirror", label, f"detected ({index.where})")


def build(given: Given, host: Host) -> tuple[InstallTarget, tuple[Input, ...]]:
    """Check the options, detect what they leave open, and assemble the planner's target."""
    os_given = parse_os(given.os) if given.os else None
    arch_given = parse_arch(given.arch) if given.arch else None
    release = parse_release(given.torch) if given.torch else None
    variant = parse_variant(given.cuda) if given.cuda else None
    python_version = interpreter = None
    launcher: tuple[str, ...] = ("pip3",)
    if given.python:
        if looks_like_python_version(given.python):
            python_version = parse_python(given.python)
        else:
            interpreter = given.python
    driver = parse_driver_option(given.driver) if given.driver else None
    read = [parse_gpu_option(g) for g in given.gpus]
    gpus: tuple[GpuSpec, ...] = tuple(g for g in read if isinstance(g, GpuSpec))
    gpu_notes = tuple(g for g in read if isinstance(g, GpuNote))
    vendor_given = tuple(g for g in read if isinstance(g, VendorGpuOption))
    nvidia_given = bool(gpus) or any(n.nvidia for n in gpu_notes)
    mirror_given = check_mirror(given.mirror) if given.mirror else None

    local = host.platform()
    os_name = os_given or local.os
    if os_name == "macos" and (driver or nvidia_given):
        raise RequestError("--driver/--gpu: macOS has no NVIDIA CUDA driver; leave them out with --os macos")
    machine, machine_origin = _machine(arch_given, os_name, local.os, local.machine)
    platform = knowledge.platform_key(os_name, machine)
    check_combination(
        release, variant, platform, python_version, os_name, given.cuda, bool(os_given or arch_given)
    )

    same_platform = platform == knowledge.platform_key(local.os, local.machine)
    examined = None
    if same_platform and python_version is not None:
        # --python X.Y plans for here only when the interpreter envdoctor would examine is X.Y.
        examined, _ = detect_python(host, None)
    elsewhere = not same_platform or (
        python_version is not None and (examined is None or examined.info.minor != python_version)
    )
    same_machine = not elsewhere
    manager = given.manager or "pip"
    want_index = same_machine and manager == "pip" and mirror_given is None
    want_sources = manager if same_machine or interpreter is not None else None
    detected = detect(
        host,
        interpreter=interpreter,
        want_python=python_version is None and (same_machine or interpreter is not None),
        want_gpu=same_machine and not driver and variant in (None, *_cuda_variants(variant)),
        want_index=want_index,
        want_sources=want_sources,
        offline=_offline(host, given.offline) if want_sources is not None else given.offline,
    )
    if interpreter is not None and detected.target is None:
        said = detected.target_error or "it does not run"
        # The target's own error already names the option ("--python X: no such file; ...").
        raise RequestError(said if said.startswith("--python ") else f"--python {interpreter}: {said}")

    inputs = [
        Input("OS", os_name, "given" if os_given else "detected"),
        Input("Machine", machine, machine_origin),
    ]
    if python_version is not None and examined is not None and not elsewhere:
        launcher = (examined.interpreter.path, "-m", "pip")  # the one this machine's command runs
        inputs.append(Input("Python", python_version, f"given, as {examined.interpreter.path}"))
    elif python_version is not None:
        inputs.append(Input("Python", python_version, "given"))
    elif detected.target is not None:
        python_version = detected.target.info.minor
        launcher = (detected.target.interpreter.path, "-m", "pip")
        inputs.append(Input("Python", python_version, f"detected ({detected.target.interpreter.path})"))
    else:
        inputs.append(Input("Python", "any", "not detected" if same_machine else "default"))

    driver_cuda = None
    names: tuple[str, ...] = tuple(g.label for g in gpus)
    capabilities = tuple(g.capability for g in gpus)
    nvml = detected.nvml
    want_cuda: bool | None = None
    if driver is not None:
        inputs.append(Input("NVIDIA driver", driver, "given"))
    elif nvml is not None and nvml.working:
        driver, driver_cuda = nvml.driver_version, nvml.driver_cuda
        if not given.gpus:  # GPUs given for this machine win over the detected ones
            found = [g for g in nvml.gpus if g.capability]
            names = tuple(g.name or f"GPU{g.index}" for g in found)
            capabilities = tuple(g.capability for g in found if g.capability)
        cuda = f" (CUDA {driver_cuda})" if driver_cuda else ""
        inputs.append(Input("NVIDIA driver", f"{driver}{cuda}", "detected"))
    elif nvidia_given:
        # An NVIDIA GPU without a driver version: plan its CUDA build and say which driver it needs.
        want_cuda = True
        found_here = "none found here" if same_machine else "not detected for another machine"
        inputs.append(Input("NVIDIA driver", "unknown", f"not given; {found_here}"))
    elif nvml is not None:
        inputs.append(Input("NVIDIA driver", "none working", f"detected ({nvml.status})"))
    else:
        inputs.append(Input("NVIDIA driver", "none", "detected" if same_machine else "default"))
    if capabilities or gpu_notes:
        shown = [f"{n} ({sm(c)})" if n != sm(c) else n for n, c in zip(names, capabilities)]
        shown += [f"{n.label} ({'architecture unknown' if n.nvidia else 'left out'})" for n in gpu_notes]
        inputs.append(Input("GPUs", ", ".join(shown), "given" if given.gpus else "detected"))

    gfx_targets, want_xpu, vendor_input = _vendor_gpus(vendor_given, detected, bool(given.gpus))
    if vendor_input is not None:
        inputs.append(vendor_input)
    vendor_notes = _vendor_notes(vendor_given, nvidia_given)

    mirror, mirror_input = _mirror(mirror_given, detected, want_index)
    inputs += [
        Input("torch", release.torch if release else "newest that fits", "given" if release else "default"),
        Input("CUDA", variant or "auto", "given" if given.cuda else "default"),
        Input("Manager", manager, "given" if given.manager else "default"),
        mirror_input,
    ]
    described = planner_sources.describe(detected.sources) if detected.sources is not None else ""
    if described:
        inputs.append(Input("Sources", described, "detected"))
    if detected.installed_torch:
        inputs.append(Input("Installed", f"torch {detected.installed_torch}", "detected"))
    target = InstallTarget(
        os=os_name,
        machine=machine,
        python=python_version,
        driver_version=driver,
        driver_cuda=driver_cuda,
        gpu_capabilities=capabilities,
        gpu_names=names,
        torch=release.torch if release else None,
        variant=variant,
        manager=manager,
        mirror=mirror,
        python_launcher=launcher,
        sources=detected.sources,
        installed_torch=detected.installed_torch,
        want_cuda=want_cuda,
        notes=tuple(n.note for n in gpu_notes)
        + vendor_notes
        + ((_elsewhere_note(given),) if elsewhere and interpreter is None else ()),
        gfx_targets=gfx_targets,
        want_xpu=want_xpu,
        amd_target_unknown=any(g.amd for g in vendor_given),
    )
    return target, tuple(inputs)


def _elsewhere_note(given: Given) -> str:
    """The one line that says the plan is for another machine, and what of this one it did not use."""
    named = [
        f"--{flag} {value}"
        for flag, value in (("os", given.os), ("arch", given.arch), ("python", given.python))
        if value
    ]
    return (
        f"planned for the machine {' '.join(named)} describes, with the sources PyTorch publishes for it "
        "(its index, or the default index): this machine's pip configuration, local wheels and "
        "constraints were not used"
    )


def _vendor_gpus(
    given: tuple[VendorGpuOption, ...], detected: Detected, gpus_given: bool
) -> tuple[tuple[str, ...], bool, Input | None]:
    """The AMD gfx targets and whether an Intel XPU is there: given (--gpu gfx1100, --gpu xpu), or
    detected on this machine when no --gpu was given."""
    if given:
        gfx = tuple(dict.fromkeys(g.gfx for g in given if g.gfx))
        xpu = any(g.xpu for g in given)
        return gfx, xpu, Input("AMD/Intel GPUs", ", ".join(g.shown for g in given), "given")
    found = detected.vendors
    if gpus_given or found is None or not found.gpus:
        return (), False, None
    amd = [g for g in found.amd if g.gfx_target]
    discrete = [g for g in amd if not g.integrated] or amd
    gfx = tuple(dict.fromkeys(g.gfx_target for g in discrete if g.gfx_target))
    xpu = bool(found.xpu_gpus)
    return gfx, xpu, Input("AMD/Intel GPUs", "; ".join(g.label for g in found.gpus), "detected")


def _vendor_notes(given: tuple[VendorGpuOption, ...], nvidia_given: bool) -> tuple[str, ...]:
    """What the plan says first of the AMD/Intel GPUs given: an AMD name of unknown gfx target, and
    that one build serves one vendor, so beside an NVIDIA GPU the CUDA build leaves them out."""
    if nvidia_given:
        return tuple(
            f"--gpu {g.label}: an {'Intel' if g.xpu else 'AMD'} GPU, left out of the plan (the build "
            "serves the NVIDIA GPUs given; one torch build serves one vendor's GPUs)"
            for g in given
        )
    return tuple(g.note for g in given if g.note)


def _offline(host: Host, asked: bool) -> bool:
    # --offline or ENVDOCTOR_OFFLINE; read where sources are: a plan for another machine loads no probe.
    from envdoctor.probes.sources import offline_wanted

    return offline_wanted(host, asked)


def _cuda_variants(variant: str | None) -> tuple[str, ...]:
    return (variant,) if variant is not None and variant.startswith("cu") else ()


def run(given: Given, host: Host) -> Session:
    """RequestError for bad options; otherwise a Session whose plan may still say nothing fits.

    The network is asked only when it matters: a plan that local sources satisfy is final; any other
    is made again once the indexes it may name have answered (<= 2 s, all at once)."""
    target, inputs = build(given, host)
    first = plan(target)
    sources = target.sources
    if sources is None or sources.offline or first.route is Route.LOCAL:
        return Session(target, inputs, first)
    operator = target.mirror.wheels if target.mirror is not None and target.mirror.wheels else None
    extra = (operator.url,) if operator is not None else ()
    target = replace(target, sources=with_answers(host, sources, extra))
    return Session(target, inputs, plan(target))


__all__ = ["Given", "Input", "RequestError", "Session", "build", "run"]
