"""Commands for a chosen build: pip, uv and conda, in the official form, with the right index or mirror.

Pure: (release, variant, target) -> commands and warnings. The planner (install.py) decides *what* to
install; this module decides *how to say it* for each package manager.
"""

from __future__ import annotations

import enum

from envdoctor import knowledge
from envdoctor.knowledge import Release, conda, mirrors
from envdoctor.shell import Shell, default_shell, render
from envdoctor.util.records import record

PIP_NO_PRIORITY = "pytorch/pytorch#96884"


class CommandKind(str, enum.Enum):
    SHELL = "shell"
    PYPROJECT = "pyproject.toml"  # a snippet to paste into that file


@record
class Command:
    """A command as an argument list; it becomes text only at the edge (`render_command`)."""

    argv: tuple[str, ...]
    manager: str  # "pip", "uv", "conda"
    kind: CommandKind = CommandKind.SHELL
    snippet: str = ""  # the text to paste, for kind PYPROJECT (argv is then empty)


def render_command(command: Command, shell: Shell) -> str:
    """The command for `shell`: the one place a Command becomes text."""
    if command.kind is CommandKind.SHELL:
        return render(command.argv, shell)
    return command.snippet


def command_text(command: Command, os_name: str) -> str:
    """The command as a report for `os_name` prints it."""
    return render_command(command, default_shell(os_name))


@record
class MirrorChoice:
    """A mirror the user named (--mirror) or that their pip configuration uses."""

    label: str  # what the user wrote, or the configured URL
    origin: str  # "given" or "detected"
    pypi: str | None  # its PyPI-mirror URL, if it is (or its operator runs) one
    wheels: mirrors.KnownIndex | None  # its operator's PyTorch-wheel index, if any
    known: mirrors.KnownIndex | None  # what the URL/name was recognised as


def resolve_mirror(text: str, origin: str) -> MirrorChoice:
    """--mirror tuna|sjtu|nju|aliyun|URL, or a configured index URL, as a MirrorChoice."""
    value = text.strip()
    if "/" in value or "." in value:
        known = mirrors.recognise(value)
        if known is None:
            return MirrorChoice(value, origin, value, None, None)
        if known.kind == "pytorch-wheels":
            return MirrorChoice(value, origin, None, known, known)
        operator = known.name.split("-")[0]
        wheels = mirrors.pytorch_wheel_mirror(operator)
        return MirrorChoice(value, origin, value if known.kind == "pypi" else None, wheels, known)
    name = value.lower()
    wheels = mirrors.pytorch_wheel_mirror(name)
    pypi = next(
        (i for i in mirrors.known_indexes() if i.name == name and i.kind == "pypi" and i.status == "ok"),
        None,
    )
    return MirrorChoice(value, origin, pypi.url if pypi else None, wheels, pypi or wheels)


@record
class IndexChoice:
    """Where the packages come from: PyPI (or the configured mirror), a PEP 503 index, or flat links."""

    url: str | None  # None: the default index (PyPI, or whatever pip is configured with)
    option: str  # "--index-url", "--extra-index-url", "-f"; "" for the default index
    flat: bool = False


# The PyPI-mirror note ends its first sentence so; the planner leaves the note out when the routed
# command does not name that index after all (a local find-links folder holds the build).
TAKES_IT_FROM_PYTORCH = "the command takes it from download.pytorch.org"


