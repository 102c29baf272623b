"""envdoctor: whether PyTorch will really work on this machine, why not, and the command that fixes it.

`import envdoctor` stays cheap: `require` loads the machinery when it is called.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from envdoctor.errors import EnvironmentNotReady

if TYPE_CHECKING:
    from envdoctor.api import CheckResult
    from envdoctor.model.findings import Report

from envdoctor.version import __version__

__all__ = ["EnvironmentNotReady", "__version__", "check", "require"]


def check(
    *,
    gpu: bool = False,
    min_gpus: int | None = None,
    cuda: str | None = None,
    torch: str | None = None,
    capability: str | None = None,
    min_gpu_memory: str | None = None,
    smoke: bool = False,
    ignore: str | Sequence[str] = (),
    strict: bool = False,
    python: str | None = None,
    timeout: float = 60.0,
) -> CheckResult:
    """Check this environment like `envdoctor check` and return the result without raising: in a
    notebook's first cell it shows as the report (`envdoctor.check()`), in a script
    `result.exit_code`, `result.findings` and `print(result)` say the same. The keywords are
    require's."""
    from envdoctor.api import check_environment

    return check_environment(
        gpu=gpu,
        min_gpus=min_gpus,
        cuda=cuda,
        torch=torch,
        capability=capability,
        min_gpu_memory=min_gpu_memory,
        smoke=smoke,
        ignore=ignore or None,
        strict=strict,
        python=python,
        timeout=timeout,
    )


def require(
    *,
    gpu: bool = False,
    min_gpus: int | None = None,
    cuda: str | None = None,
    torch: str | None = None,
    capability: str | None = None,
    min_gpu_memory: str | None = None,
    smoke: bool = False,
    ignore: str | Sequence[str] = (),
    strict: bool = False,
    python: str | None = None,
    timeout: float = 60.0,
) -> Report:
    """Check this environment like `envdoctor check`, and raise unless it is ready for the job.

    The keywords are check's expectations: `gpu=True` (--require-gpu), `min_gpus=2`, `cuda=">=12.1"`,
    `torch=">=2.4,<2.6"`, `capability=">=8.0"`, `min_gpu_memory="24GiB"`, `smoke=True`, plus
    `ignore="ED203,ED210"` and `strict=True` (warnings fail too). The interpreter examined is the one
    running this program unless `python` names another. Returns the Report when every check passes.

    Raises EnvironmentNotReady (a RuntimeError) naming each failed finding and its fix, and
    ValueError for a keyword value that is not valid (e.g. cuda="12.1" instead of ">=12.1").
    Importing torch in a child process takes about as long as importing it here (1-2 s).
    """
    from envdoctor.api import require as run

    return run(
        gpu=gpu,
        min_gpus=min_gpus,
        cuda=cuda,
        torch=torch,
        capability=capability,
        min_gpu_memory=min_gpu_memory,
        smoke=smoke,
        ignore=ignore or None,
        strict=strict,
        python=python,
        timeout=timeout,
    )
