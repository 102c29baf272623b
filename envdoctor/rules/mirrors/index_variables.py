"""Index settings in the environment (ED508): PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS
and UV_INDEX, UV_EXTRA_INDEX_URL, UV_DEFAULT_INDEX, UV_INDEX_URL, UV_FIND_LINKS naming an index
that gives this machine the wrong torch: a CPU index where CUDA is wanted, a CUDA index newer than
the driver, ROCm or XPU builds on an NVIDIA machine, or a PyPI mirror where PyPI's torch is
CPU-only (Windows, and Linux aarch64 before 2.11).

A variable outlives the command that needed it (a runner image, a shell profile, a global uv
mirror) and quietly joins every later install: pip adds PIP_EXTRA_INDEX_URL to a command line's
--index-url, and uv ranks UV_INDEX / UV_EXTRA_INDEX_URL above a command line's --default-index,
so the pins of a requirements file or a CI job lose to it. The fix names the variable.
"""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor import knowledge
from envdoctor.install import plan as install
from envdoctor.knowledge import variant_cuda
from envdoctor.model.findings import Fix, Severity
from envdoctor.model.sources import MirrorFacts
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import unset_command
from envdoctor.rules.fixes import GET_STARTED, install_target, plan_commands
from envdoctor.rules.mirrors.config_edits import PIP_CONFIG_DOCS
from envdoctor.rules.mirrors.urls import (
    pypi_mirror,
    torch_index,
    variant_of,
    wheel_variant,
    without_credentials,
)
from envdoctor.util.records import record

UV_ENV_DOCS = "https://docs.astral.sh/uv/reference/environment/"
# How each variable joins an install, in words for the finding.
_HOW = {
    "PIP_INDEX_URL": "replaces PyPI for every pip command that names no --index-url (a requirements "
    "file, a setup script)",
    "PIP_EXTRA_INDEX_URL": "is added to every pip command, even one that names its own --index-url, "
    "and pip takes the highest version from any index",
    "PIP_FIND_LINKS": "is added to every pip command as another source of files",
    "UV_INDEX": "is ranked above the default index, even above a command line's --default-index",
    "UV_EXTRA_INDEX_URL": "is ranked above the default index, even above a command line's --default-index",
    "UV_DEFAULT_INDEX": "replaces the default index for every uv command that names none",
    "UV_INDEX_URL": "replaces the default index for every uv command that names none",
    "UV_FIND_LINKS": "is added to every uv command as another source of files",
}


@record
class _Set:
    tool: str
    variable: str
    url: str


def _index_variables(facts: MirrorFacts) -> Iterator[_Set]:
    for setting in facts.pip.settings:
        if setting.from_env and setting.origin in _HOW:
            for url in setting.items:
                yield _Set("pip", setting.origin, url)
    for index in facts.uv.indexes:
        if index.origin in _HOW:
            yield _Set("uv", index.origin, index.url)


def _cuda_wanted(ctx: RuleContext) -> bool:
    nvml = ctx.get(NvmlFacts)
    return nvml is not None and nvml.working and bool(nvml.gpus)


def _variant(url: str) -> str | None:
    index = torch_index(url)
    return variant_of(url, index) if index is not None else wheel_variant(url)


def _cuda_key(cuda: str) -> tuple[int, ...]:
    return tuple(int(p) for p in cuda.split(".") if p.isdigit())


def _torch_release(ctx: RuleContext) -> str | None:
    torch = ctx.get(TorchFacts)
    if torch is not None and torch.installed and torch.public_version:
        return torch.public_version
    return knowledge.newest_release().torch


def _wrong(ctx: RuleContext, item: _Set) -> str | None:
    """Why this index gives the wrong torch here, as a clause; None when it does not."""
    if not _cuda_wanted(ctx):
        return None
    variant = _variant(item.url)
    if variant == "cpu":
        return "is a CPU-only index (/whl/cpu): its +cpu torch has no CUDA, on a machine with an NVIDIA GPU"
    if variant is not None and variant.startswith(("rocm", "xpu")):
        return f"serves {variant} builds (AMD/Intel GPUs), on a machine with an NVIDIA GPU"
    if variant is not None and variant.startswith("cu"):
        nvml = ctx.get(NvmlFacts)
        cuda = variant_cuda(variant)
        driver = nvml.driver_cuda if nvml is not None else None
        if cuda and driver and _cuda_key(cuda) > _cuda_key(driver):
            return f"serves CUDA {cuda} builds, newer than this driver supports (CUDA {driver})"
        return None
    if pypi_mirror(item.url) is None:
        return None
    platform = knowledge.platform_key(ctx.platform.os, ctx.platform.machine)
    release = knowledge.release(_torch_release(ctx) or "")
    builds = release.builds(platform) if release is not None else None
    if builds is not None and builds.pypi == "cpu" and ctx.platform.os != "macos":
        return (
            f"is a PyPI mirror, and PyPI's torch {release.torch if release else ''} for {platform} is a "
            "CPU-only build (CUDA builds are on PyTorch's per-variant indexes only)"
        )
    return None


