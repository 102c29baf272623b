"""The toolkit torch.utils.cpp_extension would compile CUDA extensions with: another CUDA major
version than torch's (ED402), another minor version (ED403), or not a toolkit at all (ED404)."""

from __future__ import annotations

import dataclasses
import ntpath
import posixpath
from collections.abc import Iterator

from envdoctor import knowledge
from envdoctor.install import plan as install
from envdoctor.knowledge import cuda_libraries
from envdoctor.knowledge.nvcc import version2
from envdoctor.knowledge.signatures import ErrorEvidence
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.system import SystemFacts
from envdoctor.probes.toolkit import Toolkit, ToolkitFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import set_variable_fixes
from envdoctor.rules.fixes import GET_STARTED, install_target, plan_commands
from envdoctor.rules.toolkit.builds import toolkit_fixes
from envdoctor.rules.toolkit.toolkits import (
    BUNDLED,
    TOOLKIT_ARCHIVE,
    complete_toolkits,
    major,
    major_minor,
    matching_toolkit,
    torch_cuda,
)
from envdoctor.util.records import record


@record
class _ExtensionToolkit:
    torch_cuda: str
    toolkit_cuda: str
    home: str
    chosen_by: str


def _extension_toolkit(ctx: RuleContext) -> _ExtensionToolkit | None:
    facts = ctx.need(ToolkitFacts)
    torch = ctx.get(TorchFacts)
    cuda = torch_cuda(ctx)
    home = facts.cuda_home
    if torch is None or cuda is None or home is None or not home.version:
        return None
    return _ExtensionToolkit(cuda, home.version, home.path, home.chosen_by)


def _point_cuda_home(ctx: RuleContext, facts: ToolkitFacts, toolkit: Toolkit, why: str) -> tuple[Fix, ...]:
    return set_variable_fixes(ctx.platform.os, facts.shell, "CUDA_HOME", toolkit.root, why)


def _variant_fix(ctx: RuleContext, toolkit_cuda: str) -> Fix | None:
    """The planner's command for a torch build of the toolkit's CUDA major version, preferably no
    newer than the toolkit (a 12.2 toolkit builds fine against cu121): the installed release first,
    else the newest release that has such a build."""
    torch = ctx.get(TorchFacts)
    wanted = version2(toolkit_cuda)
    if torch is None or not torch.public_version or wanted is None:
        return None
    same_major = {
        cuda: have
        for known in knowledge.known_releases()
        for cuda in known.cuda
        if (have := version2(cuda)) is not None and have[0] == wanted[0]
    }
    # Not newer than the toolkit first (newest first); else the closest newer minor, which
    # cpp_extension only warns about.
    cudas = sorted(
        (c for c, v in same_major.items() if v <= wanted), key=same_major.__getitem__, reverse=True
    )
    cudas += sorted((c for c, v in same_major.items() if v > wanted), key=same_major.__getitem__)
    # The installed release first; else, per CUDA version, the newest release that has it.
    tries = [(torch.public_version, cuda) for cuda in cudas]
    for cuda in cudas:
        having = [r.torch for r in knowledge.known_releases() if cuda in r.cuda]
        tries += [(having[-1], cuda)] if having else []
    for release, cuda in tries:
        variant = knowledge.cuda_variant(cuda)
        plan = install.plan(dataclasses.replace(install_target(ctx, torch=release), variant=variant))
        if plan.possible and plan.variant == variant:
            return Fix(
                summary=f"Install the torch build for CUDA {cuda}, which the CUDA "
                f"{major_minor(toolkit_cuda)} toolkit can build extensions for: {plan.reason}",
                commands=plan_commands(ctx, plan),
                link=GET_STARTED,
            )
    return None


