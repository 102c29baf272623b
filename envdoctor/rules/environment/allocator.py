"""The CUDA caching allocator's settings (ED163): PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF with
an option the installed torch does not know, a value it rejects, or a variable name it does not
read (knowledge/alloc_conf.json)."""

from __future__ import annotations

from collections.abc import Iterator

from packaging.version import InvalidVersion, Version

from envdoctor.knowledge import alloc_conf
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.environment import EnvironmentFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.environment.common import set_fix, unset_fix
from envdoctor.rules.fixes import planned_fix
from envdoctor.util.records import record

DOCS = "https://pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf"
CUDA_NAME = "PYTORCH_CUDA_ALLOC_CONF"
UNIFIED_NAME = "PYTORCH_ALLOC_CONF"


@record
class Problem:
    entry: str  # the option:value pair as written
    why: str  # a clause: what torch makes of it
    fails: bool  # True: CUDA initialisation raises; False: silently not applied


def _version(text: str | None) -> Version | None:
    try:
        return Version(text.split("+", 1)[0]) if text else None
    except InvalidVersion:
        return None


def problems(value: str, torch: Version) -> list[Problem]:
    """What torch `torch` rejects in an allocator setting (options envdoctor does not know: nothing)."""
    found = []
    for raw in value.split(","):
        entry = raw.strip()
        if not entry:
            continue
        name, sep, setting = (part.strip() for part in entry.partition(":"))
        if not sep and "=" in entry:
            found.append(
                Problem(
                    entry,
                    "is not option:value (the separator is a colon): torch reads it as one "
                    f'unknown option ("Unrecognized CachingAllocator option: {entry}")',
                    True,
                )
            )
            continue
        known = alloc_conf.option(name)
        if known is None:
            continue
        if torch < Version(known.first):
            found.append(
                Problem(
                    entry,
                    f"is an option torch {torch} does not know (added in {known.first}): "
                    f'"Unrecognized CachingAllocator option: {name}"',
                    True,
                )
            )
        elif known.kind == "bool" and setting not in ("True", "False"):
            found.append(
                Problem(
                    entry,
                    f'takes exactly True or False (capitalised): "Expected a single True/False '
                    f'argument for {name}"',
                    True,
                )
            )
        elif known.kind == "choice" and known.choices and setting not in known.choices:
            found.append(Problem(entry, f"takes one of {', '.join(known.choices)}", True))
    return found


def _without(value: str, bad: list[Problem]) -> str:
    drop = {p.entry for p in bad}
    return ",".join(e.strip() for e in value.split(",") if e.strip() and e.strip() not in drop)


def _option_fixes(ctx: RuleContext, name: str, value: str, bad: list[Problem]) -> tuple[Fix, ...]:
    rest = _without(value, bad)
    listed = ", ".join(p.entry for p in bad)
    first = (
        set_fix(ctx, name, rest, f"Take {listed} out of {name}")
        if rest
        else unset_fix(ctx, name, f"Unset {name} (it holds nothing this torch accepts)", DOCS)
    )
    fixes = [first]
    if any("does not know" in p.why for p in bad):
        upgrade = planned_fix(ctx, "Upgrade torch to a release that knows the option")
        if upgrade is not None:
            fixes.append(upgrade)
    return tuple(fixes)


