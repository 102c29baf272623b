"""CI mode: `CI=true` (set by GitHub Actions, GitLab CI and most others) means nobody is watching.

In CI envdoctor prints no colours, shows no spinner and asks no questions; anything that would
colour, animate or prompt asks `is_ci` first.
"""

from __future__ import annotations

from collections.abc import Mapping

_TRUE = {"1", "true", "yes", "on"}


def is_ci(env: Mapping[str, str]) -> bool:
    return env.get("CI", "").strip().lower() in _TRUE


def interactive(env: Mapping[str, str], stdin_is_tty: bool) -> bool:
    """Whether envdoctor may prompt: a terminal on stdin, and not in CI."""
    return stdin_is_tty and not is_ci(env)