@rule(
    code="ED402",
    name="toolkit-major-mismatch-for-extensions",
    severity=Severity.WARNING,
    summary="the toolkit extensions would build with has another CUDA major version than torch",
    needs=(ToolkitFacts, TorchFacts),
    doc=RuleDoc(
        what="The CUDA version of the toolkit torch.utils.cpp_extension would use (CUDA_HOME, "
        "CUDA_PATH, the nvcc on PATH, then the default folder) against torch.version.cuda.",
        why="cpp_extension refuses a major-version mismatch, so pip installs that compile CUDA "
        "code (flash-attn, apex, custom ops) fail. torch itself keeps working.",
        fix="Point CUDA_HOME at an installed toolkit of torch's major version, install one, or "
        "install the torch build that matches the toolkit.",
        example="CUDA_HOME=/usr/local/cuda-11.8 with torch 2.5.1+cu121: 'The detected CUDA "
        "version (11.8) mismatches the version that was used to compile PyTorch (12.1)'.",
    ),
)
def toolkit_major_mismatch_for_extensions(ctx: RuleContext) -> Iterator[Hit]:
    found = _extension_toolkit(ctx)
    if found is None or major(found.toolkit_cuda) == major(found.torch_cuda):
        return
    facts = ctx.need(ToolkitFacts)
    message = cuda_libraries.cpp_extension_text("major_mismatch_error").format(
        toolkit=major_minor(found.toolkit_cuda), torch=found.torch_cuda
    )
    fixes: list[Fix] = []
    matching = matching_toolkit(facts, found.torch_cuda, exact=True) or matching_toolkit(
        facts, found.torch_cuda, exact=False
    )
    if matching is not None:
        why = f"(the installed CUDA {matching.version} toolkit)"
        if found.chosen_by == "nvcc on PATH":
            # Build scripts and setup.py checks (`nvcc -V`) run the nvcc PATH finds first.
            fixes.extend(toolkit_fixes(ctx, facts, matching, why))
        else:
            fixes.extend(_point_cuda_home(ctx, facts, matching, why))
    else:
        fixes.append(
            Fix(
                summary=f"Install a CUDA {found.torch_cuda} toolkit (any {major(found.torch_cuda)}.x "
                "works; the same minor avoids a warning) and point CUDA_HOME at it",
                link=TOOLKIT_ARCHIVE,
            )
        )
    variant = _variant_fix(ctx, found.toolkit_cuda)
    if variant is not None:
        fixes.append(variant)
    yield Hit(
        title=f"CUDA extensions would build with CUDA {major_minor(found.toolkit_cuda)}, but torch "
        f"was built with CUDA {found.torch_cuda}",
        detail=f"torch itself is fine: {BUNDLED}. Only compiling CUDA extensions (pip installs "
        "from source of packages such as flash-attn, apex, or your own torch.utils.cpp_extension "
        f"code) uses a toolkit: cpp_extension takes {found.home} ({found.chosen_by}) and refuses "
        f'a different major version with: "{message}"',
        evidence=(
            f"torch CUDA = {found.torch_cuda}",
            f"CUDA_HOME for cpp_extension = {found.home} ({found.chosen_by}), CUDA {found.toolkit_cuda}",
        ),
        fixes=tuple(fixes),
    )


def _package_minimum(ctx: RuleContext) -> tuple[str, str] | None:
    """(the CUDA version, the error line) when a build error states a minimum nvcc version."""
    evidence = ctx.get(ErrorEvidence)
    said = evidence.get("toolkit-too-old-for-package") if evidence is not None else None
    need = said.group("need") if said is not None else None
    return (need, said.excerpt) if said is not None and need else None


@rule(
    code="ED403",
    name="toolkit-minor-mismatch-for-extensions",
    severity=Severity.INFO,
    summary="the toolkit extensions would build with differs from torch's CUDA in the minor version",
    needs=(ToolkitFacts, TorchFacts),
    doc=RuleDoc(
        what="The same comparison as ED402 when only the minor version differs.",
        why="cpp_extension only warns then ('Most likely this shouldn't be a problem'); the "
        "finding explains that warning before anyone chases it.",
        fix="Nothing in most cases; point CUDA_HOME at a toolkit of the exact version if one is installed.",
        example="nvcc 12.4 with torch 2.7.1+cu126.",
    ),
)
def toolkit_minor_mismatch_for_extensions(ctx: RuleContext) -> Iterator[Hit]:
    found = _extension_toolkit(ctx)
    if found is None or major(found.toolkit_cuda) != major(found.torch_cuda):
        return
    if major_minor(found.toolkit_cuda) == major_minor(found.torch_cuda):
        return
    facts = ctx.need(ToolkitFacts)
    message = cuda_libraries.cpp_extension_text("minor_mismatch_warning").format(
        toolkit=major_minor(found.toolkit_cuda), torch=found.torch_cuda
    )
    fixes: tuple[Fix, ...] = ()
    exact = matching_toolkit(facts, found.torch_cuda, exact=True)
    older = (version2(found.toolkit_cuda) or (0, 0)) < (version2(found.torch_cuda) or (0, 0))
    if exact is not None:
        fixes = _point_cuda_home(ctx, facts, exact, "to build with the exact CUDA version of torch")
    elif older:
        fixes = (
            Fix(
                summary=f"Install a CUDA {found.torch_cuda} toolkit (torch's own version) and point "
                "CUDA_HOME at it: packages that check nvcc's version want it at least that new",
                link=TOOLKIT_ARCHIVE,
            ),
        )
    need = _package_minimum(ctx)
    title = (
        f"CUDA extensions would build with CUDA {major_minor(found.toolkit_cuda)}, torch uses "
        f"CUDA {found.torch_cuda}: a minor difference"
    )
    stated = ""
    if need is not None and (version2(found.toolkit_cuda) or (0, 0)) < (version2(need[0]) or (0, 0)):
        title = (
            f"a package needs CUDA {need[0]} or newer to build, but extensions would build with "
            f"CUDA {major_minor(found.toolkit_cuda)} (torch uses CUDA {found.torch_cuda})"
        )
        stated = (
            f' The error says so ("{need[1]}"): such setup.py files check the nvcc of CUDA_HOME, not '
            "torch's CUDA version or the driver's."
        )
    yield Hit(
        title=title,
        detail=f"torch itself is fine: {BUNDLED}. When compiling CUDA extensions, cpp_extension "
        f'({found.home}, {found.chosen_by}) only warns: "{message}"' + stated,
        evidence=(
            f"torch CUDA = {found.torch_cuda}",
            f"CUDA_HOME for cpp_extension = {found.home} ({found.chosen_by}), CUDA {found.toolkit_cuda}",
        ),
        fixes=fixes,
    )


