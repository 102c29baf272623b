"""Rules of the windows area: the VC++ runtime and DLL loading, where Python and torch are
installed. Shared pieces: dlls.py (which copy of a DLL torch gets, the common fixes)."""

from __future__ import annotations

from envdoctor.rules.base import Rule, rules_in
from envdoctor.rules.windows import dll_loading, install_location, load_errors, openmp, vc_runtime

RULES: tuple[Rule, ...] = rules_in(vc_runtime, dll_loading, install_location, openmp, load_errors)
