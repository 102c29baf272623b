"""Rules of the windows area: the VC++ runtime and DLL loading, where Python and torch are
installed, what torch meets in the same process (other frameworks' CUDA DLLs, OpenMP runtimes).
Shared pieces: dlls.py (which copy of a DLL torch gets, the common fixes)."""

from __future__ import annotations

from envdoctor.rules.base import Rule, rules_in
from envdoctor.rules.windows import (
    dll_loading,
    dll_search,
    frameworks,
    install_location,
    load_errors,
    openmp,
    vc_runtime,
)

RULES: tuple[Rule, ...] = rules_in(
    vc_runtime, dll_loading, install_location, openmp, load_errors, dll_search, frameworks
)
