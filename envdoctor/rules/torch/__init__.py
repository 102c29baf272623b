"""Rules of the torch area: is it installed, which build, does it run on these GPUs."""

from __future__ import annotations

from envdoctor.rules.base import Rule, rules_in
from envdoctor.rules.torch import (
    build,
    companions,
    dependents,
    environment,
    extensions,
    gpu,
    import_errors,
    install,
    numpy_bridge,
    retired_gpu,
    two_torches,
)

RULES: tuple[Rule, ...] = rules_in(install, environment, build, companions, gpu, numpy_bridge, retired_gpu)
RULES += rules_in(extensions)
RULES += rules_in(import_errors)
RULES += rules_in(two_torches)
RULES += rules_in(dependents)
