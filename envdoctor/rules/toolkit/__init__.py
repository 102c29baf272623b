"""Rules of the toolkit area: CUDA toolkits and library paths, what torch needs (a driver) against
what is installed (toolkits), and what compiling extensions needs. Shared pieces: toolkits.py,
builds.py."""

from __future__ import annotations

from envdoctor.rules.base import Rule, rules_in
from envdoctor.rules.toolkit import (
    build_tools,
    cpp_extension,
    cudnn_sublibraries,
    extension_setup,
    library_shadowing,
    loader_paths,
    path_entries,
    unused_toolkit,
)

RULES: tuple[Rule, ...] = rules_in(
    unused_toolkit,
    cpp_extension,
    path_entries,
    library_shadowing,
    extension_setup,
    build_tools,
    loader_paths,
    cudnn_sublibraries,
)
