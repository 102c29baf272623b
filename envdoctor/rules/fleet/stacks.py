"""Nodes that should run one stack and do not: versions, the driver branch, GPUs."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from envdoctor.fleet.facts import NOT_INSTALLED, FleetFacts, NodeGroup, Stack
from envdoctor.fleet.words import count, names
from envdoctor.model.findings import Fix, Severity
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule

Value = Callable[[Stack], "str | None"]


def spread(facts: FleetFacts, value: Value, absent: str | None = None) -> dict[str, list[str]]:
    """Each value of one stack component -> the nodes with it, most nodes first. A node whose value
    is None counts as `absent` when given, else it is left out (unknown)."""
    by_value: dict[str, list[str]] = {}
    for group in facts.groups:
        if group.stack is None:
            continue
        found = value(group.stack)
        if found is None:
            if absent is None:
                continue
            found = absent
        by_value.setdefault(found, []).extend(group.nodes)
    return dict(sorted(by_value.items(), key=lambda item: (-len(item[1]), item[0])))


def _skew_hit(
    label: str, by_value: dict[str, list[str]], total: int, why: str, fixes: tuple[Fix, ...]
) -> Hit:
    (common, majority), *others = by_value.items()
    odd = [node for _, nodes in others for node in nodes]
    verb = "differ" if label.endswith("s") else "differs"
    if len(others) <= 2:
        title = f"{label} {verb} across nodes: " + "; ".join(
            f"{value} on {count(len(nodes), 'node')} ({names(nodes, 4)})" for value, nodes in others
        )
    else:
        title = (
            f"{label} {verb} across nodes: {len(by_value)} values; "
            f"{count(len(odd), 'node')} differ from {common}"
        )
    spread_lines = "\n".join(
        f"{value}: {count(len(nodes), 'node')} ({names(nodes)})" for value, nodes in others
    )
    return Hit(
        title=title,
        detail=f"Most nodes ({len(majority):,} of {total:,}): {common}. The other "
        f"{count(len(odd), 'node')}:\n{spread_lines}\n{why}",
        evidence=tuple(f"{label} {value}: {count(len(nodes), 'node')}" for value, nodes in by_value.items()),
        fixes=fixes,
    )


def _torch_fix(stack_value: str) -> tuple[Fix, ...]:
    public, _, label = stack_value.partition("+")
    cuda = f" --cuda {label}" if label else ""
    return (
        Fix(
            summary="Install the majority's build on the odd nodes (run this on each of them)",
            commands=(f"envdoctor install --torch {public}{cuda}",),
        ),
    )


_SAME_BUILD = (
    Fix(
        summary="Install the same torch build on every node (torch wheels bundle CUDA, cuDNN and NCCL), "
        "or the same container image everywhere"
    ),
)
# component label, how to read it from a stack, why it matters
_CORE: tuple[tuple[str, Value, str], ...] = (
    (
        "torch",
        lambda s: None if s.torch == NOT_INSTALLED else s.torch,  # no torch at all: ED804 says so
        "Ranks running different torch builds can disagree on collective protocols, tensor "
        "layouts and checkpoint formats: jobs hang or fail on the first collective.",
    ),
    (
        "CUDA (torch's build)",
        lambda s: s.cuda,
        "torch builds for different CUDA versions bundle different NCCL and cuBLAS libraries.",
    ),
    (
        "cuDNN",
        lambda s: s.cudnn,
        "Different cuDNN versions pick different convolution algorithms: ranks drift apart numerically.",
    ),
    (
        "NCCL",
        lambda s: s.nccl,
        "NCCL versions must match across ranks; a mismatch fails or hangs at the first collective.",
    ),
    (
        "Python",
        lambda s: s.python_minor,
        "Pickled objects, compiled extensions and torch.compile caches differ between Python versions.",
    ),
)


@rule(
    code="ED801",
    name="torch-stack-differs",
    severity=Severity.ERROR,
    summary="nodes of one job run different torch, CUDA, cuDNN, NCCL or Python versions",
    needs=(FleetFacts,),
    doc=RuleDoc(
        what="The torch version and build, torch's CUDA, cuDNN and NCCL versions and the Python minor "
        "version of every node, compared across the fleet.",
        why="A distributed job needs every rank on one stack: mixed torch or NCCL builds fail or hang "
        "at the first collective, mixed Python versions break pickled state, and the job dies minutes "
        "into training instead of at start.",
        fix="Install the majority's build on the odd nodes (`envdoctor install --torch X --cuda cuYYY` "
        "prints the command), or run every node from one container image.",
        example="63 nodes have torch 2.5.1+cu124 and one node, provisioned later, has 2.6.0+cu126.",
    ),
)
def torch_stack_differs(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(FleetFacts)
    total = facts.node_count
    for label, value, why in _CORE:
        by_value = spread(facts, value)
        if len(by_value) > 1:
            fixes = _torch_fix(next(iter(by_value))) if label == "torch" else _SAME_BUILD
            yield _skew_hit(label, by_value, total, why, fixes)


def _component(name: str) -> Value:
    return lambda stack: stack.component(name)


def _installed_torch(group: NodeGroup) -> bool:
    return group.stack is not None and group.stack.torch not in (None, NOT_INSTALLED)


@rule(
    code="ED802",
    name="node-software-differs",
    severity=Severity.WARNING,
    summary="nodes differ in NVIDIA driver branch or in torchvision/torchaudio",
    needs=(FleetFacts,),
    doc=RuleDoc(
        what="The NVIDIA driver branch (550 in 550.54.15) and the torchvision and torchaudio versions "
        "of every node, compared across the fleet.",
        why="Driver branches differ in the CUDA versions they run and in bugs; a torchvision built for "
        "another torch fails on some nodes only, so the job fails on whichever rank gets there first.",
        fix="Upgrade the odd nodes to the majority's driver branch; install the same torchvision and "
        "torchaudio everywhere (they pin the torch they were built for).",
        example="All nodes have driver 550.x except two still on 535.x after a partial maintenance.",
    ),
)
def node_software_differs(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(FleetFacts)
    total = facts.node_count
    by_branch = spread(facts, lambda s: None if s.driver_branch is None else f"{s.driver_branch}.x")
    if len(by_branch) > 1:
        yield _skew_hit(
            "NVIDIA driver branch",
            by_branch,
            total,
            "Driver branches differ in the newest CUDA they run and in their bugs.",
            (Fix(summary="Install the majority's driver branch on the odd nodes"),),
        )
    names_seen = sorted({c.name for g in facts.groups if g.stack is not None for c in g.stack.components})
    with_torch = FleetFacts(mode=facts.mode, groups=tuple(g for g in facts.groups if _installed_torch(g)))
    for name in names_seen:
        by_version = spread(with_torch, _component(name), absent="not installed")
        if len(by_version) > 1:
            yield _skew_hit(
                name,
                by_version,
                total,
                f"{name} is built for one torch release; a job importing it fails on the nodes that differ.",
                (Fix(summary=f"Install the same {name} on every node, matching its torch"),),
            )


@rule(
    code="ED803",
    name="gpus-differ",
    severity=Severity.ERROR,
    summary="nodes have different GPU models or GPU counts",
    needs=(FleetFacts,),
    doc=RuleDoc(
        what="The GPUs each node's driver lists (model and count), compared across the fleet.",
        why="A job sized for 8 GPUs per node fails on a node that shows 7 (a GPU fell off the bus or "
        "is held by another job), and mixed models run the whole job at the slowest one's pace.",
        fix="Take the odd nodes out of the job (or the scheduler's partition) until their GPUs are back; "
        "run `nvidia-smi` there to see which GPU is missing.",
        example="999 nodes show 8 × NVIDIA H100 80GB HBM3 and one shows 7 after an Xid 79 error.",
    ),
)
def gpus_differ(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(FleetFacts)
    if not any(g.stack is not None and g.stack.gpus for g in facts.groups):
        return
    by_gpus = spread(facts, lambda s: s.gpu_text)
    if len(by_gpus) > 1:
        yield _skew_hit(
            "GPUs",
            by_gpus,
            facts.node_count,
            "Every node of a job should offer the same GPUs.",
            (
                Fix(
                    summary="Look at the odd nodes' GPUs, and keep them out of the job until they match",
                    commands=("nvidia-smi -L",),
                ),
            ),
        )


RULES = (torch_stack_differs, node_software_differs, gpus_differ)