def _installed_shows_it(ctx: RuleContext, item: _Set) -> str | None:
    torch = ctx.get(TorchFacts)
    if torch is None or not torch.installed or not torch.imported:
        return None
    variant = _variant(item.url)
    if (variant == "cpu" or variant is None) and torch.variant == "cpu":
        return f"The installed torch {torch.version} is such a CPU-only build."
    return None


@rule(
    code="ED508",
    name="index-variable-gives-wrong-torch",
    severity=Severity.WARNING,
    summary="an index variable (PIP_EXTRA_INDEX_URL, UV_INDEX, ...) names an index that gives this "
    "machine the wrong torch",
    needs=(MirrorFacts,),
    doc=RuleDoc(
        what="The index variables pip and uv read from the environment (PIP_INDEX_URL, "
        "PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS, UV_INDEX, UV_EXTRA_INDEX_URL, UV_DEFAULT_INDEX, "
        "UV_INDEX_URL, UV_FIND_LINKS) on a machine with an NVIDIA GPU: a CPU-only index (any host's "
        "/whl/cpu), ROCm or XPU builds, a CUDA index newer than the driver, or a PyPI mirror where "
        "PyPI's torch is CPU-only.",
        why="A variable is invisible in the command that runs: pip adds PIP_EXTRA_INDEX_URL to a "
        "command's own --index-url and installs the highest version from either (a final 2.12.0+cpu "
        "beats a 2.12.0.dev nightly), and uv ranks UV_INDEX above a --default-index, so a CI job's "
        "or an installer's pinned CUDA index loses and CPU torch arrives without an error "
        "(pytorch/ci-infra#661, unslothai/unsloth#6972).",
        fix="Unset the variable where it is set (runner image, shell profile, CI settings), or clear "
        "it for the torch command; then install with the index the machine needs (the command is shown).",
        example="A GPU CI runner image exports PIP_EXTRA_INDEX_URL=http://pypi-cache:8080/whl/cpu/; "
        "`pip install torch --index-url https://download.pytorch.org/whl/cu130` installs +cpu.",
    ),
)
def index_variable_gives_wrong_torch(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(MirrorFacts)
    seen: set[str] = set()
    for item in _index_variables(facts):
        why = _wrong(ctx, item)
        if why is None or item.variable in seen:
            continue
        seen.add(item.variable)
        url = without_credentials(item.url)
        installed = _installed_shows_it(ctx, item)
        detail = (
            f"${item.variable} = {url}: it {_HOW[item.variable]}. This index {why}, so whatever the "
            "requirements file, the installer or the CI job pins, torch can come from it."
        )
        if installed:
            detail += f" {installed}"
        os_name = ctx.platform.os
        clear = unset_command(os_name, None, item.variable)
        docs = UV_ENV_DOCS if item.tool == "uv" else PIP_CONFIG_DOCS
        fixes = [
            Fix(
                summary=f"Unset {item.variable} for this shell, and remove it where it is set (the "
                "runner image, a shell profile, the CI settings, a global uv/pip setup script)",
                commands=(clear,),
                link=docs,
            )
        ]
        plan = install.plan(install_target(ctx, want_cuda=True))
        if plan.possible:
            fixes.append(
                Fix(
                    summary=f"Then install torch with the index this machine needs: {plan.reason}",
                    commands=plan_commands(ctx, plan),
                    link=GET_STARTED,
                )
            )
        yield Hit(
            title=f"${item.variable} names {url}, which gives this machine the wrong torch",
            detail=detail,
            evidence=(f"{item.tool}: ${item.variable} = {url}", f"this index {why.split(':')[0]}"),
            fixes=tuple(fixes),
        )