@rule(
    code="ED404",
    name="cuda-home-not-a-toolkit",
    severity=Severity.WARNING,
    summary="the CUDA_HOME torch's cpp_extension would use is missing, has no nvcc or no headers",
    needs=(ToolkitFacts, TorchFacts),
    consequence_of=("ED411",),  # a CUDA_HOME written as a list names no folder at all
    doc=RuleDoc(
        what="For a CUDA build of torch: whether the folder cpp_extension takes as CUDA_HOME "
        "exists and holds bin/nvcc and include/cuda_runtime.h. Without CUDA_HOME/CUDA_PATH it "
        "is the folder above the nvcc on PATH, links not followed.",
        why="A stale CUDA_HOME or an nvcc wrapper in /usr/local/bin makes every CUDA extension "
        "build fail with 'nvcc not found' or a missing cuda_runtime.h.",
        fix="Set CUDA_HOME to the real toolkit folder (the command is shown), or unset a stale one.",
        example="nvcc on PATH is /usr/local/bin/nvcc, a script running /usr/local/cuda-12.4/bin/nvcc: "
        "cpp_extension uses CUDA_HOME=/usr/local, which has no CUDA headers.",
    ),
)
def cuda_home_not_a_toolkit(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(ToolkitFacts)
    cuda = torch_cuda(ctx)
    home = facts.cuda_home
    if cuda is None or home is None:
        return
    windows = ctx.platform.os == "windows"
    nvcc = (ntpath if windows else posixpath).join(home.path, "bin", "nvcc.exe" if windows else "nvcc")
    if not home.exists:
        problem = f"{home.path} does not exist"
        consequence = "cpp_extension cannot find nvcc at all"
    elif not home.has_nvcc:
        problem = f"{home.path} has no bin/nvcc"
        consequence = f"cpp_extension stops with \"nvcc not found at '{nvcc}'\""
    elif not home.has_headers:
        problem = f"{home.path} has nvcc but no include/cuda_runtime.h"
        consequence = "compiling fails with 'cuda_runtime.h: No such file or directory'"
    else:
        return
    if home.chosen_by == "nvcc on PATH":
        problem += " (torch derives it as the folder above the nvcc found on PATH, without following links)"
    best = matching_toolkit(facts, cuda, exact=True) or matching_toolkit(facts, cuda, exact=False)
    usable = complete_toolkits(facts.toolkits)
    target = best or (usable[0] if usable else None)
    fixes: tuple[Fix, ...]
    if target is not None:
        fixes = _point_cuda_home(ctx, facts, target, f"(the CUDA {target.version} toolkit)")
    elif home.chosen_by in ("CUDA_HOME", "CUDA_PATH"):
        fixes = set_variable_fixes(ctx.platform.os, facts.shell, home.chosen_by, None, "(it points nowhere)")
    else:
        fixes = (Fix(summary=f"Install a CUDA {cuda} toolkit and set CUDA_HOME to it", link=TOOLKIT_ARCHIVE),)
    system = ctx.get(SystemFacts)
    if system is not None and system.container and home.exists and not home.has_nvcc:
        # NVIDIA's -runtime and -base images carry the CUDA libraries but no compiler.
        fixes += (
            Fix(
                summary=f"In a container built from an nvidia/cuda -runtime or -base image: build from "
                f"the -devel image of the same CUDA version instead (e.g. nvidia/cuda:{cuda}.x-cudnn-devel-"
                "ubuntu22.04 in place of ...-runtime-...), which includes nvcc and the headers",
                link="https://hub.docker.com/r/nvidia/cuda",
            ),
        )
    yield Hit(
        title=f"CUDA_HOME as torch's cpp_extension finds it ({home.chosen_by}) is not a usable toolkit",
        detail=f"{problem}, so {consequence} when a CUDA extension is compiled. torch itself is "
        f"unaffected: {BUNDLED}.",
        evidence=(f"CUDA_HOME for cpp_extension = {home.path} ({home.chosen_by})",),
        fixes=fixes,
    )
