"""Whether any installed package declares envdoctor plugins, without importlib.metadata.

importlib.metadata costs `rules`, `explain` and `--help` a third of their start-up budget; these
commands only need to know whether there is anything to load. A distribution declares entry points
in the entry_points.txt of its .dist-info (or .egg-info) folder on sys.path: reading those small
files is a directory listing and a few reads.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

GROUPS = ("[envdoctor.rules]", "[envdoctor.probes]")


def declared(paths: Iterable[str] | None = None) -> bool:
    """Whether some distribution on `paths` (sys.path) declares an envdoctor entry point."""
    for folder in sys.path if paths is None else paths:
        try:
            entries = os.scandir(folder or ".")
        except OSError:  # a zip, a missing folder, no permission
            continue
        with entries:
            for entry in entries:
                if not entry.name.endswith((".dist-info", ".egg-info")):
                    continue
                try:
                    with open(os.path.join(entry.path, "entry_points.txt"), encoding="utf-8") as handle:
                        text = handle.read(65536)
                except (OSError, UnicodeDecodeError):
                    continue
                if any(group in text for group in GROUPS):
                    return True
    return False
