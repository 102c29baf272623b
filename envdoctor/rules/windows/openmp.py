"""Several Intel OpenMP runtimes (libiomp5md.dll) that can load into one Python (ED607)."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.model.findings import Fix, Severity
from envdoctor.probes.python_env import PythonFacts
from envdoctor.probes.windows import APP_DIR, DLL_DIRECTORY, ENV, TORCH_LIB, WindowsFacts
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import powershell_set
from envdoctor.rules.windows.dlls import described
from envdoctor.shell import quote


@rule(
    code="ED607",
    name="duplicate-openmp-runtime",
    severity=Severity.WARNING,
    summary="several libiomp5md.dll copies can load into the same Python",
    needs=(WindowsFacts,),
    doc=RuleDoc(
        what="libiomp5md.dll in torch\\lib, python.exe's folder, torch's DLL directories and the "
        "environment.",
        why="Two Intel OpenMP runtimes in one process abort with 'OMP: Error #15'.",
        fix="conda install nomkl, or remove the copy that is not torch's; KMP_DUPLICATE_LIB_OK "
        "only to confirm.",
        example="A conda env's Library\\bin\\libiomp5md.dll next to torch\\lib\\libiomp5md.dll.",
    ),
)
def duplicate_openmp_runtime(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(WindowsFacts)
    copies = [f for f in facts.openmp_files if f.origin in (TORCH_LIB, APP_DIR, DLL_DIRECTORY, ENV)]
    if len(copies) < 2:
        return
    python = ctx.get(PythonFacts)
    fixes = []
    if python is not None and python.is_conda:
        fixes.append(
            Fix(
                summary="Let conda drop its Intel OpenMP/MKL stack so only torch's copy remains",
                commands=(f"conda install -p {quote(python.prefix, 'windows')} nomkl",),
            )
        )
    others = [f for f in copies if f.origin != TORCH_LIB]
    fixes.append(
        Fix(
            summary="Remove (rename) the copy that is not torch's: "
            + ", ".join(f.path for f in others or copies[1:]),
        )
    )
    fixes.append(
        Fix(
            summary="Only to confirm the diagnosis, never for real work (Intel calls it an unsafe, "
            "unsupported, undocumented workaround): set KMP_DUPLICATE_LIB_OK=TRUE",
            commands=(powershell_set("KMP_DUPLICATE_LIB_OK", "TRUE"),),
        )
    )
    yield Hit(
        title=f"{len(copies)} copies of libiomp5md.dll can load into one Python",
        detail="; ".join(described(f) for f in copies) + ". When two Intel OpenMP runtimes are "
        "initialised in one process, Python aborts with 'OMP: Error #15: Initializing "
        "libiomp5md.dll, but found libiomp5md.dll already initialized.'",
        evidence=tuple(f.path for f in copies),
        fixes=tuple(fixes),
    )
