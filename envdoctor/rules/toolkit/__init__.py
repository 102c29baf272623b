"""Rules of the toolkit area: CUDA toolkits and library paths, what torch needs (a driver) against
what is installed (toolkits). Shared pieces: toolkits.py."""

from __future__ import annotations

from envdoctor.rules.base import Rule, rules_in
from envdoctor.rules.toolkit import cpp_extension, library_shadowing, path_entries, unused_toolkit

RULES: tuple[Rule, ...] = rules_in(unused_toolkit, cpp_extension, path_entries, library_shadowing)
