"""Where envdoctor keeps its own files: the user's cache folder (the rule catalogue, the index
overlay `envdoctor update` writes, the records `envdoctor fix` keeps). At the bottom of the layers:
the knowledge base, the rule catalogue and the repair loop all ask it, and it asks nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

CACHE_VARIABLE = "ENVDOCTOR_CACHE_DIR"


def cache_dir(environ: Mapping[str, str]) -> str | None:
    """The user's cache folder for envdoctor; ENVDOCTOR_CACHE_DIR overrides it."""
    if environ.get(CACHE_VARIABLE):
        return environ[CACHE_VARIABLE]
    if sys.platform == "win32":
        base = environ.get("LOCALAPPDATA")
        return os.path.join(base, "envdoctor", "Cache") if base else None
    home = environ.get("HOME") or os.path.expanduser("~")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Caches", "envdoctor")
    base = environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    return os.path.join(base, "envdoctor")