@rule(
    code="ED163",
    name="cuda-alloc-conf-invalid",
    severity=Severity.ERROR,
    summary="PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF holds what the installed torch rejects or ignores",
    needs=(EnvironmentFacts, TorchFacts),
    doc=RuleDoc(
        what="The allocator settings in PYTORCH_CUDA_ALLOC_CONF and PYTORCH_ALLOC_CONF against the "
        "installed torch: options it does not know yet (expandable_segments before 2.1), values it "
        "rejects (expandable_segments:true, option=value), and PYTORCH_ALLOC_CONF where torch does not "
        "read it (before 2.9) or ignores expandable_segments in it for CUDA (2.9.x).",
        why='torch parses the setting when CUDA starts: an unknown option stops it ("RuntimeError: '
        'Unrecognized CachingAllocator option: expandable_segments"), so every .cuda() call fails; a '
        "setting under a name this torch does not read is silently not applied, and the memory it "
        "was meant to save is not saved (out-of-memory errors).",
        fix="Remove what this torch rejects, or upgrade torch to a release that knows it; on 2.9.x "
        "use the deprecated PYTORCH_CUDA_ALLOC_CONF name for expandable_segments.",
        example="A training script sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; the "
        "environment has torch 2.0.1.",
    ),
)
def cuda_alloc_conf_invalid(ctx: RuleContext) -> Iterator[Hit]:
    env = ctx.need(EnvironmentFacts)
    torch = ctx.need(TorchFacts)
    version = _version(torch.version or torch.dist_version)
    if version is None or not torch.installed:
        return
    cuda_name, unified = env.variable(CUDA_NAME), env.variable(UNIFIED_NAME)
    for name, value in ((CUDA_NAME, cuda_name), (UNIFIED_NAME, unified)):
        if value is None:
            continue
        bad = problems(value, version)
        if name == UNIFIED_NAME and cuda_name is None:
            yield from _unified_not_read(ctx, torch, version, value)
            known = alloc_conf.variable(UNIFIED_NAME)
            if known is not None and version < Version(known.first):
                continue  # not read at all: its options cannot fail either
        if not bad:
            continue
        yield Hit(
            title=f"{name} holds {'what' if len(bad) > 1 else 'an entry'} torch {version} rejects: "
            f"CUDA fails to start",
            detail=f"{name}={value!r}: "
            + "; ".join(f"{p.entry!r} {p.why}" for p in bad)
            + ". torch parses the setting when CUDA is first used, so every model.cuda() or "
            "tensor.to('cuda') raises.",
            evidence=(f"{name}={value!r}", f"torch {torch.version or torch.dist_version}"),
            fixes=_option_fixes(ctx, name, value, bad),
        )


def _unified_not_read(ctx: RuleContext, torch: TorchFacts, version: Version, value: str) -> Iterator[Hit]:
    known = alloc_conf.variable(UNIFIED_NAME)
    if known is None:
        return
    evidence = (
        f"{UNIFIED_NAME}={value!r}",
        f"{CUDA_NAME} unset",
        f"torch {torch.version or torch.dist_version}",
    )
    copy = set_fix(
        ctx, CUDA_NAME, value, f"Set the same value as {CUDA_NAME}, the name this torch reads", DOCS
    )
    if version < Version(known.first):
        yield Hit(
            title=f"torch {version} does not read {UNIFIED_NAME}: the allocator setting is not applied",
            detail=f"{UNIFIED_NAME} is the name torch reads from {known.first} on; torch {version} reads "
            f"only {CUDA_NAME}, so {value!r} has no effect and the memory it was meant to save is not saved.",
            evidence=evidence,
            fixes=(copy,),
        )
        return
    fixed = known.cuda_expandable_segments_from
    if (
        torch.cuda
        and fixed is not None
        and version < Version(fixed)
        and any(e.strip().startswith("expandable_segments") for e in value.split(","))
    ):
        upgrade = planned_fix(ctx, f"Upgrade torch ({fixed} reads it)")
        yield Hit(
            title=f"torch {version} ignores expandable_segments in {UNIFIED_NAME} for CUDA",
            detail=f"torch {version} warns that {CUDA_NAME} is deprecated, yet for CUDA it applies "
            f"expandable_segments only from {CUDA_NAME}: set as {UNIFIED_NAME} it stays False "
            f"(pytorch/pytorch#183387), which costs memory (out-of-memory errors) without a word; "
            f"{fixed} reads it.",
            evidence=evidence,
            fixes=(copy,) + ((upgrade,) if upgrade is not None else ()),
        )
