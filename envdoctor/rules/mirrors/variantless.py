"""A PyTorch wheel index named without its variant (ED510): the root https://download.pytorch.org/whl
listing, or a torch_stable.html page that lists every CUDA variant at once (on PyTorch's host or a
mirror's). pip then picks among all variants by version alone (torch==1.2.0 resolves to +cu92), and
the root listing no longer carries the older builds at all (+cu121 is only under /whl/cu121/).
"""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.install import plan as install
from envdoctor.knowledge.signatures import ErrorEvidence
from envdoctor.model.findings import Fix, FixKind, Severity
from envdoctor.model.sources import MirrorFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import GET_STARTED, install_target, plan_commands
from envdoctor.rules.mirrors import pasted
from envdoctor.rules.mirrors.config_edits import origin_line
from envdoctor.rules.mirrors.stale_mirrors import configured_urls
from envdoctor.rules.mirrors.urls import is_variantless_torch_index, torch_index, without_credentials
from envdoctor.util.records import record


@record
class _Found:
    url: str
    where: str
    setting: str


def _found(ctx: RuleContext) -> Iterator[_Found]:
    facts = ctx.need(MirrorFacts)
    for item in configured_urls(facts):
        if item.tool in ("pip", "uv") and is_variantless_torch_index(item.url):
            yield _Found(
                item.url, origin_line(item.origin, item.line, facts.home), f"{item.tool} {item.setting}"
            )
    for command in pasted.commands(ctx.get(ErrorEvidence)):
        for url in command.sources:
            if is_variantless_torch_index(url):
                yield _Found(url, f"the pasted command (“{command.line}”)", f"{command.tool} command line")


@rule(
    code="ED510",
    name="pytorch-index-without-variant",
    severity=Severity.WARNING,
    summary="a PyTorch wheel index is named without its variant (/whl or torch_stable.html): pip "
    "picks any variant",
    needs=(MirrorFacts,),
    doc=RuleDoc(
        what="Index and find-links URLs (pip and uv configuration, or a pasted install command) that "
        "name PyTorch's wheel host or a mirror of it without a variant: the root /whl listing, "
        "/whl/torch/, or the all-variants torch_stable.html page.",
        why="Such a listing holds every variant (cpu, cu118, cu121, rocm...) side by side, so pip "
        "chooses by version alone: `torch==1.2.0 -f .../torch_stable.html` installs +cu92, not the "
        "CUDA the command meant. The root listing also stopped carrying older builds (2.3.1+cu121 is "
        "only under /whl/cu121/), and mirrors stopped syncing torch_stable.html (from cu122 on).",
        fix="Name the variant's own index: --index-url https://download.pytorch.org/whl/cu121 (or the "
        "mirror's /cu121), with the version pinned by its local label when another index is present.",
        example="pip install --extra-index-url https://download.pytorch.org/whl torch==2.3.1+cu121: "
        '"No matching distribution found" although the wheel exists under /whl/cu121/.',
    ),
)
def pytorch_index_without_variant(ctx: RuleContext) -> Iterator[Hit]:
    seen: set[str] = set()
    for found in _found(ctx):
        if found.url in seen:
            continue
        seen.add(found.url)
        index = torch_index(found.url)
        url = without_credentials(found.url)
        fixes = []
        plan = install.plan(install_target(ctx))
        if plan.possible:
            fixes.append(
                Fix(
                    summary=f"Use the variant's own index instead of {url}: {plan.reason}",
                    commands=plan_commands(ctx, plan),
                    link=GET_STARTED,
                    kind=FixKind.INSTALL,
                )
            )
        else:
            fixes.append(
                Fix(
                    summary=f"Replace {url} with the variant's own index (…/whl/cu121, …/whl/cpu)",
                    link=GET_STARTED,
                )
            )
        yield Hit(
            title=f"{url} names {index.title if index else 'a PyTorch wheel index'} without a variant",
            detail=f"{url} is used as {found.setting} ({found.where}). That listing holds every variant "
            "side by side, so pip picks one by version alone (the CUDA build you get is whichever sorts "
            "highest), and the root listing no longer carries older builds at all: they are only under "
            "the variant's own index (/whl/cu121/, /whl/cpu/).",
            evidence=(f"{found.setting} = {url}",),
            fixes=tuple(fixes),
        )
