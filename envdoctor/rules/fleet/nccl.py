"""NCCL (and gloo) settings that are traps: an interface that is not there, transports turned off,
and settings that differ between nodes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from envdoctor.fleet.facts import FleetFacts, RankInfo
from envdoctor.fleet.words import count, names
from envdoctor.model.findings import Fix, Severity
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule

_TRUE = ("1", "true", "yes", "on")
# Settings that name per-node things by design; differing values are expected.
_PER_NODE = frozenset({"NCCL_DEBUG_FILE", "NCCL_HOSTID", "NCCL_TOPO_FILE", "NCCL_TOPO_DUMP_FILE"})


def nccl_ifname_matches(spec: str, interfaces: Sequence[str]) -> tuple[str, ...]:
    """The interfaces NCCL_SOCKET_IFNAME selects, as NCCL's docs define it: comma-separated prefixes,
    `=name` for an exact name, and a leading `^` to exclude instead of include."""
    exclude = spec.startswith("^")
    items = [item.strip() for item in (spec[1:] if exclude else spec).split(",") if item.strip()]

    def hit(interface: str, item: str) -> bool:
        return interface == item[1:] if item.startswith("=") else interface.startswith(item)

    if exclude:
        return tuple(i for i in interfaces if not any(hit(i, item) for item in items) and i != "lo")
    return tuple(i for i in interfaces if any(hit(i, item) for item in items))


def gloo_ifname_missing(spec: str, interfaces: Sequence[str]) -> tuple[str, ...]:
    """GLOO_SOCKET_IFNAME lists exact interface names (torch splits it at commas); the absent ones."""
    return tuple(name.strip() for name in spec.split(",") if name.strip() and name.strip() not in interfaces)


def _per_node(facts: FleetFacts) -> dict[str, RankInfo]:
    """One rank per node (the lowest): environment and interfaces are the node's."""
    nodes: dict[str, RankInfo] = {}
    for info in sorted(facts.rank_infos(), key=lambda i: i.rank):
        nodes.setdefault(info.node, info)
    return nodes


@rule(
    code="ED820",
    name="nccl-socket-ifname-missing",
    severity=Severity.ERROR,
    summary="NCCL_SOCKET_IFNAME or GLOO_SOCKET_IFNAME names no interface the node has",
    needs=(FleetFacts,),
    doc=RuleDoc(
        what="NCCL_SOCKET_IFNAME (prefixes, `=exact`, `^exclude`, as NCCL defines it) and "
        "GLOO_SOCKET_IFNAME (exact names) against the network interfaces each node really has.",
        why="With no matching interface NCCL stops at start-up with 'Bootstrap : no socket interface "
        "found' and gloo cannot connect; a value copied from another cluster (eth0 where nodes have "
        "ens5 or ib0) is the usual cause.",
        fix="Set the variable to an interface the nodes have (`ip -brief link` lists them), or unset it "
        "and let the library choose.",
        example="The job script sets NCCL_SOCKET_IFNAME=eth0, but the new nodes name their interface "
        "enp65s0f0.",
    ),
)
def socket_ifname_missing(ctx: RuleContext) -> Iterator[Hit]:
    for node, info in _per_node(ctx.need(FleetFacts)).items():
        if not info.interfaces:
            continue  # not known: nothing to compare with
        nccl = info.env_value("NCCL_SOCKET_IFNAME")
        if nccl and not nccl_ifname_matches(nccl, info.interfaces):
            yield _ifname_hit(node, "NCCL_SOCKET_IFNAME", nccl, info.interfaces)
        gloo = info.env_value("GLOO_SOCKET_IFNAME")
        if gloo and gloo_ifname_missing(gloo, info.interfaces):
            yield _ifname_hit(node, "GLOO_SOCKET_IFNAME", gloo, info.interfaces)


def _ifname_hit(node: str, variable: str, value: str, interfaces: Sequence[str]) -> Hit:
    return Hit(
        title=f"{variable}={value} on {node} matches none of its network interfaces",
        detail=f"{node} has: {', '.join(interfaces)}. The collective library will find no interface "
        "to use and fail at start-up.",
        evidence=(f"{variable}={value}", f"interfaces on {node}: {', '.join(interfaces)}"),
        fixes=(
            Fix(
                summary=f"List {node}'s interfaces, then set {variable} to one of them (or unset it)",
                commands=("ip -brief link", f"unset {variable}"),
            ),
        ),
    )


