"""An index that carries only part of what an install needs, used as the only index (ED509):
PyTorch's per-variant index (torch and the dependencies it mirrors, not always the exact ones a
wheel pins), or a vendor's own index (AWS Neuron, AMD's nightlies) set as pip's index-url.

pip then looks nowhere else: `pip install torch --index-url .../whl/cu130` fails on a dependency
the index lacks ("No matching distribution found for cuda-bindings==13.0.3"), and a global
index-url set to a vendor index breaks every later `pip install` of an ordinary package.
"""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.install import plan as install
from envdoctor.knowledge.mirrors import IndexKind, KnownIndex
from envdoctor.knowledge.signatures import ErrorEvidence
from envdoctor.model.findings import Fix, FixKind, Severity
from envdoctor.model.sources import MirrorFacts, PipSetting
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import GET_STARTED, install_target, plan_commands
from envdoctor.rules.mirrors import pasted
from envdoctor.rules.mirrors.config_edits import (
    PIP_CONFIG_DOCS,
    origin_line,
    pip_set_commands,
    python_command,
)
from envdoctor.rules.mirrors.urls import torch_index, vendor_index, without_credentials
from envdoctor.rules.torch.interpreter import not_found
from envdoctor.shell import quote
from envdoctor.util.records import record

# What PyTorch's own index is expected to carry: a missing one of these is another cause (the
# release or the Python has no build: ED021, ED510).
_TORCH_PACKAGES = frozenset({"torch", "torchvision", "torchaudio", "pytorch-triton", "triton"})


def _partial(url: str) -> KnownIndex | None:
    return torch_index(url) or vendor_index(url)


@record
class _Only:
    url: str
    index: KnownIndex
    where: str  # "pip.conf line 3", "$PIP_INDEX_URL", or "the command line"
    command: pasted.PastedCommand | None = None


def _only_index_in_config(facts: MirrorFacts) -> Iterator[tuple[_Only, PipSetting]]:
    pip = facts.pip
    index = pip.get("index-url")
    if index is None or pip.flag("no-index") or pip.get("extra-index-url") is not None:
        return
    found = _partial(index.value.strip())
    if found is not None:
        yield _Only(index.value.strip(), found, origin_line(index.origin, index.line, facts.home)), index


def _only_index_in_text(evidence: ErrorEvidence | None) -> Iterator[_Only]:
    for command in pasted.commands(evidence):
        if command.index_url is None or command.extra_index_urls or command.indexes:
            continue
        found = _partial(command.index_url)
        if found is not None:
            yield _Only(command.index_url, found, "the command line", command)
    for looked in pasted.looking_in(evidence):
        if len(looked.indexes) == 1:
            found = _partial(looked.indexes[0])
            if found is not None:
                yield _Only(looked.indexes[0], found, "pip's index (“" + looked.line + "”)")


@rule(
    code="ED509",
    name="partial-index-as-only-index",
    severity=Severity.WARNING,
    summary="PyTorch's index or a vendor's index is pip's only index, and it lacks packages the "
    "install needs",
    needs=(MirrorFacts,),
    doc=RuleDoc(
        what="pip's index-url (configured, or on a pasted command line with no extra index) when it "
        "is PyTorch's per-variant index or a vendor's index (AWS Neuron, AMD nightlies): always for a "
        "configured one, and for a command line when the error names a missing package other than "
        "torch itself.",
        why="Such an index carries its own packages and only some dependencies. As the only index, "
        "pip looks nowhere else: an exact pin the index does not mirror (nvidia-cudnn-cu12==9.1.0.70, "
        'cuda-bindings==13.0.3, numpy for an older Python) ends in "No matching distribution found", '
        "and a global index-url pointing there breaks every ordinary `pip install`.",
        fix="Keep PyPI as the index and add the partial index beside it: extra-index-url in the "
        "configuration, or, for torch, pin the build by its local label (torch==2.10.0+cu130) so that "
        "only that index's build can satisfy it.",
        example="python -m pip config set global.index-url https://pip.repos.neuron.amazonaws.com, "
        "written by a setup script: `pip install requests` now fails.",
    ),
)
def partial_index_as_only_index(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(MirrorFacts)
    evidence = ctx.get(ErrorEvidence)
    missing = None
    for item in not_found(evidence):
        if item.package not in _TORCH_PACKAGES:
            missing = item
            break
    for only, setting in _only_index_in_config(facts):
        yield _config_hit(ctx, facts, only, setting, missing.line if missing else None)
        return
    if missing is None:
        return
    for only in _only_index_in_text(evidence):
        url = without_credentials(only.url)
        yield Hit(
            title=f"{only.index.title} was pip's only index, and it does not carry {missing.package}"
            + (f"=={missing.version}" if missing.version else ""),
            detail=f"{url} was the only index ({only.where}). {only.index.title} carries its own "
            f"packages and some of their dependencies, not all of PyPI, so pip could not find "
            f"{missing.package} (“{missing.line}”) and looked nowhere else.",
            evidence=(f"only index: {url}", missing.line),
            fixes=(
                Fix(
                    summary="Give the PyTorch or vendor index as --extra-index-url (PyPI stays the "
                    "index for the dependencies) and pin torch with its local label (torch==X+cuXXX), "
                    "so that only that index's build satisfies it",
                    link="https://pip.pypa.io/en/stable/cli/pip_install/#finding-packages",
                ),
            ),
        )
        return


def _config_hit(
    ctx: RuleContext, facts: MirrorFacts, only: _Only, setting: PipSetting, said: str | None
) -> Hit:
    url = without_credentials(only.url)
    os_name = ctx.platform.os
    unset = pip_set_commands(ctx, facts.pip, setting, [])
    fixes: list[Fix] = []
    if only.index.kind == IndexKind.PYTORCH_WHEELS:
        # Not an extra index: beside PyPI, pip would take the highest version from either (ED502).
        fixes.append(
            Fix(
                summary="Remove the global index-url (PyPI is the index again) and name PyTorch's index "
                "on the torch command only",
                commands=unset,
                link=PIP_CONFIG_DOCS,
            )
        )
        plan = install.plan(install_target(ctx))
        if plan.possible:
            fixes.append(
                Fix(
                    f"The torch command: {plan.reason}",
                    plan_commands(ctx, plan),
                    GET_STARTED,
                    FixKind.INSTALL,
                )
            )
    else:
        add = (
            ()
            if setting.from_env
            else (
                f"{python_command(ctx)} -m pip config set global.extra-index-url {quote(only.url, os_name)}",
            )
        )
        summary = (
            f"Move it from {setting.origin} to PIP_EXTRA_INDEX_URL (PyPI stays the index)"
            if setting.from_env
            else "Make it an extra index instead (PyPI stays the index for everything else)"
        )
        fixes.append(Fix(summary=summary, commands=unset + add, link=PIP_CONFIG_DOCS))
    detail = (
        f"pip's index-url is {url} ({only.where}), with no other index. {only.index.title} carries its "
        "own packages and some of their dependencies, not all of PyPI: any package it lacks cannot "
        "be installed at all, whatever the command asks for."
    )
    if said:
        detail += f" The error shows it: “{said}”."
    return Hit(
        title=f"pip's only index is {only.index.title}: packages it does not carry cannot be installed",
        detail=detail,
        evidence=(f"pip index-url = {url} ({only.where})", "no extra-index-url"),
        fixes=tuple(fixes),
    )
