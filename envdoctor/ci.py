"""CI mode: `CI=true` (set by GitHub Actions, GitLab CI and most others) means nobody is watching.

In CI envdoctor prints no colours, shows no spinner and asks no questions: anything that would
colour, animate or prompt asks `is_ci` first (the console report renders as plain text there).
"""

from __future__ import annotations

from collections.abc import Mapping

_TRUE = {"1", "true", "yes", "on"}


def is_ci(env: Mapping[str, str]) -> bool:
    return env.get("CI", "").strip().lower() in _TRUE