def choose_index(
    release: Release, variant: str, platform: str, mirror: MirrorChoice | None, warnings: list[str]
) -> IndexChoice:
    pypi_has_it = knowledge.pypi_plain(release, platform, variant)
    form = knowledge.pip_form(release)
    if pypi_has_it:
        if mirror is None or mirror.pypi:
            if mirror is not None and mirror.origin == "given":
                return IndexChoice(mirror.pypi, "--index-url")
            return IndexChoice(None, "")
        if mirror.origin == "detected":
            # pip is pointed at a PyTorch variant index (often /whl/cpu): the default index would
            # not give this build, so the command names its index.
            warnings.append(f"pip is configured with {mirror.label}: the command names the {variant} index")
    wheels = mirror.wheels if mirror is not None else None
    if wheels is not None and wheels.name != "official-pytorch":
        if wheels.status != "ok":
            warnings.append(f"{wheels.title} is marked {wheels.status} in envdoctor's data: {wheels.note}")
        url = mirrors.pytorch_wheel_url(wheels, variant)
        return IndexChoice(url, "-f" if wheels.flat else form.index_option, wheels.flat)
    if mirror is not None and mirror.pypi:
        where = platform.split("-")[0]
        warnings.append(
            f"{mirror.label} mirrors PyPI only, and PyPI has no {variant} build of torch "
            f"{release.torch} for {where}: {TAKES_IT_FROM_PYTORCH}. Do not "
            "combine a PyPI mirror's --index-url with the PyTorch index as --extra-index-url: pip has "
            f"no index priority and installs the highest version from either ({PIP_NO_PRIORITY})."
        )
    return IndexChoice(mirrors.official_wheel_url(variant), form.index_option)


def _pins(release: Release, variant: str, packages: tuple[str, ...], labelled: tuple[str, ...]) -> list[str]:
    versions = {"torch": release.torch, "torchvision": release.torchvision, "torchaudio": release.torchaudio}
    pins = []
    for name in packages:
        version = versions.get(name)
        if not version:
            continue
        label = f"+{variant}" if name in labelled else ""
        pins.append(f"{name}=={version}{label}")
    return pins


def pip_pins(release: Release, variant: str, index: IndexChoice) -> list[str]:
    packages = knowledge.command_packages(release)
    labelled = knowledge.pip_form(release).local_label_pins if index.url else ()
    if index.flat:
        # Flat links get no priority over the default index: only a local-version pin makes sure
        # the mirror's +cuXYZ wheel is the one chosen (mirror_facts.md P6).
        labelled = packages
    return _pins(release, variant, packages, labelled)


def pip_command(launcher: tuple[str, ...], pins: list[str], index: IndexChoice) -> Command:
    argv = [*launcher, "install", *pins]
    if index.url:
        argv += [index.option, index.url]
    return Command(tuple(argv), "pip")


def uv_commands(
    pins: list[str], index: IndexChoice, variant: str, snippet: bool = True, python: str | None = None
) -> list[Command]:
    """`uv pip install` (into `python`, the examined interpreter, when there is one), the
    pyproject.toml lines that route the torch packages to their index (unless the project already
    does), and `uv add`."""
    argv = ["uv", "pip", "install", *(("--python", python) if python else ()), *pins]
    if index.url:
        argv += ["--find-links" if index.flat else "--index-url", index.url]
    commands = [Command(tuple(argv), "uv")]
    if index.url and snippet:
        # uv's PyTorch guide: a named index with explicit = true, used only for the torch packages,
        # so numpy & co. still resolve from the default index (mirror_facts.md 3.2-3.3, P9).
        name = f"pytorch-{variant}"
        lines = ["[[tool.uv.index]]", f'name = "{name}"', f'url = "{index.url}"']
        if index.flat:
            lines.append('format = "flat"')
        lines += ["explicit = true", "", "[tool.uv.sources]"]
        lines += [f'{pin.split("==")[0]} = [{{ index = "{name}" }}]' for pin in pins]
        commands.append(Command((), "uv", CommandKind.PYPROJECT, "\n".join(lines)))
    commands.append(Command(("uv", "add", *pins), "uv"))
    return commands


def conda_command(release: Release, variant: str, platform: str) -> Command | None:
    spec = conda.conda_spec(release, variant, platform)
    if spec is None:
        return None
    argv = ["conda", "install", *spec.packages]
    for channel in spec.channels:
        argv += ["-c", channel]
    return Command(tuple(argv), "conda")
