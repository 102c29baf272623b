"""cuDNN sub-libraries that torch's cuDNN wheel lacks, answered by a system cuDNN (ED424).

cuDNN 9 is a core (libcudnn.so.9, libcudnn_graph.so.9) that opens its engines by soname at run
time. torch loads the core from its nvidia-cudnn wheel; a sub-library the wheel does not ship
(nvidia-cudnn-cu13 9.20.0.48 has no libcudnn_engines_tensor_ir.so.9) is then looked up on the
loader's search path, where a system cuDNN of the same major (an apt or rpm package in
/usr/lib/<triplet>) answers, and engines of another release meet the wheel's core:
CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH at the first convolution. With no other cuDNN on the
machine the lookup finds nothing and cuDNN does without that engine.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from envdoctor.knowledge.signatures import ErrorEvidence
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.system import SystemFacts
from envdoctor.probes.toolkit import LibraryCopy, ToolkitFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule

_SONAME = re.compile(r"^(?P<soname>libcudnn(?:_[a-z_]+)?\.so\.(?P<major>\d+))(?:\.\d+)*$")
TRACKED_AT = "https://github.com/pytorch/pytorch/issues/188892"


def _sonames(copy: LibraryCopy) -> dict[str, str]:
    """soname -> major for the cuDNN libraries a folder holds (libcudnn_ops.so.9.1.0 -> libcudnn_ops.so.9)."""
    found: dict[str, str] = {}
    for name in copy.files:
        match = _SONAME.match(name)
        if match:
            found[match.group("soname")] = match.group("major")
    return found


_RPM_FAMILY = ("rhel", "fedora", "centos", "rocky", "almalinux", "suse", "opensuse", "amzn")


def _owner_command(ctx: RuleContext, path: str) -> str:
    """The package manager's "which package owns this file" for this distribution."""
    system = ctx.get(SystemFacts)
    names = (system.distro, *system.distro_like) if system is not None else ()
    rpm = any(name and name.lower().startswith(_RPM_FAMILY) for name in names)
    return f"rpm -qf {path}" if rpm else f"dpkg -S {path}"


def _wheel_copy(facts: ToolkitFacts) -> LibraryCopy | None:
    return next((c for c in facts.bundled_libraries if c.family == "cudnn" and c.package), None)


def _gaps(facts: ToolkitFacts) -> Iterator[tuple[LibraryCopy, LibraryCopy, list[str]]]:
    """(the wheel's copy, a system copy, the sonames the system copy adds of the wheel's major)."""
    wheel = _wheel_copy(facts)
    if wheel is None:
        return
    own = _sonames(wheel)
    majors = set(own.values())
    for system in facts.system_libraries:
        if system.family != "cudnn" or system.resolved == wheel.resolved:
            continue
        if system.version is not None and system.version == wheel.version:
            continue  # the same release: a sub-library taken from there matches the core
        added = sorted(s for s, major in _sonames(system).items() if major in majors and s not in own)
        if added:
            yield wheel, system, added


@rule(
    code="ED424",
    name="cudnn-sublibrary-from-system",
    severity=Severity.WARNING,
    summary="torch's cuDNN wheel lacks sub-libraries that a system cuDNN of another release provides",
    needs=(ToolkitFacts, ErrorEvidence),
    doc=RuleDoc(
        what="On Linux, the cuDNN libraries of torch's nvidia-cudnn wheel (site-packages/nvidia/cudnn/lib) "
        "against the cuDNN copies in the loader's own folders (/usr/lib/<triplet>, /usr/lib64, the "
        "ld.so.conf.d folders): a libcudnn_*.so.N of the wheel's major that only the system copy has, "
        "from another release.",
        why="cuDNN's core opens its engine libraries by soname. One the wheel does not ship is found on "
        "the loader's path, so an engine of the system's cuDNN release runs against the wheel's core: "
        "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH at the first convolution (pytorch/pytorch#188892, "
        "#187824). Nothing in the environment shows it: LD_LIBRARY_PATH is empty.",
        fix="Remove the system cuDNN package that holds those files (dpkg -S or rpm -qf names it), unless "
        "another program needs it; then the lookup finds nothing and cuDNN does without that engine. "
        "A torch whose cuDNN wheel ships every sub-library ends it for good.",
        example="torch 2.12.1+cu130 with nvidia-cudnn-cu13 9.20.0.48 (no libcudnn_engines_tensor_ir.so.9) "
        "and NVIDIA's apt package libcudnn9-cuda-12 (9.23.2) in /usr/lib/x86_64-linux-gnu.",
    ),
)
def cudnn_sublibrary_from_system(ctx: RuleContext) -> Iterator[Hit]:
    if ctx.platform.os != "linux":
        return
    facts = ctx.need(ToolkitFacts)
    said = ctx.need(ErrorEvidence).get("cudnn-sublibrary-mismatch")
    for wheel, system, added in _gaps(facts):
        first = f"{system.directory}/{added[0]}"
        names = ", ".join(added)
        version = f"cuDNN {system.version}" if system.version else "a cuDNN of unknown release"
        pronoun = "it" if len(added) == 1 else "them"
        shown = f' The error ("{said.excerpt}") is that mix.' if said is not None else ""
        yield Hit(
            title=f"torch's cuDNN wheel ({wheel.version or 'cuDNN'}) lacks {added[0]}"
            + (f" and {len(added) - 1} more" if len(added) > 1 else "")
            + f"; the system's {version} in {system.directory} answers",
            detail=f"{wheel.directory} (from {wheel.package}) holds no {names}; cuDNN's core opens its "
            f"engines by soname, so the loader takes {pronoun} from {system.directory}, {version}, and "
            f"that code runs against the wheel's cuDNN {wheel.version or ''} core: convolutions fail with "
            f"CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH (or cuDNN picks engines of two releases).{shown} "
            "With no other cuDNN on the loader's path, cuDNN does without that engine.",
            evidence=(
                f"{wheel.package}: {', '.join(sorted(_sonames(wheel)))}",
                f"{system.directory}: {names} ({version})",
            ),
            fixes=(
                Fix(
                    summary="Find the package that put them there, and remove it unless another program "
                    "needs that cuDNN (NVIDIA's are named libcudnn9-cuda-12, libcudnn9-cuda-13 and the like)",
                    commands=(_owner_command(ctx, first),),
                ),
                Fix(
                    summary="Keep that cuDNN and install a torch whose nvidia-cudnn wheel ships every "
                    f"sub-library, when PyTorch publishes one (tracked in {TRACKED_AT})",
                    link=TRACKED_AT,
                ),
            ),
        )
