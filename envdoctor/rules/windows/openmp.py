"""Several Intel OpenMP runtimes (libiomp5md.dll) that can load into one Python (ED607).

The fix is one runtime in the process: conda's NumPy without MKL (nomkl), or the environment's
extra copy renamed. KMP_DUPLICATE_LIB_OK=TRUE only silences the abort; Intel's own message calls it
an unsafe, unsupported, undocumented workaround, so the finding names it as such, last, and when it
is already set says that it hides the problem rather than solving it.
"""

from __future__ import annotations

import ntpath
from collections.abc import Iterator

from envdoctor.install.packages import CondaRequest
from envdoctor.knowledge import windows as knowledge
from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.windows import APP_DIR, DLL_DIRECTORY, ENV, TORCH_LIB, DllFile, WindowsFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import (
    powershell_quote,
    powershell_set,
    powershell_set_persistent,
    powershell_unset,
)
from envdoctor.rules.fixes import conda_fix
from envdoctor.rules.windows.dlls import described

_LOADED_BY_PATH = (TORCH_LIB, APP_DIR, DLL_DIRECTORY, ENV)


def _rename(file: DllFile) -> str:
    new_name = powershell_quote(file.name + ".bak")
    return f"Rename-Item -LiteralPath {powershell_quote(file.path)} -NewName {new_name}"


def _in_conda_env(file: DllFile, python: PythonFacts | None) -> bool:
    if python is None or not python.is_conda:
        return False
    return file.path.lower().startswith(python.prefix.rstrip("\\").lower() + "\\")


@rule(
    code="ED607",
    name="duplicate-openmp-runtime",
    severity=Severity.WARNING,
    summary="several libiomp5md.dll copies can load into the same Python",
    needs=(WindowsFacts,),
    doc=RuleDoc(
        what="libiomp5md.dll in torch\\lib, python.exe's folder, torch's DLL directories and the "
        "environment (a conda env's Library\\bin), and whether KMP_DUPLICATE_LIB_OK is set.",
        why="Two Intel OpenMP runtimes in one process abort it with 'OMP: Error #15: Initializing "
        "libiomp5md.dll, but found libiomp5md.dll already initialized', typically when NumPy from "
        "conda (MKL, with its own libiomp5md.dll) and pip's torch (with another) are both imported.",
        fix="Keep one runtime: in a conda env, `conda install nomkl` so NumPy stops using MKL and its "
        "OpenMP; otherwise rename the copy that is not torch's. KMP_DUPLICATE_LIB_OK=TRUE is a "
        "workaround, not a fix: Intel calls it unsafe, and it may crash or silently give wrong results.",
        example="A Miniconda env with conda's NumPy: Library\\bin\\libiomp5md.dll next to pip torch's "
        "torch\\lib\\libiomp5md.dll, and 'OMP: Error #15' on the first parallel op "
        "(alievk/avatarify-python#452).",
    ),
)
def duplicate_openmp_runtime(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(WindowsFacts)
    copies = [f for f in facts.openmp_files if f.origin in _LOADED_BY_PATH]
    if len(copies) < 2:
        return
    info = knowledge.openmp()
    python = ctx.get(PythonFacts)
    others = [f for f in copies if f.origin != TORCH_LIB] or copies[1:]
    fixes = []
    conda_copies = [f for f in others if _in_conda_env(f, python)]
    if python is not None and conda_copies:
        fixes.append(
            conda_fix(
                ctx,
                "The fix in a conda environment: let conda replace its MKL builds (NumPy, SciPy) "
                "with OpenBLAS ones, so that MKL and its Intel OpenMP runtime (the second copy) are no "
                "longer loaded next to torch's",
                CondaRequest(("nomkl",), python.prefix),
                link="https://github.com/HiLab-git/MIDeepSeg/issues/4",
            )
        )
    fixes.append(
        Fix(
            summary="Keep torch's copy and rename the other one (PowerShell), then restart Python; a "
            "later conda update may bring it back, and a program that imports NumPy before torch "
            "then needs torch's copy found first: " + ", ".join(f.path for f in others),
            commands=tuple(_rename(f) for f in others),
            link="https://github.com/alievk/avatarify-python/issues/452",
        )
    )
    variable = info.workaround_variable
    set_already = facts.openmp_workaround is not None
    if set_already:
        fixes.append(
            Fix(
                summary=f"Then unset {variable}: it only hides the abort while two runtimes still run "
                "side by side (this session, and the value kept for your user)",
                commands=(powershell_unset(variable), powershell_set_persistent(variable, None)),
            )
        )
    else:
        fixes.append(
            Fix(
                summary=f"Workaround, not a fix (only to confirm the diagnosis, never for real work): "
                f"{variable}=TRUE lets the process go on with both runtimes. Intel's own words: "
                f"'{info.intel_words}'",
                commands=(powershell_set(variable, "TRUE"),),
            )
        )
    detail = (
        "; ".join(described(f) for f in copies) + f". torch loads {ntpath.basename(copies[0].path)} from "
        "torch\\lib, and MKL (conda's NumPy or SciPy) loads the one in its own folder: when both are "
        f"initialised in one process it aborts with '{info.error}'"
    )
    if set_already:
        detail += (
            f" {variable} is set here ({variable}={facts.openmp_workaround}): the abort is suppressed, "
            "not solved; Intel warns it may crash or silently produce incorrect results."
        )
    else:
        detail += "."
    yield Hit(
        title=f"{len(copies)} Intel OpenMP runtimes (libiomp5md.dll) can load into one Python",
        detail=detail,
        evidence=(
            *(f.path for f in copies),
            *((f"{variable}={facts.openmp_workaround}",) if set_already else ()),
        ),
        fixes=tuple(fixes),
    )
