"""conda's channels: the pytorch and nvidia channels, where PyTorch stopped publishing at 2.5
(ED503)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

from packaging.version import Version

from envdoctor.install import plan as install
from envdoctor.install.packages import CondaRequest
from envdoctor.knowledge import mirrors, parse_version
from envdoctor.knowledge.signatures import ErrorEvidence
from envdoctor.model.findings import Fix, Severity
from envdoctor.model.sources import MirrorFacts, is_variable
from envdoctor.probes.mirrors import origin_text
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import unset_command
from envdoctor.rules.fixes import GET_STARTED, conda_fix, install_target, plan_commands
from envdoctor.rules.mirrors import pasted
from envdoctor.rules.mirrors.config_edits import CONDA_CONFIG_DOCS, origin_line
from envdoctor.rules.mirrors.urls import channel_name
from envdoctor.shell import quote
from envdoctor.util.lazy_re import Lazy
from envdoctor.util.records import record

CONDA_CHANNEL_END = "https://github.com/pytorch/pytorch/issues/138506"


@record
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
        "conda environment, or take conda-forge's pytorch package. Under `envdoctor why`, the same "
        "from conda's own output: the channels it lists, and a pytorch newer than theirs that it "
        "could not find (or a pytorch-cuda meta-package beside pytorch>=2.6).",
        example="~/.condarc: channels [pytorch, nvidia, defaults] on a machine that needs torch "
        "2.7 for an RTX 5090.",
    ),
)
def conda_pytorch_channel_frozen(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(MirrorFacts)
    torch = ctx.get(TorchFacts)
    frozen = _frozen_in_use(facts, torch)
    if not frozen:
        yield from _pasted_environment(ctx)
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
    # conda-forge's pytorch picks its CUDA build from the driver (the __cuda virtual package).
    python = ctx.get(PythonFacts)
    prefix = python.prefix if python is not None and python.is_conda else None
    forge = conda_fix(
        ctx, f"{remove_text}; then use conda-forge's build", CondaRequest(("pytorch",), prefix, "conda-forge")
    )
    fixes.append(replace(forge, commands=(*remove_commands, *forge.commands), link=CONDA_CHANNEL_END))
    yield Hit(
        title=f"conda is set to use the {names} channel{'s' if len(frozen) > 1 else ''}, which stopped at "
        f"torch {last}",
        detail=f"{listed}. PyTorch stopped publishing to its conda channels (pytorch/pytorch#138506), and "
        f"mirrors of them are frozen at the same point. For {want} conda either finds no "
        "solution or silently installs an old build.",
        evidence=tuple(f"conda {f.key} includes {f.channel}" for f in frozen),
        fixes=tuple(fixes),
    )


# conda's output: "Channels:" / "Current channels:" and their "  - name" lines; a requested pytorch.
_CHANNEL_HEADER = Lazy(r"^\s*(?:Current\s+)?channels:\s*$", re.IGNORECASE)
_LIST_ITEM = Lazy(r"^\s*-\s+(?P<item>\S+)\s*$")
_PYTORCH_SPEC = Lazy(r"(?<![\w-])pytorch\s*(?:==?|>=|~=)\s*(?P<version>\d+\.\d+)")
_PYTORCH_CUDA = Lazy(r"(?<![\w-])pytorch-cuda\s*=")


def _pasted_environment(ctx: RuleContext) -> Iterator[Hit]:
    """conda's output in the pasted text: a frozen channel in its channel list, and a pytorch newer
    than that channel's last release asked for (not found, or paired with pytorch-cuda)."""
    lines = pasted.text_lines(ctx.get(ErrorEvidence))
    if not lines:
        return
    channels: list[str] = []
    in_list = False
    wanted: Version | None = None
    said = ""
    meta = None
    for line in lines:
        if _CHANNEL_HEADER.match(line):
            in_list = True
            continue
        item = _LIST_ITEM.match(line)
        if in_list and item is not None:
            channels.append(channel_name(item.group("item")))
            continue
        if line.strip():
            in_list = False
        spec = _PYTORCH_SPEC.search(line)
        if spec is not None:
            version = parse_version(spec.group("version"))
            if version is not None and (wanted is None or version > wanted):
                wanted, said = version, line.strip()[:200]
        if meta is None and _PYTORCH_CUDA.search(line):
            meta = line.strip()[:200]
    frozen = [(name, mirrors.conda_channel_last_torch(name)) for name in dict.fromkeys(channels)]
    frozen = [(name, last) for name, last in frozen if last is not None]
    if meta is not None and not frozen:
        frozen = [
            ("pytorch", mirrors.conda_channel_last_torch("pytorch") or "2.5.1")
        ]  # pytorch-cuda lives there
    if wanted is None or not frozen:
        return
    last = max((parse_version(v) or Version("0")) for _, v in frozen)
    if wanted.release[:2] <= last.release[:2]:
        return
    names = " and ".join(n for n, _ in frozen)
    plan = install.plan(install_target(ctx))
    fixes = []
    if plan.possible:
        fixes.append(
            Fix(
                summary=f"Leave torch out of the conda file (and drop the {names} channel); install it with "
                f"pip inside the conda environment: {plan.reason}",
                commands=plan_commands(ctx, plan),
                link=GET_STARTED,
            )
        )
    fixes.append(
        Fix(
            summary=f"Pin pytorch to {last.major}.{last.minor} (the last release on the {names} channel), "
            "or take conda-forge's pytorch (pytorch-gpu for CUDA) instead of the pytorch channel",
            link=CONDA_CHANNEL_END,
        )
    )
    basis = f"“{said}”" + (f" with “{meta}”" if meta else "")
    yield Hit(
        title=f"the conda environment asks for pytorch {wanted} from the {names} channel, which stopped "
        f"at torch {last}",
        detail=f"conda's output lists the {names} channel and asks for {basis}. PyTorch stopped "
        f"publishing to its conda channels after {last} (pytorch/pytorch#138506): pytorch {wanted} "
        "is not there, so the solve fails (PackagesNotFoundError), or a CPU-only pytorch from another "
        "channel is paired with the pytorch channel's pytorch-cuda meta-package.",
        evidence=(f"conda channels: {', '.join(channels) or names}", said),
        fixes=tuple(fixes),
    )
