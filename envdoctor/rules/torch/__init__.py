"""Rules of the torch area: is it installed, which build, does it run on these GPUs."""

from __future__ import annotations

from envdoctor.rules.base import Rule, rules_in
from envdoctor.rules.torch import (
    build,
    companions,
    compile,
    environment,
    gpu,
    install,
    interpreter,
    numpy_bridge,
    retired_gpu,
)

RULES: tuple[Rule, ...] = rules_in(
    install, environment, interpreter, build, companions, gpu, numpy_bridge, retired_gpu, compile
)
