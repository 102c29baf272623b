"""Where a chosen build comes from, given the sources the manager will really use. Pure.

The planner has chosen a release and a variant; `route` decides the source and says why in one
sentence:
1. a local find-links folder or file:// index that holds the exact build: a pinned command with no
   --index-url, which pip satisfies from it without the network;
2. the index the official command names (PyTorch's variant index, a known mirror of it, or the
   default index where PyPI's wheel is that build), when it answered or nothing was asked. When the
   manager also reads other sources, the pins carry the variant's local label, so only that build
   satisfies them (pip has no index priority: mirror_facts.md 1.5, P3);
3. another index when that one did not answer: PyTorch's index for the default index, a known
   mirror of PyTorch's index, or the default index where it carries the build;
4. nothing reachable has it: the exact wheel file names and where to fetch them on another machine.

Without Sources (a snapshot from before the sources probe, or a plan for another machine) the route
is the official command, as it always was.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

from packaging.version import Version

from envdoctor import knowledge
from envdoctor.install.commands import Command, IndexChoice, pip_command, pip_pins, uv_commands
from envdoctor.install.sources import (
    LocalWheel,
    Reach,
    SourceKind,
    Sources,
    local_build,
    pin,
    wanted_label,
    wheel_filename,
)
from envdoctor.knowledge import Release, mirrors
from envdoctor.knowledge.drivers import driver_support
from envdoctor.knowledge.mirrors import IndexStatus
from envdoctor.shell import join
from envdoctor.util.records import record

if TYPE_CHECKING:
    from envdoctor.install.target import InstallTarget


@record
class Routed:
    commands: tuple[Command, ...]
    route: str = "index"  # plan.Route's value
    sentence: str | None = None
    suggestions: tuple[str, ...] = ()
    leading: tuple[str, ...] = ()  # said before the planner's own suggestions (conda-forge when it leads)


def _versions(release: Release) -> dict[str, str | None]:
    return {"torch": release.torch, "torchvision": release.torchvision, "torchaudio": release.torchaudio}


def _packages(release: Release) -> tuple[str, ...]:
    return knowledge.command_packages(release)


def _host(url: str | None) -> str:
    if not url:
        return "the default index"
    return urlsplit(url).hostname or url


def _index_words(index: IndexChoice, sources: Sources) -> str:
    if index.url is None:
        configured = sources.index.url if sources.index is not None else None
        return f"the configured index {configured}" if configured else "the default index"
    known = mirrors.recognise(index.url)
    if known is not None and known.name == "official-pytorch":
        return f"PyTorch's {index.url.rstrip('/').rsplit('/', 1)[-1]} index"
    return known.title if known is not None else index.url


def _examined_python(target: InstallTarget) -> str | None:
    """The interpreter `check` examined (its launcher is `<python> -m pip`), for uv's --python:
    without it, uv pip installs into whatever environment uv finds."""
    launcher = target.python_launcher
    return launcher[0] if len(launcher) == 3 and launcher[1:] == ("-m", "pip") else None


def _commands(
    manager: str,
    target: InstallTarget,
    pins: list[str],
    index: IndexChoice,
    variant: str,
    snippet: bool = True,
) -> tuple[Command, ...]:
    if manager == "uv":
        return tuple(uv_commands(pins, index, variant, snippet, _examined_python(target)))
    return (pip_command(target.python_launcher, pins, index),)


def _remote_pins(
    release: Release, variant: str, index: IndexChoice, sources: Sources | None, platform: str
) -> list[str]:
    """The official pins; with the variant's label on every package when the manager reads other
    sources beside the named index, and companions left for pip to pair on an assumed release."""
    if release.assumed:
        # A series stand-in (2.14.*) cannot carry a local label: the named index decides the build.
        label = (
            f"+{variant}"
            if index.url and sources is not None and sources.others and not release.series
            else ""
        )
        return [f"torch=={release.requirement}{label}", *[p for p in _packages(release) if p != "torch"]]
    pins = pip_pins(release, variant, index)
    labelled = _labels_published(release, variant, platform)
    if index.url and sources is not None and sources.others and not index.flat and labelled:
        versions = _versions(release)
        pins = [f"{name}=={versions[name]}+{variant}" for name in (p.split("==")[0] for p in pins)]
    elif index.url is None and sources is not None:
        # A plain pin also accepts a labelled build of that version (2.13.0+cpu from a find-links
        # folder wins over PyPI's 2.13.0): where one is listed, === takes only the plain wheel.
        pins = [_exact_if_rivalled(p, sources) for p in pins]
    return pins


def _labels_published(release: Release, variant: str, platform: str) -> bool:
    """Whether PyTorch's index names every package of this build with the variant's local label, as
    seen from 2.0 on (torch-2.5.1+cu124, torchvision-0.20.1+cu124, torch-2.13.0+cpu). Linux aarch64
    CPU wheels were plain before (torch-2.6.0+cpu-...-manylinux_2_28_aarch64 is the first labelled
    one seen), so they get no label pin there."""
    if platform == "linux-aarch64" and variant == "cpu" and release.version < Version("2.6"):
        return False
    return release.version.major >= 2


def _exact_if_rivalled(requirement: str, sources: Sources) -> str:
    name, _, version = requirement.partition("==")
    if "+" in version:
        return requirement
    rivals = [w for w in sources.wheels if w.project == name and w.label and w.version.public == version]
    return f"{name}==={version}" if rivals else requirement


def route(
    release: Release,
    variant: str,
    index: IndexChoice,
    target: InstallTarget,
    manager: str,
    warnings: list[str],
) -> Routed:
    sources = target.sources
    if (
        sources is not None
        and sources.manager == "conda"
        and manager == "pip"
        and sources.pip_inside is not None
    ):
        # pip inside the conda environment reads pip's own configuration: plan its step with it.
        return route(release, variant, index, replace(target, sources=sources.pip_inside), manager, warnings)
    if (
        sources is not None
        and manager == "pip"
        and _conda_pip_unserved(release, variant, index, target, sources)
    ):
        return _offline_route(release, variant, index, target, sources, manager)
    if sources is None or sources.manager != manager:
        pins = _remote_pins(release, variant, index, None, target.platform)
        return Routed(_commands(manager, target, pins, index, variant))
    local = _local(release, variant, target, sources)
    routed_local = _routed_local(local, sources) if manager == "uv" else None
    if manager == "uv":
        if routed_local is not None:
            warnings.append(routed_local)
        # uv reads an explicit index only for the packages [tool.uv.sources] routes to it, and `uv
        # pip install` reads no [tool.uv.sources] at all: its wheels are not a source for the command.
        local = {name: wheel for name, wheel in local.items() if not wheel.source.explicit}
    complete = all(name in local for name in _packages(release) if _versions(release).get(name))
    usable = sources.usable(index.url)
    if "torch" in local and (complete or not usable):
        return _local_route(release, variant, index, target, manager, local, usable)
    if usable:
        return _index_route(
            release, variant, index, target, manager, sources, warnings, routed=routed_local is not None
        )
    others = _alternatives(release, variant, index, target, sources)
    if not others and manager == "uv":
        borrowed = _borrowed_local_route(release, variant, target, sources)
        if borrowed is not None:
            return borrowed
    if not others:
        return _offline_route(release, variant, index, target, sources, manager)
    silent = sources.reach(index.url)
    warnings.append(f"{_host(silent.url)} did not answer ({silent.detail})")
    return _index_route(
        release,
        variant,
        others[0],
        target,
        manager,
        sources,
        warnings,
        fallback=True,
        routed=routed_local is not None,
    )


def _borrowed_local_route(
    release: Release, variant: str, target: InstallTarget, sources: Sources
) -> Routed | None:
    """uv reads none of pip's settings, but the wheel pip's find-links folder (or file:// index)
    holds is on this machine all the same: uv takes it when the command names that source."""
    pip = sources.pip_inside
    if pip is None:
        return None
    local = _local(release, variant, target, pip)
    if "torch" not in local:
        return None
    named: list[str] = []
    for wheel in local.values():
        flag = "--find-links" if wheel.source.kind is SourceKind.FIND_LINKS else "--extra-index-url"
        if wheel.source.url not in named:
            named += [flag, wheel.source.url]
    pins = [pin(local[name], pip) for name in _packages(release) if name in local]
    python = _examined_python(target)
    argv = ("uv", "pip", "install", *(("--python", python) if python else ()), *named, *pins)
    torch = local["torch"]
    sentence = (
        f"From {torch.source.url} ({torch.source.origin}, a source pip is configured with), which holds "
        f"{torch.filename}: uv reads no pip settings, so the command names it, and uv takes the wheel "
        "from there without the network"
    )
    left = [n for n in _packages(release) if n not in local and _versions(release).get(n)]
    if left:
        missing = ", ".join(f"{n} {_versions(release)[n]} ({variant})" for n in left)
        sentence += f"; {missing} is in no local source, so the command leaves it out"
    return Routed((Command(argv, "uv"),), "local", sentence)


def _conda_pip_unserved(
    release: Release, variant: str, index: IndexChoice, target: InstallTarget, sources: Sources
) -> bool:
    """pip inside a conda environment: conda's sources say nothing of pip's configuration, but
    whether the index answered is known; True when neither it nor another index can serve the build."""
    if sources.manager != "conda" or sources.usable(index.url):
        return False
    return not _alternatives(release, variant, index, target, sources)


def _local(release: Release, variant: str, target: InstallTarget, sources: Sources) -> dict[str, LocalWheel]:
    labels = wanted_label(release, variant, target.platform)
    found = {}
    for name, version in _versions(release).items():
        if name not in _packages(release):
            continue
        wheel = local_build(sources, name, version, labels, target.platform, target.python)
        if wheel is not None:
            found[name] = wheel
    return found


def _routed_local(local: dict[str, LocalWheel], sources: Sources) -> str | None:
    """When [tool.uv.sources] routes torch to an explicit local index that holds the exact build,
    the project commands take it from there: say so, and that `uv pip install` does not."""
    torch = local.get("torch")
    routed = dict(sources.uv_routes).get("torch")
    if torch is None or not torch.source.explicit or routed is None or torch.source.name != routed:
        return None
    return (
        f"pyproject.toml routes torch to the index {routed!r} ({torch.source.url}), which holds "
        f"{torch.filename}: `uv sync` and `uv add` take it from there; `uv pip install` reads no "
        "[tool.uv.sources], so its line names the build's index"
    )


def _local_route(
    release: Release,
    variant: str,
    index: IndexChoice,
    target: InstallTarget,
    manager: str,
    local: dict[str, LocalWheel],
    remote_usable: bool,
) -> Routed:
    sources = target.sources
    assert sources is not None
    pins = [pin(local[name], sources) for name in _packages(release) if name in local]
    torch = local["torch"]
    where = "find-links folder" if torch.source.kind.value == "find-links" else "index"
    sentence = (
        f"From the {where} {torch.source.url}, which holds {torch.filename}: {manager} takes it from "
        "there without the network"
    )
    left = [n for n in _packages(release) if n not in local and _versions(release).get(n)]
    if left:
        missing = ", ".join(f"{n} {_versions(release)[n]} ({variant})" for n in left)
        place = index.url or "the default index"
        if remote_usable:
            why = ""
        elif sources.offline:
            why = ", and envdoctor asked no index (--offline)"
        else:
            why = f", and {_host(place)} did not answer"
        sentence += (
            f"; {missing} is in no local source{why}, so the command leaves it out: add it later from {place}"
        )
    commands = _commands(manager, target, pins, IndexChoice(None, ""), variant, snippet=False)
    return Routed(commands, "local", sentence)


def _uv_routed(variant: str, index: IndexChoice, sources: Sources) -> tuple[bool, str | None]:
    """(print the pyproject snippet, a note): not when [tool.uv.sources] already routes torch to
    an index with this URL; a note when it routes torch elsewhere."""
    routed = dict(sources.uv_routes).get("torch")
    if routed is None or index.url is None:
        return True, None
    named = next(
        (s for s in sources.extra + ((sources.index,) if sources.index else ()) if s.name == routed), None
    )
    if named is not None and named.url.rstrip("/") == index.url.rstrip("/"):
        return False, f"pyproject.toml already routes torch to the index {routed!r} ({named.url})"
    where = f" ({named.url})" if named is not None else ""
    return True, (
        f"pyproject.toml routes torch to the index {routed!r}{where}, not to the {variant} one: change "
        "that index's url, or use the lines below"
    )


def _index_route(
    release: Release,
    variant: str,
    index: IndexChoice,
    target: InstallTarget,
    manager: str,
    sources: Sources,
    warnings: list[str],
    fallback: bool = False,
    routed: bool = False,
) -> Routed:
    """`routed`: [tool.uv.sources] already routes torch to an index that holds this build, so the
    project needs no snippet (said in a warning already)."""
    pins = _remote_pins(release, variant, index, sources, target.platform)
    snippet = not routed
    if manager == "uv" and not routed:
        snippet, note = _uv_routed(variant, index, sources)
        if note is not None:
            warnings.append(note)
    if sources.no_index is not None and manager == "pip":
        warnings.append(
            f"pip is configured with no-index ({sources.no_index.origin}), which ignores every index, "
            "the command's too: run it with the variable PIP_NO_INDEX=0 set, or take no-index out"
        )
    words = _index_words(index, sources)
    answer = sources.reach(index.url)
    if answer.reach is Reach.REACHABLE:
        state = "it answered"
    elif sources.offline:
        state = "not checked (--offline)"
    else:
        state = "not checked"
    sentence = f"From {words} ({state})"
    if fallback:
        sentence = f"From {words} instead ({state})"
    if index.url and sources.others and not index.flat:
        others = ", ".join(s.url for s in sources.others)
        sentence += (
            f"; {manager} also reads {others}, so each pin carries +{variant} and only that build "
            "satisfies it"
        )
    commands = _commands(manager, target, pins, index, variant, snippet)
    return Routed(commands, "fallback" if fallback else "index", sentence)


def _alternatives(
    release: Release, variant: str, index: IndexChoice, target: InstallTarget, sources: Sources
) -> list[IndexChoice]:
    """Other indexes that carry this build and answered."""
    found: list[IndexChoice] = []
    form = knowledge.pip_form(release)
    official = mirrors.official_wheel_url(variant)
    if index.url != official:
        found.append(IndexChoice(official, form.index_option))
    if knowledge.pypi_plain(release, target.platform, variant) and index.url is not None:
        found.append(IndexChoice(None, ""))
    operator = target.mirror.wheels if target.mirror is not None else None
    if operator is not None and operator.name != "official-pytorch" and operator.status == IndexStatus.OK:
        url = mirrors.pytorch_wheel_url(operator, variant)
        if url != index.url:
            found.append(IndexChoice(url, "-f" if operator.flat else form.index_option, operator.flat))
    return [c for c in found if sources.reach(c.url).reach is Reach.REACHABLE]


def _offline_route(
    release: Release,
    variant: str,
    index: IndexChoice,
    target: InstallTarget,
    sources: Sources,
    manager: str = "pip",
) -> Routed:
    versions = _versions(release)
    names = [n for n in _packages(release) if versions.get(n)]
    if release.series_stand_in:
        return _offline_series_route(release, variant, index, target, sources, manager)
    files = [
        wheel_filename(release.torch, n, str(versions[n]), variant, target.platform, target.python)
        for n in names
        if not release.assumed or n == "torch"
    ]
    page = mirrors.official_wheel_url(variant)
    links = ", ".join(f"{page}/{quote(f)}" for f in files)
    python = f" for Python {target.python}" if target.python else ""
    silent = sources.reach(index.url)
    why = (
        "envdoctor is --offline"
        if sources.offline
        else f"{_host(index.url or sources.default_index)} did not answer"
    )
    if silent.detail and not sources.offline:
        why += f" ({silent.detail})"
    sentence = (
        f"No reachable source has torch {release.torch} ({variant}){python}: {why}, and no local source "
        f"holds it. On a machine that reaches {_host(page)}, download {links}, copy the "
        f"file{'s' if len(files) > 1 else ''} here, then run the command below"
    )
    if any("*" in f for f in files):
        sentence += " (the * is the platform tag, as the download page shows it)"
    command = _install_files(manager, target, [f"./{f}" for f in files])
    return Routed((command,), "offline", sentence, _default_index_instead(release, target, manager))


def _offline_series_route(
    release: Release, variant: str, index: IndexChoice, target: InstallTarget, sources: Sources, manager: str
) -> Routed:
    """No reachable source has any torch of this series, and envdoctor knows none of its releases:
    the newest wheel of the series is downloaded by hand and installed from that folder by its pin,
    so no file name is guessed."""
    page = f"{mirrors.official_wheel_url(variant)}/torch/"
    python = f" for Python {target.python}" if target.python else ""
    why = (
        "envdoctor is --offline"
        if sources.offline
        else f"{_host(index.url or sources.default_index)} did not answer"
    )
    sentence = (
        f"No reachable source has a torch {release.torch} release ({variant}){python}: {why}, and no local "
        f"source holds one. On a machine that reaches {_host(page)}, download the newest torch "
        f"{release.torch}.x wheel{python} from {page} into a folder, copy it here, then run the command "
        "below in that folder"
    )
    pin = f"torch=={release.requirement}"
    if manager == "uv":
        python_path = _examined_python(target)
        argv: tuple[str, ...] = (
            "uv", "pip", "install", *(("--python", python_path) if python_path else ()),
            "--no-index", "--find-links", ".", pin,
        )  # fmt: skip
        return Routed((Command(argv, "uv"),), "offline", sentence)
    argv = (*target.python_launcher, "install", "--no-index", "--find-links", ".", pin)
    return Routed((Command(argv, "pip"),), "offline", sentence)


def _install_files(manager: str, target: InstallTarget, requirements: list[str]) -> Command:
    """The manager's own install of these files or pins into the examined environment: `uv pip
    install --python <examined>` for uv; pip through the examined interpreter otherwise (inside a
    conda environment too: conda itself cannot install a wheel file)."""
    if manager == "uv":
        python = _examined_python(target)
        return Command(
            ("uv", "pip", "install", *(("--python", python) if python else ()), *requirements), "uv"
        )
    return Command((*target.python_launcher, "install", *requirements), "pip")


def _default_index_instead(release: Release, target: InstallTarget, manager: str = "pip") -> tuple[str, ...]:
    """When the default index answered and carries another build of this release for the platform
    (PyPI's Linux wheel is a CUDA build), say so: it runs on the CPU too, at a larger download."""
    sources = target.sources
    builds = release.builds(target.platform)
    if (
        sources is None
        or builds is None
        or not builds.pypi
        or sources.reach(None).reach is not Reach.REACHABLE
    ):
        return ()
    if target.python is not None and target.python not in release.python_for(target.platform):
        return ()
    if not _read_from_the_used_index(release, sources):
        return ()
    if builds.pypi.startswith("cu") and target.driver_version is not None:
        support = driver_support(builds.pypi, target.driver_version, target.os, target.driver_cuda)
        if not support.runs:  # a CUDA build this driver cannot start is no alternative on a GPU machine
            return ()
    # Planned like the main route: pins only that build satisfies, whatever the local sources hold
    # (a plain torch==2.13.0 would take find-links' 2.13.0+cpu beside the default index's torchvision).
    pins = _remote_pins(release, builds.pypi, IndexChoice(None, ""), sources, target.platform)
    command = join(_install_files(manager, target, pins).argv, target.os)
    runs = "the CPU build" if builds.pypi == "cpu" else "it runs on the CPU too, a larger download"
    return (
        f"the default index answered and has torch {release.torch}'s {builds.pypi} build for "
        f"{target.platform} ({runs}): {command}",
    )


def _read_from_the_used_index(release: Release, sources: Sources) -> bool:
    """Whether the release's default-index build was read from the index pip uses. A release an
    overlay added was read from the index `envdoctor update` was given (a mirror, a loopback test
    index), which need not be the one pip is configured with: then nothing is claimed of it."""
    from envdoctor.knowledge.overlay import read_from
    from envdoctor.util.urls import safe_url

    recorded = read_from(release.torch)
    if recorded is None:
        return True  # the built-in data: PyPI's own builds
    used = sources.index.url if sources.index is not None else sources.default_index
    return used is not None and safe_url(used).rstrip("/") == recorded.rstrip("/")


# --- conda: where `-c NAME` resolves (mirror_facts.md 2.2 and 4.2) ---------------------------------

CONDA_CUTOFF_ISSUE = "pytorch/pytorch#138506"
NVIDIA_ON_MIRROR = (
    "with an Anaconda mirror as channel_alias, '-c nvidia' fails: mirrors do not carry the nvidia "
    "channel (https://github.com/tuna/issues/issues/1327); keep channel_alias at its default"
)


def conda_channel_route(command: Command, target: InstallTarget, last: str, warnings: list[str]) -> Routed:
    """The pytorch channel's own command (up to its last release). The command names channels, never
    URLs, so a configured mirror (channel_alias, custom_channels) is used, not bypassed."""
    conda = target.sources.conda if target.sources is not None else None
    if conda is None:
        return Routed((command,))
    url, how = conda.resolve("pytorch")
    sentence = (
        f"From the pytorch channel, which conda reads at {url} ({how}): PyTorch published its conda "
        f"packages there up to torch {last}"
    )
    if conda.mirrored("pytorch"):
        sentence += "; the command names the channel, not a URL, so conda goes through that mirror"
    _, nvidia_how = conda.resolve("nvidia")
    if "nvidia" in command.argv and nvidia_how.startswith("channel_alias") and conda.mirrored("nvidia"):
        warnings.append(NVIDIA_ON_MIRROR)
    return Routed((command,), "index", sentence)


def conda_past_channel(routed: Routed, variant: str, target: InstallTarget, last: str) -> Routed:
    """A release past the pytorch channel: pip inside the conda environment, said with why, and
    conda-forge's community build as the conda-only alternative, through the configured channels."""
    conda = target.sources.conda if target.sources is not None else None
    if conda is None:
        return routed
    why = (
        f"With pip inside the conda environment, because PyTorch's own conda channel stops at torch "
        f"{last} ({CONDA_CUTOFF_ISSUE})"
    )
    if conda.has("conda-forge"):
        why += (
            ", and conda-forge, which your channels list, has only community builds whose versions "
            "envdoctor cannot pin"
        )
    if routed.sentence:
        why += "; " + routed.sentence[0].lower() + routed.sentence[1:]
    package = "pytorch-gpu" if variant.startswith("cu") else "pytorch"
    url, how = conda.resolve("conda-forge")
    command = join(["conda", "install", "-c", "conda-forge", package, "torchvision"], target.os)
    forge = (
        f"conda-forge's community build instead (its own versions, not PyTorch's; conda reads "
        f"conda-forge at {url}, {how}): {command}"
    )
    if conda.channels and conda.channels[0][0].rstrip("/").endswith("conda-forge"):
        return replace(routed, sentence=why, leading=(forge, *routed.leading))
    return replace(routed, sentence=why, suggestions=(*routed.suggestions, forge))
