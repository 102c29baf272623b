"""Where pip and uv would take torch from: a PyPI mirror that has only CPU builds (ED501), a
PyTorch index that is only an extra source beside another index (ED502).

pip has no index priority (the highest version from any source wins), and PyPI, like every mirror
of it, carries only CPU-only torch wheels for Windows and macOS.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from envdoctor.install import plan as install
from envdoctor.install.commands import Command, command_text, resolve_mirror
from envdoctor.knowledge.mirrors import IndexStatus, KnownIndex
from envdoctor.knowledge.signatures import ErrorEvidence
from envdoctor.model.findings import Fix, FixKind, Severity
from envdoctor.model.sources import MirrorFacts
from envdoctor.probes.nvml import NvmlFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import GET_STARTED, install_target, plan_commands
from envdoctor.rules.mirrors import pasted
from envdoctor.rules.mirrors.config_edits import origin_line, pip_edit_fix
from envdoctor.rules.mirrors.urls import pypi_mirror, torch_index, variant_of, without_credentials
from envdoctor.util.records import record

PIP_FINDING_PACKAGES = "https://pip.pypa.io/en/stable/cli/pip_install/#finding-packages"


def _cuda_wanted(ctx: RuleContext) -> bool:
    nvml = ctx.get(NvmlFacts)
    torch = ctx.get(TorchFacts)
    if nvml is not None and nvml.working and nvml.gpus:
        return True
    return torch is not None and torch.imported and bool(torch.cuda)


def _plan_fixes(ctx: RuleContext, summary: str, mirror_url: str) -> list[Fix]:
    """The planner's CUDA install command, and the same from the mirror operator's PyTorch-wheel
    mirror when it runs one that envdoctor's data marks as working."""
    target = install_target(ctx, want_cuda=True)
    plan = install.plan(target)
    if not plan.possible:
        return []
    commands = plan_commands(ctx, plan)
    fixes = [Fix(f"{summary}: {plan.reason}", commands, GET_STARTED, FixKind.INSTALL)]
    choice = resolve_mirror(mirror_url, "detected")
    wheels = choice.wheels
    if wheels is not None and wheels.name != "official-pytorch" and wheels.status == IndexStatus.OK:
        mirrored = install.plan(replace(target, mirror=choice))
        nearer = plan_commands(ctx, mirrored)
        if mirrored.possible and nearer != commands:
            fixes.append(Fix(f"The same from {wheels.title}", nearer, kind=FixKind.INSTALL))
    return fixes


# ED501: a PyPI mirror as the index on Windows/macOS while a CUDA build is wanted


@record
class _DefaultIndex:
    tool: str
    url: str
    origin: str
    line: int | None
    mirror: KnownIndex
    others: tuple[str, ...]  # the tool's other index and find-links URLs


def _default_indexes(facts: MirrorFacts) -> Iterator[_DefaultIndex]:
    pip = facts.pip
    index = pip.get("index-url")
    if index is not None and not pip.flag("no-index"):
        found = pypi_mirror(index.value.strip())
        if found is not None:
            others = tuple(
                u for key in ("extra-index-url", "find-links") for s in [pip.get(key)] if s for u in s.items
            )
            yield _DefaultIndex("pip", index.value.strip(), index.origin, index.line, found, others)
    uv = facts.uv
    defaults = [
        i for i in uv.indexes if i.default or i.via in ("index-url", "default-index", "pip.index-url")
    ]
    if defaults and not any(s.key.endswith("torch-backend") for s in uv.settings):
        first = defaults[0]
        found = pypi_mirror(first.url)
        if found is not None:
            others = tuple(i.url for i in uv.indexes if i is not first)
            yield _DefaultIndex("uv", first.url, first.origin, first.line, found, others)


