"""The GPU's device files: /dev/kfd and the render nodes of AMD and Intel GPUs, which this user
must be able to open for ROCm or Level Zero to find the GPU (ED157)."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.gpu_access import GpuAccessFacts
from envdoctor.probes.gpu_vendors import KFD_DEVICE, DeviceNode, GpuVendorFacts
from envdoctor.probes.system import SystemFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule

GROUPS_GUIDE = "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/install/prerequisites.html"
INTEL_GUIDE = "https://dgpu-docs.intel.com/driver/client/overview.html"
# A udev rule per device file (ROCT-Thunk-Interface #36): the group may open it read-write.
_UDEV = {
    "kfd": 'KERNEL=="kfd", GROUP="render", MODE="0660"',
    "render": 'SUBSYSTEM=="drm", KERNEL=="renderD*", GROUP="render", MODE="0660"',
}


def _container(ctx: RuleContext) -> str | None:
    access = ctx.get(GpuAccessFacts)
    if access is not None and access.container:
        return access.container
    system = ctx.get(SystemFacts)
    return system.container if system is not None else None


def _group_shut(node: DeviceNode) -> bool:
    """The file's group may not read and write it, or the group is root: joining a group is no fix."""
    if node.mode is None:
        return False
    return node.group == "root" or node.mode[4:6] != "rw"


def _kind(node: DeviceNode) -> str:
    return "kfd" if node.path == KFD_DEVICE else "render"


@rule(
    code="ED157",
    name="gpu-device-files-not-usable",
    severity=Severity.ERROR,
    summary="this user cannot open the AMD or Intel GPU's device files (/dev/kfd, /dev/dri/renderD*)",
    needs=(GpuVendorFacts,),
    doc=RuleDoc(
        what="Whether this user may open /dev/kfd and each AMD or Intel GPU's render node for reading and "
        "writing (the kernel's own answer, ACLs counted), with the file's group and mode and the user's "
        "groups when it may not.",
        why="ROCm (/dev/kfd and /dev/dri/renderD*) and Intel's Level Zero (/dev/dri/renderD*) open these "
        "files; a user outside their group (render on current distributions, video on older ones) gets "
        "no GPU at all: torch.cuda.is_available() or torch.xpu.is_available() is False, 'No HIP GPUs "
        "are available'. A desktop login grants access to the seat's user only, so SSH sessions and "
        "services lose it, and a container run with --group-add video alone misses render.",
        fix="Add the user to the file's group (sudo usermod -aG render,video $USER) and log in again; in a "
        "container add --group-add for the host's render and video groups; where the file is root's "
        "alone, a udev rule gives the group read-write.",
        example="Intel Arc A770 over SSH: /dev/dri/renderD128 is root:render 0660, the user is not in "
        "render, and the GPU does not show up until `sudo usermod -a -G render $(whoami)`.",
    ),
)
def gpu_device_files_not_usable(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(GpuVendorFacts)
    nodes = facts.unusable_nodes
    if not nodes or not (facts.amd or facts.intel):
        return
    groups = facts.user_groups
    container = _container(ctx)
    guide = GROUPS_GUIDE if facts.amd else INTEL_GUIDE
    # render owns the files on current distributions, video on older ones; AMD's and Intel's guides
    # both add the user to the two.
    wanted = sorted(
        {n.group for n in nodes if n.group and n.group not in ("root", "UNKNOWN")} | {"render", "video"}
    )
    fixes: list[Fix] = []
    shut = [n for n in nodes if _group_shut(n)]
    if container:
        adds = " ".join(f"--group-add $(getent group {g} | cut -d: -f3)" for g in wanted)
        fixes.append(
            Fix(
                summary=f"In this {container} container the process lacks the groups that may open the GPU: "
                "start it with the host's group ids added (the names need not exist in the image)",
                commands=(f"docker run --device=/dev/kfd --device=/dev/dri {adds} IMAGE",),
                link=guide,
            )
        )
    else:
        fixes.append(
            Fix(
                summary=f"Add your user to the {' and '.join(wanted)} group{'s' if len(wanted) > 1 else ''}, "
                "then log out and in again (an SSH session or service gets no desktop seat's access)",
                commands=(f'sudo usermod -aG {",".join(wanted)} "$USER"',),
                link=guide,
            )
        )
    if shut:
        rules = sorted({_UDEV[_kind(n)] for n in shut})
        fixes.append(
            Fix(
                summary="The group may not open "
                + ", ".join(f"{n.path} ({n.mode} {n.owner}:{n.group})" for n in shut)
                + ": give the render group read-write with a udev rule, then reload the rules",
                commands=(
                    f"echo '{chr(10).join(rules)}' | sudo tee /etc/udev/rules.d/70-gpu-compute.rules",
                    "sudo udevadm control --reload-rules && sudo udevadm trigger",
                ),
                link=guide,
            )
        )
    described = [f"{n.path} ({n.mode} {n.owner}:{n.group})" if n.mode else n.path for n in nodes]
    detail = (
        f"This user may not open {', '.join(described)}: ROCm and Level Zero find no GPU without them, so "
        "torch runs on the CPU ('No HIP GPUs are available', torch.xpu.is_available() False)."
    )
    if groups is not None:
        detail += f" The user's groups: {', '.join(groups) or 'none'}."
    yield Hit(
        title=f"This user cannot open the GPU's device file{'s' if len(nodes) > 1 else ''} "
        f"{', '.join(n.path for n in nodes)}",
        detail=detail,
        evidence=(
            *(f"{n.path}: not readable and writable by this user" for n in nodes),
            *((f"groups: {' '.join(groups)}",) if groups is not None else ()),
        ),
        fixes=tuple(fixes),
    )
