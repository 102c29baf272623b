"""conda's channels: the pytorch and nvidia channels, where PyTorch stopped publishing at 2.5
(ED503)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from packaging.version import Version

from envdoctor.install import plan as install
from envdoctor.knowledge import mirrors, parse_version
from envdoctor.model.findings import Fix, Severity
from envdoctor.model.sources import MirrorFacts, is_variable
from envdoctor.probes.mirrors import origin_text
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import unset_command
from envdoctor.rules.fixes import GET_STARTED, install_target, plan_commands
from envdoctor.rules.mirrors.config_edits import CONDA_CONFIG_DOCS, origin_line
from envdoctor.rules.mirrors.urls import channel_name
from envdoctor.shell import quote

CONDA_CHANNEL_END = "https://github.com/pytorch/pytorch/issues/138506"


@dataclass(frozen=True)
class _Frozen:
    channel: str  # as configured: a name or a URL
    name: str  # pytorch, nvidia
    last: str  # the last torch release served there
    key: str  # channels or default_channels
    origin: str
    line: int | None


def _frozen_in_use(facts: MirrorFacts, torch: TorchFacts | None) -> list[_Frozen]:
    installed = parse_version(torch.public_version) if torch is not None and torch.installed else None
    found = []
    for key in ("channels", "default_channels"):
        for channel, setting in facts.conda.merged_list(key):
            name = channel_name(channel)
            last = mirrors.conda_channel_last_torch(name)
            if last is None:
                continue
            cutoff = parse_version(last)
            if installed is not None and cutoff is not None and installed <= cutoff:
                continue  # what is installed is still within what the channel served
            found.append(_Frozen(channel, name, last, key, setting.origin, setting.line))
    return found


def _remove_channel(ctx: RuleContext, item: _Frozen, home: str | None) -> Fix:
    os_name = ctx.platform.os
    if is_variable(item.origin):
        return Fix(
            summary=f"Drop {item.channel} from {item.origin} (and wherever it is set)",
            commands=(unset_command(os_name, None, item.origin),),
        )
    return Fix(
        summary=f"Remove {item.channel} from {origin_text(item.origin, home)}",
        commands=(
            f"conda config --file {quote(item.origin, os_name)} "
            f"--remove {item.key} {quote(item.channel, os_name)}",
        ),
        link=CONDA_CONFIG_DOCS,
    )


@rule(
    code="ED503",
    name="conda-pytorch-channel-frozen",
    severity=Severity.WARNING,
    summary="conda's pytorch/nvidia channels are configured, but PyTorch no longer publishes there",
    needs=(MirrorFacts,),
    doc=RuleDoc(
        what="conda's merged channels and default_channels (every .condarc and CONDA_CHANNELS) "
        "for channels whose torch publication ended (knowledge base: pytorch and nvidia), while "
        "torch is missing or newer than their last release.",
        why="PyTorch published 2.5 as its last release to the pytorch channel "
        "(pytorch/pytorch#138506); every mirror of it is frozen at 2.5.x. Newer torch cannot come "
        "from there: the solve fails or an old build is installed.",
        fix="Remove the channel and install torch with pip from PyTorch's wheel index inside the "
        "conda environment, or take conda-forge's pytorch package.",
        example="~/.condarc: channels [pytorch, nvidia, defaults] on a machine that needs torch "
        "2.7 for an RTX 5090.",
    ),
)
def conda_pytorch_channel_frozen(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(MirrorFacts)
    torch = ctx.get(TorchFacts)
    frozen = _frozen_in_use(facts, torch)
    if not frozen:
        return
    names = " and ".join(dict.fromkeys(f.name for f in frozen))
    last = max(frozen, key=lambda f: parse_version(f.last) or Version("0")).last
    want = (
        f"the installed torch {torch.version or torch.dist_version}"
        if torch is not None and torch.installed and torch.public_version
        else "a current torch"
    )
    listed = "; ".join(
        f"{f.channel} in {f.key} ({origin_line(f.origin, f.line, facts.home)}): torch up to {f.last}"
        for f in frozen
    )
    removals = [_remove_channel(ctx, item, facts.home) for item in frozen]
    remove_commands = tuple(c for fix in removals for c in fix.commands)
    remove_text = "; ".join(fix.summary for fix in removals)
    fixes = []
    plan = install.plan(install_target(ctx))
    if plan.possible:
        fixes.append(
            Fix(
                summary=f"{remove_text}; then install torch with pip inside the conda environment: "
                f"{plan.reason}",
                commands=remove_commands + plan_commands(ctx, plan),
                link=GET_STARTED,
            )
        )
    fixes.append(
        Fix(
            summary=f"{remove_text}; then use conda-forge's build",
            commands=(*remove_commands, "conda install -c conda-forge pytorch"),
            link=CONDA_CHANNEL_END,
        )
    )
    yield Hit(
        title=f"conda is set to use the {names} channel{'s' if len(frozen) > 1 else ''}, which stopped at "
        f"torch {last}",
        detail=f"{listed}. PyTorch stopped publishing to its conda channels (pytorch/pytorch#138506), and "
        f"mirrors of them are frozen at the same point. For {want} conda either finds no "
        "solution or silently installs an old build.",
        evidence=tuple(f"conda {f.key} includes {f.channel}" for f in frozen),
        fixes=tuple(fixes),
    )
