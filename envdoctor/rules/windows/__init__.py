"""Rules of the windows area: the VC++ runtime and DLL loading."""

from __future__ import annotations

from envdoctor.rules.base import Rule
from envdoctor.rules.windows import runtime

RULES: tuple[Rule, ...] = (*runtime.RULES,)
