"""NVSwitch systems (HGX/DGX A100, H100, H200, B200): CUDA starts only once the NVIDIA Fabric
Manager, of exactly the driver's version, has brought up the NVLink fabric."""

from __future__ import annotations

import re
from collections.abc import Iterator

from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.nvml.driver_causes import distribution, elsewhere

FABRIC_MANAGER_GUIDE = "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html"
_NOT_READY = re.compile(r"system not yet initiali[sz]ed|cudaErrorSystemNotReady|error 802\b", re.IGNORECASE)


def _torch_said(ctx: RuleContext) -> str | None:
    """torch's own "system not yet initialized" (error 802), where it gave one."""
    torch = ctx.get(TorchFacts)
    if torch is None:
        return None
    texts = [*torch.warnings, *(e.message for e in torch.errors)]
    return next((t for t in texts if _NOT_READY.search(t)), None)


@rule(
    code="ED135",
    name="fabric-manager-not-running",
    severity=Severity.ERROR,
    summary="an NVSwitch system whose Fabric Manager is not running (or not the driver's version)",
    needs=(NvmlFacts,),
    doc=RuleDoc(
        what="NVSwitch chips on the PCI bus, or GPUs whose NVLink fabric state (NVML) is not 'completed', "
        "against the nvidia-fabricmanager service's state and nv-fabricmanager's version.",
        why="On NVSwitch systems the GPUs take no CUDA work until the Fabric Manager has set up the "
        "NVLink fabric; it must be installed, running, and of exactly the driver's version. Without it "
        "nvidia-smi looks fine, yet every CUDA program fails with error 802 'system not yet "
        "initialized' (torch: 'Unexpected error from cudaGetDeviceCount()').",
        fix="Install the Fabric Manager package of the driver's branch (the same version as the "
        "driver) and enable its service; restart it after a driver update.",
        example="An 8x A100 HGX server: 'cuda runtime error (802) : system not yet initialized' until "
        "nvidia-fabricmanager is installed and started.",
    ),
)
def fabric_manager_not_running(ctx: RuleContext) -> Iterator[Hit]:
    nvml = ctx.need(NvmlFacts)
    host = nvml.host
    if not nvml.working or host is None or elsewhere(ctx) is not None:
        return
    unfinished = [s for s in host.gpu_fabric if s in ("not_started", "in_progress")]
    if host.nvswitches == 0 and not unfinished:
        return
    driver = nvml.driver_version
    state = host.fabric_manager
    version = host.fabric_manager_version
    mismatched = bool(version and driver and version != driver)
    if state == "active" and not mismatched and not unfinished:
        return
    evidence = []
    if host.nvswitches:
        evidence.append(f"{host.nvswitches} NVSwitch chips on the PCI bus")
    if unfinished:
        evidence.append(f"GPU fabric state: {', '.join(sorted(set(unfinished)))}")
    evidence.append(f"nvidia-fabricmanager: {state or 'unknown'}")
    if version:
        evidence.append(f"nv-fabricmanager {version}, driver {driver}")
    said = _torch_said(ctx)
    if said:
        evidence.append("torch: system not yet initialized (error 802)")
    if state == "not-installed":
        why = "the Fabric Manager is not installed"
    elif mismatched:
        why = f"the Fabric Manager is {version} but the driver is {driver}: it must be the same version"
    elif state == "active":
        why = (
            "the Fabric Manager runs but the fabric is not ready yet (`journalctl -u "
            "nvidia-fabricmanager` says why)"
        )
    else:
        why = f"the nvidia-fabricmanager service is {state or 'not known to be running'}"
    branch = (driver or "").split(".", 1)[0]
    how = distribution(ctx)
    commands = how.fabric_manager_for(branch) if branch else ()
    exact = f" of exactly the driver's version ({driver})" if driver else ""
    if commands:
        fix = Fix(
            summary=f"Install the Fabric Manager{exact} and start it (on {how.family})",
            commands=(*commands, "nvidia-smi -q | grep -A2 -i fabric"),
            link=FABRIC_MANAGER_GUIDE,
        )
    else:
        fix = Fix(
            summary=f"Install NVIDIA's Fabric Manager{exact} from NVIDIA's repository for your distribution, "
            "then `sudo systemctl enable --now nvidia-fabricmanager`",
            link=FABRIC_MANAGER_GUIDE,
        )
    yield Hit(
        title="this NVSwitch system's Fabric Manager is not running, so CUDA cannot start",
        detail=f"The GPUs are connected through NVSwitch, which carries no CUDA work until the NVIDIA "
        f"Fabric Manager has set up the fabric, and {why}. nvidia-smi works, but CUDA fails with error 802 "
        "'system not yet initialized' and torch.cuda.is_available() is False"
        + (" (torch says so: error 802)" if said else "")
        + ".",
        evidence=tuple(evidence),
        fixes=(fix,),
    )
