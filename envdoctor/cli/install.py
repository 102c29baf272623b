"""`install`: the pinned command for this machine or a described one (body in cli.lean)."""

from __future__ import annotations

from enum import Enum
from typing import Optional

import typer

from envdoctor.cli import shared


class Manager(str, Enum):
    pip = "pip"
    uv = "uv"
    conda = "conda"


def install(
    torch: Optional[str] = typer.Option(
        None,
        "--torch",
        help="A release (2.5.1) or series (2.5); default: the newest that fits.",
        metavar="VERSION",
    ),
    cuda: Optional[str] = typer.Option(
        None,
        "--cuda",
        help="auto, cpu, a CUDA version (12.4), a variant (cu126) or rocmX.Y; default: auto.",
        metavar="VARIANT",
    ),
    os_name: Optional[str] = typer.Option(
        None, "--os", help="linux, windows or macos; default: this machine's.", metavar="OS"
    ),
    arch: Optional[str] = typer.Option(
        None, "--arch", help="x86_64 or aarch64/arm64; default: this machine's.", metavar="ARCH"
    ),
    python: Optional[str] = typer.Option(
        None,
        "--python",
        help="A Python version (3.11) or the interpreter to install into; default: as `check`.",
        metavar="PYTHON",
    ),
    driver: Optional[str] = typer.Option(
        None,
        "--driver",
        help="An NVIDIA driver version (535.104.05), to plan for another machine.",
        metavar="VERSION",
    ),
    gpu: list[str] = typer.Option(
        [],
        "--gpu",
        help="A GPU name (RTX 3090, RX 7900 XTX, Arc A770), compute capability (sm_86, 8.6), gfx "
        "target (gfx1100) or xpu; repeat for several.",
        metavar="NAME",
    ),
    manager: Optional[Manager] = typer.Option(
        None, "--manager", "-m", metavar="MANAGER", help="pip (default), uv or conda.", case_sensitive=False
    ),
    mirror: Optional[str] = typer.Option(
        None,
        "--mirror",
        help="tuna, aliyun, sjtu, nju, ... or an index URL; default: pip's configured index.",
        metavar="NAME",
    ),
    fmt: shared.OutputFormat = typer.Option(
        shared.OutputFormat.console,
        "--format",
        "-f",
        metavar="FORMAT",
        help="console or json (the plan, its commands and what each came from).",
        case_sensitive=False,
    ),
    offline: bool = typer.Option(
        False, "--offline", help="Ask nothing of the network (no check that an index answers)."
    ),
) -> None:
    from envdoctor.cli.lean import CommandError
    from envdoctor.cli.lean import install as body

    options = {
        "torch": torch,
        "cuda": cuda,
        "os_name": os_name,
        "arch": arch,
        "python": python,
        "driver": driver,
        "gpu": gpu,
        "manager": manager.value if manager else None,
        "mirror": mirror,
        "offline": offline,
    }
    try:
        text, code = body(options, fmt.value)
    except CommandError as exc:
        shared.fail(str(exc))
    shared.write(text, None)
    raise typer.Exit(code)
