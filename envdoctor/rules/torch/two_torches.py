"""Two torches in one interpreter: pip's torch over conda's pytorch in one environment, two
installs' records in one folder, and a user-site torch (~/.local, %APPDATA%\\Python) shadowing the
environment's own."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace

from envdoctor.install import plan as install
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.torch_build import TorchCopy, TorchFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.fixes import install_target, plan_fix
from envdoctor.rules.torch.import_errors import variable_fixes
from envdoctor.shell import join


def _forced(found: install.InstallPlan) -> install.InstallPlan:
    """The plan with its install commands made to reinstall: the records say the package is there,
    while its files are the other manager's (or gone)."""
    commands = []
    for command in found.commands:
        argv = command.argv
        if "install" in argv and "--force-reinstall" not in argv:
            at = argv.index("install") + 1
            argv = (*argv[:at], "--force-reinstall", *argv[at:])
        commands.append(replace(command, argv=argv))
    return replace(found, commands=tuple(commands))


def _same(a: str | None, b: str | None) -> bool:
    return bool(a and b) and os.path.normcase(os.path.normpath(a or "")) == os.path.normcase(
        os.path.normpath(b or "")
    )


@rule(
    code="ED217",
    name="two-torches-pip-and-conda",
    severity=Severity.ERROR,
    summary="pip's torch sits over conda's pytorch in one environment, or two installs share one folder",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="conda-meta of the examined prefix against torch's distribution: conda's pytorch package "
        "recorded while the torch files belong to a pip install (its INSTALLER, or another version), "
        "and torch folders on sys.path that hold the records of two installs.",
        why="pip does not see conda's pytorch as `torch`, so a package that requires torch makes pip "
        "install a second one over it: the files are mixed (libtorch_cuda_cu.so missing, "
        "'_C has no attribute _init_names'), conda still believes its version is installed, and "
        "the next conda or pip command breaks it again.",
        fix="Keep one manager's torch: remove pip's copy and reinstall conda's, or remove conda's "
        "record and reinstall pip's; install packages that require torch without letting pip touch it "
        "(--no-deps, or torch pinned).",
        example="conda env with pytorch 1.11.0; `pip install -e '.[extras]'` pulls torch 2.4.1+cu121 over "
        "it: 'OSError: libtorch_cuda_cu.so: cannot open shared object file' (thousandbrainsproject/"
        "tbp.monty#385).",
    ),
)
def two_torches_pip_and_conda(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    around = torch.surroundings
    if around is None or not torch.installed:
        return
    pip_version = torch.dist_version or torch.version
    dist = torch.extensions.distribution("torch") if torch.extensions is not None else None
    conda = around.conda("pytorch")
    pip_owned = dist is not None and dist.installer is not None and dist.installer != "conda"
    if conda is not None and (pip_owned or (pip_version and pip_version.split("+", 1)[0] != conda.version)):
        fixes: list[Fix] = []
        back = replace(install_target(ctx, torch=conda.version), manager="conda")
        found = install.plan(back)
        conda_fix = plan_fix(
            ctx, _forced(found), f"Keep conda's pytorch {conda.version}: after the uninstall"
        )
        uninstall = join([ctx.interpreter.path, "-m", "pip", "uninstall", "-y", "torch"], ctx.platform.os)
        if conda_fix is not None and any(c.startswith("conda ") for c in conda_fix.commands):
            fixes.append(replace(conda_fix, commands=(uninstall, *conda_fix.commands)))
        else:  # a conda build envdoctor's data does not have: the channels it came from are the user's
            fixes.append(
                Fix(
                    summary=f"Keep conda's pytorch {conda.version}: uninstall pip's torch, then reinstall "
                    f"pytorch {conda.version} with `conda install --force-reinstall` from the channels this "
                    "environment was made with (its environment.yml)",
                    commands=(uninstall,),
                )
            )
        pip_plan = install.plan(install_target(ctx, torch=(pip_version or "").split("+", 1)[0] or None))
        pip_fix = plan_fix(
            ctx, _forced(pip_plan), f"Keep pip's torch {pip_version}: after conda forgets its package"
        )
        if pip_fix is not None:
            fixes.append(replace(pip_fix, commands=("conda remove --force -y pytorch", *pip_fix.commands)))
        fixes.append(
            Fix(
                summary="Then install packages that require torch without letting pip replace it: "
                "`pip install --no-deps <package>`, or keep torch pinned in the requirements"
            )
        )
        by = f"installed by {dist.installer}" if pip_owned and dist is not None else "another version"
        yield Hit(
            title=f"pip's torch {pip_version} is installed over conda's pytorch {conda.version}",
            detail=f"conda-meta records pytorch {conda.version} (build {conda.build}), while torch's files "
            f"are {by}: pip did not see conda's package as torch and installed a second one over it. "
            "The two installs' files are mixed, and conda and pip each believe their own version is "
            "there.",
            evidence=(
                f"conda: pytorch {conda.version} {conda.build}",
                f"torch {pip_version}"
                + (f" (INSTALLER {dist.installer})" if dist and dist.installer else ""),
            ),
            fixes=tuple(fixes),
        )
        return
    for copy in around.torch_copies:
        if len(copy.dists) > 1:
            python = ctx.interpreter.path
            yield Hit(
                title=f"two torch installs are recorded in {copy.path}",
                detail=f"{copy.path} holds the records of torch {', '.join(copy.dists)}: a second install "
                "(a source build, another package manager) went over the first, and their files are "
                f"mixed; its torch/version.py says {copy.version or 'nothing'}.",
                evidence=tuple(f"torch-{d} record in {copy.path}" for d in copy.dists),
                fixes=(
                    Fix(
                        summary="Uninstall until no torch is left (each uninstall removes one record), "
                        "then install one torch",
                        commands=(join([python, "-m", "pip", "uninstall", "-y", "torch"], ctx.platform.os),),
                    ),
                ),
            )
            return


def _user_copy(torch: TorchFacts) -> tuple[TorchCopy, TorchCopy] | None:
    """(the user-site copy that is imported, the environment's copy it hides)."""
    around = torch.surroundings
    if around is None or around.user_site is None or len(around.torch_copies) < 2:
        return None
    site = around.user_site
    first = around.torch_copies[0]
    if not site.enabled or not _same(first.path, site.path):
        return None
    return first, around.torch_copies[1]


@rule(
    code="ED218",
    name="user-site-torch-shadows",
    severity=Severity.ERROR,
    summary="a torch in the user site (~/.local, %APPDATA%\\Python) is imported instead of the environment's",
    needs=(TorchFacts,),
    doc=RuleDoc(
        what="The folders on sys.path that hold a torch package, in import order, against "
        "site.getusersitepackages(): a user-site torch ahead of the one installed in the environment.",
        why="`pip install --user` (or a pip that fell back to the user site) puts torch in a folder "
        "every interpreter of that Python version reads first: the environment's CUDA or ROCm torch "
        "is never imported, whatever is installed there.",
        fix="Uninstall the user-site copy (pip removes the copy that is imported, the user site's), "
        "and keep the user site out of this environment: PYTHONNOUSERSITE=1, or `python -s`.",
        example="ComfyUI's python_env imports a torch 2.13.0+cpu from %APPDATA%\\Python\\Python312 instead "
        "of the ROCm torch in its own site-packages (patientx-cfz/comfyui-rocm#131).",
    ),
)
def user_site_torch_shadows(ctx: RuleContext) -> Iterator[Hit]:
    torch = ctx.need(TorchFacts)
    pair = _user_copy(torch)
    if pair is None:
        return
    user, hidden = pair
    python = ctx.interpreter.path
    fixes = (
        Fix(
            summary=f"Uninstall the user-site torch {user.version or ''}".rstrip()
            + ": while the user site is on sys.path, pip uninstalls the copy that is imported "
            "(`pip show torch` names its Location)",
            commands=(join([python, "-m", "pip", "uninstall", "-y", "torch"], ctx.platform.os),),
        ),
        *variable_fixes(
            ctx,
            "PYTHONNOUSERSITE",
            "1",
            "to keep the user site out of this environment (or start Python with -s)",
        ),
    )
    yield Hit(
        title=f"the user-site torch {user.version or ''} hides torch {hidden.version or ''} of this "
        "environment".replace("  ", " "),
        detail=f"{user.path} is the user site, on sys.path ahead of {hidden.path}; `import torch` loads "
        f"torch {user.version or '(unknown version)'} from there, not the environment's torch "
        f"{hidden.version or '(unknown version)'}.",
        evidence=(f"user site {user.path}: torch {user.version}", f"{hidden.path}: torch {hidden.version}"),
        fixes=fixes,
    )
