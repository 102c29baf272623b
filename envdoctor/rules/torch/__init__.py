"""Rules of the torch area: is it installed, which build, does it run on these GPUs."""

from __future__ import annotations

from envdoctor.rules.base import Rule, rules_in
from envdoctor.rules.torch import (
    build,
    companions,
    compile,
    cuda_unavailable,
    dependents,
    environment,
    extensions,
    gpu,
    import_errors,
    install,
    interpreter,
    numpy_bridge,
    retired_gpu,
    two_torches,
)

RULES: tuple[Rule, ...] = rules_in(
    install,
    environment,
    interpreter,
    build,
    cuda_unavailable,
    companions,
    gpu,
    numpy_bridge,
    retired_gpu,
    compile,
)
RULES += rules_in(extensions, import_errors, two_torches, dependents)