@rule(
    code="ED821",
    name="nccl-p2p-disabled",
    severity=Severity.WARNING,
    summary="NCCL_P2P_DISABLE is set on nodes with several GPUs",
    needs=(FleetFacts,),
    doc=RuleDoc(
        what="NCCL_P2P_DISABLE=1 on a node whose ranks see two or more GPUs.",
        why="It turns off direct GPU-to-GPU copies (NVLink and PCIe peer-to-peer): every intra-node "
        "transfer goes through host memory, often several times slower. It is commonly left in job "
        "scripts as a workaround for an old hang.",
        fix="Unset NCCL_P2P_DISABLE; if it was there for a hang, look for the cause (PCIe ACS on bare "
        "metal, an IOMMU setting, a driver bug) instead.",
        example="A job script copied from a forum post exports NCCL_P2P_DISABLE=1 on an 8 × H100 node "
        "with NVLink.",
    ),
)
def p2p_disabled(ctx: RuleContext) -> Iterator[Hit]:
    nodes = [
        node
        for node, info in _per_node(ctx.need(FleetFacts)).items()
        if (info.env_value("NCCL_P2P_DISABLE") or "").lower() in _TRUE and info.gpu_count >= 2
    ]
    if nodes:
        yield Hit(
            title=f"NCCL_P2P_DISABLE=1 on {count(len(nodes), 'node')} with several GPUs: {names(nodes)}",
            detail="GPU-to-GPU copies inside these nodes go through host memory instead of NVLink/PCIe "
            "peer-to-peer.",
            evidence=tuple(f"{node}: NCCL_P2P_DISABLE=1" for node in nodes[:8]),
            fixes=(Fix(summary="Unset it for the job", commands=("unset NCCL_P2P_DISABLE",)),),
        )


@rule(
    code="ED822",
    name="nccl-ib-disabled",
    severity=Severity.WARNING,
    summary="NCCL_IB_DISABLE is set on nodes that have InfiniBand/RoCE devices",
    needs=(FleetFacts,),
    doc=RuleDoc(
        what="NCCL_IB_DISABLE=1 on a node that lists InfiniBand or RoCE devices in /sys/class/infiniband.",
        why="NCCL then sends inter-node traffic over TCP sockets instead of RDMA: typically a tenth of "
        "the bandwidth, with far more CPU load.",
        fix="Unset NCCL_IB_DISABLE; if InfiniBand failed before, check `ibstat` (port state Active) and "
        "NCCL_IB_HCA instead.",
        example="NCCL_IB_DISABLE=1 was set while debugging a single-node run and stayed in the cluster's "
        "module file.",
    ),
)
def ib_disabled(ctx: RuleContext) -> Iterator[Hit]:
    found = [
        (node, info)
        for node, info in _per_node(ctx.need(FleetFacts)).items()
        if (info.env_value("NCCL_IB_DISABLE") or "").lower() in _TRUE and info.infiniband
    ]
    if found:
        nodes = [node for node, _ in found]
        yield Hit(
            title=f"NCCL_IB_DISABLE=1 on {count(len(nodes), 'node')} with InfiniBand/RoCE: {names(nodes)}",
            detail="These nodes have RDMA devices ("
            + ", ".join(sorted({d for _, i in found for d in i.infiniband})[:8])
            + "), but NCCL is told to send over TCP sockets instead.",
            evidence=tuple(
                f"{node}: NCCL_IB_DISABLE=1, devices {', '.join(i.infiniband)}" for node, i in found[:8]
            ),
            fixes=(
                Fix(summary="Unset it, and check the ports", commands=("unset NCCL_IB_DISABLE", "ibstat")),
            ),
        )


@rule(
    code="ED823",
    name="nccl-settings-differ",
    severity=Severity.WARNING,
    summary="NCCL_* settings differ between the nodes of one job",
    needs=(FleetFacts,),
    doc=RuleDoc(
        what="Every NCCL_* and TORCH_NCCL_* variable as each node's ranks see it, compared across "
        "nodes (names that point at per-node files are left out).",
        why="NCCL expects the same transport choices on every rank: one node with NCCL_P2P_DISABLE or "
        "a different NCCL_PROTO or NCCL_ALGO makes collectives slow or hang, and it is invisible "
        "from the node the job is launched on.",
        fix="Set the variables in one place for the whole job (the batch script or the pod template), "
        "not in per-node shell profiles or module files.",
        example="node-7's ~/.bashrc exports NCCL_P2P_DISABLE=1; no other node sets it.",
    ),
)
def settings_differ(ctx: RuleContext) -> Iterator[Hit]:
    nodes = _per_node(ctx.need(FleetFacts))
    if len(nodes) < 2:
        return
    variables = sorted(
        {
            v.name
            for info in nodes.values()
            for v in info.env
            if v.name.startswith(("NCCL_", "TORCH_NCCL_")) and v.name not in _PER_NODE
        }
    )
    for variable in variables:
        by_value: dict[str, list[str]] = {}
        for node, info in nodes.items():
            value = info.env_value(variable)
            by_value.setdefault("unset" if value is None else f"{variable}={value}", []).append(node)
        if len(by_value) < 2:
            continue
        # Most nodes first; on a tie "unset" leads, so the node that sets something is the odd one.
        ordered = sorted(by_value.items(), key=lambda item: (-len(item[1]), item[0] != "unset", item[0]))
        (common, majority), *others = ordered
        odd = "; ".join(f"{value} on {names(n)}" for value, n in others)
        yield Hit(
            title=f"{variable} differs across nodes: {odd}",
            detail=f"{count(len(majority), 'node')} {'has' if len(majority) == 1 else 'have'} {common}. "
            "NCCL needs the same transport settings on every rank.",
            evidence=tuple(f"{value}: {', '.join(n[:8])}" for value, n in ordered),
            fixes=(Fix(summary=f"Set {variable} once for the whole job (or nowhere)"),),
        )


RULES = (socket_ifname_missing, p2p_disabled, ib_disabled, settings_differ)