@rule(
    code="ED501",
    name="pypi-mirror-gives-cpu-torch",
    severity=Severity.WARNING,
    summary="a PyPI mirror is the index on Windows/macOS while a CUDA build is wanted",
    needs=(MirrorFacts,),
    # A mirror named by a variable is ED508's: the variable, not a file, is what to change.
    consequence_of=("ED508",),
    doc=RuleDoc(
        what="On Windows and macOS, whether pip's index-url or uv's default index is a known PyPI "
        "mirror (TUNA, USTC, Aliyun, ...) with no PyTorch wheel index configured beside it, while "
        "an NVIDIA GPU or an installed CUDA build says CUDA is wanted.",
        why="PyPI has only CPU-only torch wheels for Windows and macOS, and mirrors copy PyPI, so "
        '`pip install torch` through the mirror always gives +cpu (the classic "the TUNA torch '
        'has no CUDA" report). macOS has no CUDA builds at all, so there it never fires.',
        fix="Keep the mirror for everything else and name a PyTorch CUDA index on the torch "
        "command line (--index-url overrides the configured one); the command is shown, with the "
        "mirror operator's own PyTorch-wheel mirror where it runs one.",
        example="Windows 11, RTX 4070, %APPDATA%\\pip\\pip.ini: index-url = "
        "https://pypi.tuna.tsinghua.edu.cn/simple; `pip install torch` gives 2.5.1+cpu.",
    ),
)
def pypi_mirror_gives_cpu_torch(ctx: RuleContext) -> Iterator[Hit]:
    if ctx.platform.os not in ("windows", "macos") or not _cuda_wanted(ctx):
        return
    facts = ctx.need(MirrorFacts)
    system = "Windows" if ctx.platform.os == "windows" else "macOS"
    yield from _pasted_mirror_commands(ctx, system)
    for default in _default_indexes(facts):
        if any(torch_index(url) for url in default.others):
            continue  # a PyTorch index is configured too: ED502 explains how they mix
        where = origin_line(default.origin, default.line, facts.home)
        torch = ctx.get(TorchFacts)
        now = ""
        if torch is not None and torch.imported and torch.variant == "cpu":
            now = f" The installed torch {torch.version} is such a CPU-only build."
        fixes = _plan_fixes(
            ctx,
            "Install torch from a PyTorch CUDA index for this one command (the mirror stays for the rest)",
            default.url,
        )
        yield Hit(
            title=f"{default.tool}'s index is {default.mirror.title}: on {system} it "
            "offers only CPU builds of torch",
            detail=f"{default.tool} takes its default index {default.url} from {where}. PyPI, and every "
            f"mirror of it, carries only CPU-only torch wheels for {system}; CUDA builds are published "
            "only on PyTorch's per-variant indexes (download.pytorch.org/whl/cuXXX) and mirrors of those. "
            "`pip install torch` from this index gives a +cpu build and torch.cuda.is_available() "
            f"is False.{now}",
            evidence=(
                f"{default.tool} index = {default.url} ({where})",
                f"platform = {ctx.platform.os}",
                "CUDA wanted",
            ),
            fixes=tuple(fixes),
        )


def _pasted_mirror_commands(ctx: RuleContext, system: str) -> Iterator[Hit]:
    """A pasted pip command whose -i/--index-url is a PyPI mirror, with no PyTorch index beside it."""
    for command in pasted.commands(ctx.get(ErrorEvidence)):
        if command.tool != "pip" or command.index_url is None:
            continue
        mirror = pypi_mirror(command.index_url)
        if mirror is None or any(torch_index(u) for u in command.sources):
            continue
        fixes = _plan_fixes(
            ctx,
            "Install torch from a PyTorch CUDA index for this one command (the mirror stays for the rest)",
            command.index_url,
        )
        yield Hit(
            title=f"the pip command installs torch from {mirror.title}: on {system} it offers only CPU "
            "builds",
            detail=f"“{command.line}” takes torch from {command.index_url}. PyPI, and every mirror of it, "
            f"carries only CPU-only torch wheels for {system}; CUDA builds are published only on PyTorch's "
            "per-variant indexes (download.pytorch.org/whl/cuXXX) and mirrors of those.",
            evidence=(f"pasted command: {command.line}", f"platform = {ctx.platform.os}", "CUDA wanted"),
            fixes=tuple(fixes),
        )
        return


# ED502: a PyTorch index only as an extra index next to PyPI or a mirror (pip)


@rule(
    code="ED502",
    name="pytorch-index-as-extra-index",
    severity=Severity.WARNING,
    summary="a PyTorch wheel index is only an extra index or find-links next to PyPI or a mirror",
    needs=(MirrorFacts,),
    # A CPU index in PIP_EXTRA_INDEX_URL is ED508's finding: the variable is the cause.
    consequence_of=("ED508",),
    doc=RuleDoc(
        what="Whether pip's effective extra-index-url or find-links holds a PyTorch wheel index "
        "(official or a mirror) while the index-url is PyPI, a mirror or another index; under "
        "`envdoctor why`, the same in the pasted pip command, and a uv command that ranks another "
        "index above PyTorch's (--extra-index-url beside --index-url, or --index with the default "
        "index left as fallback).",
        why="pip has no index priority: the highest version from any source wins, and the "
        "source is not part of the ranking. Same version: the +cuXXX/+cpu wheel outranks the "
        "plain one. Newer plain version elsewhere: that one wins, which is how CPU-only or "
        "wrong-CUDA builds arrive silently (pytorch/pytorch#96884, pytorch/ci-infra#661).",
        fix="Remove the PyTorch index from the configuration and give it as --index-url on the "
        "torch command, pinning the variant with its local label (torch==2.5.1+cu124).",
        example="pip.conf: index-url = https://mirrors.aliyun.com/pypi/simple/, extra-index-url = "
        "https://download.pytorch.org/whl/cu116; torch 2.0 then comes from the mirror.",
    ),
)
def pytorch_index_as_extra_index(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(MirrorFacts)
    yield from _pasted_commands(ctx)
    pip = facts.pip
    if pip.flag("no-index"):
        return
    index = pip.get("index-url")
    main = index.value.strip() if index is not None else None
    if main is not None and torch_index(main) is not None:
        return  # the PyTorch index is the index: pip cannot fall back to another source
    for key in ("extra-index-url", "find-links"):
        setting = pip.get(key)
        if setting is None:
            continue
        torch_urls = [u for u in setting.items if torch_index(u) is not None]
        if not torch_urls:
            continue
        main_text = main if main is not None else "PyPI (pip's default index)"
        where = origin_line(setting.origin, setting.line, facts.home)
        variants = sorted(
            {v for u in torch_urls for i in [torch_index(u)] if i for v in [variant_of(u, i)] if v}
        )
        cpu_note = ""
        if "cpu" in variants and _cuda_wanted(ctx):
            cpu_note = (
                " Here the extra index is the CPU variant on a machine that wants CUDA: its +cpu files "
                "outrank the mirror's plain files of the same version."
            )
        detail = (
            f"pip reads {', '.join(torch_urls)} as {key} ({where}) next to {main_text}. pip has no index "
            "priority: it collects candidates from every source and installs the highest version. A "
            "PyTorch wheel carries a local label (2.5.1+cu124), which sorts above the same public "
            "version (2.5.1), so for a version both sides have, the labelled wheel wins. But when the "
            "other index has a newer release than this PyTorch index (a CUDA variant no longer built, "
            "or not yet published), the newer plain wheel wins: a CPU-only build on Windows/macOS, on "
            "Linux the default CUDA build that may need a newer driver. And `torch==2.5.1` also "
            "accepts whichever labelled build exists, so what you get depends on what each index holds."
            + cpu_note
        )
        remaining = [u for u in setting.items if u not in torch_urls]
        summary = f"Take the PyTorch index out of {key} ({where})"
        edit = pip_edit_fix(ctx, pip, setting, remaining, summary, facts.home)
        fix = edit
        plan = install.plan(install_target(ctx))
        if plan.possible and plan.variant and plan.torch:
            pinned = tuple(command_text(_pin_variant(c, plan), ctx.platform.os) for c in plan.commands)
            fix = Fix(
                summary=f"{edit.summary}, then install with the PyTorch index as --index-url and the "
                f"variant pinned by its local label: {plan.reason}",
                commands=edit.commands + pinned,
                link=PIP_FINDING_PACKAGES,
            )
        yield Hit(
            title=f"a PyTorch index is only an extra source ({key}) next to {main_text}: pip takes the "
            "highest version from any of them",
            detail=detail,
            evidence=(
                f"pip {key} = {setting.value} ({where})",
                f"pip index-url = {main or '(PyPI default)'}",
            ),
            fixes=(fix,),
        )


def _pin_variant(command: Command, plan: install.InstallPlan) -> Command:
    """torch==2.5.1 -> torch==2.5.1+cu124: only that build satisfies it, whatever other indexes hold."""
    if "--index-url" not in command.argv:  # macOS: plain PyPI wheels carry no label
        return command
    pinned = f"torch=={plan.torch}"
    return replace(command, argv=tuple(f"{a}+{plan.variant}" if a == pinned else a for a in command.argv))


def _pinned_fix(ctx: RuleContext, summary: str) -> Fix | None:
    """The planner's command with the PyTorch index as --index-url and torch pinned by its label."""
    plan = install.plan(install_target(ctx))
    if not (plan.possible and plan.variant and plan.torch):
        return None
    pinned = tuple(command_text(_pin_variant(c, plan), ctx.platform.os) for c in plan.commands)
    return Fix(
        summary=f"{summary}: {plan.reason}", commands=pinned, link=PIP_FINDING_PACKAGES, kind=FixKind.INSTALL
    )


def _pasted_commands(ctx: RuleContext) -> Iterator[Hit]:
    """The pasted pip/uv install commands that make PyTorch's index one source among several."""
    seen: set[str] = set()
    for command in pasted.commands(ctx.get(ErrorEvidence)):
        hit = _pip_command_hit(ctx, command) if command.tool == "pip" else _uv_command_hit(ctx, command)
        if hit is not None and hit.title not in seen:
            seen.add(hit.title)
            yield hit


def _pip_command_hit(ctx: RuleContext, command: pasted.PastedCommand) -> Hit | None:
    if command.index_url is not None and torch_index(command.index_url) is not None:
        return None
    extra = [u for u in command.extra_index_urls if torch_index(u) is not None]
    links = [u for u in command.find_links if torch_index(u) is not None]
    if not extra and not links:
        return None
    option = "--extra-index-url" if extra else "-f/--find-links"
    urls = ", ".join(without_credentials(u) for u in extra + links)
    main = without_credentials(command.index_url) if command.index_url else "PyPI (pip's default index)"
    fixes = [
        fix
        for fix in (
            _pinned_fix(ctx, "Give the PyTorch index as --index-url and pin the variant by its local label"),
        )
        if fix is not None
    ] or [Fix(summary="Give the PyTorch index as --index-url, not as " + option, link=PIP_FINDING_PACKAGES)]
    return Hit(
        title=f"the pip command gives a PyTorch index only as {option}, next to {main}",
        detail=f"“{command.line}”: {urls} is one more source beside {main}. pip has no index priority: it "
        "installs the highest version found anywhere, so a plain (CPU-only on Windows and macOS, default "
        "CUDA on Linux) build from the other index, or another CUDA variant, wins whenever it sorts "
        "higher or the PyTorch index lacks the version asked for.",
        evidence=(f"pasted command: {command.line}",),
        fixes=tuple(fixes),
    )


def _uv_command_hit(ctx: RuleContext, command: pasted.PastedCommand) -> Hit | None:
    default = command.index_url
    ranked = list(command.indexes) + list(command.extra_index_urls)
    torch_ranked = [u for u in ranked if torch_index(u) is not None]
    others = [u for u in ranked if torch_index(u) is None]
    if default is not None and torch_index(default) is not None and others:
        why = (
            f"uv ranks {', '.join(without_credentials(u) for u in others)} (--extra-index-url/--index) "
            f"above the default index {without_credentials(default)}, so torch comes from that other index "
            "whenever it has torch at all"
        )
    elif torch_ranked and default is None:
        why = (
            f"{', '.join(without_credentials(u) for u in torch_ranked)} comes first, but the default "
            "index stays behind it: a version or package the PyTorch index lacks is taken from there "
            "without an error (the wrong backend)"
        )
    else:
        return None
    return Hit(
        title="the uv command ranks another index above or beside PyTorch's",
        detail=f"“{command.line}”: {why}.",
        evidence=(f"pasted command: {command.line}",),
        fixes=(
            Fix(
                summary="Make PyTorch's index the only one for the torch step (--default-index with no "
                "--extra-index-url, or an explicit = true index routed by [tool.uv.sources]), or use "
                "--torch-backend=auto, so that a missing build fails loudly",
                link="https://docs.astral.sh/uv/guides/integration/pytorch/",
            ),
        ),
    )
