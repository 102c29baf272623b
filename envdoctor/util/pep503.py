"""Project names as pip compares them (PEP 503): "Torch_Vision" and "torch-vision" are one project.

A module of its own so that the install planner, the torch probe and `fix` share one rule without
the planner importing packaging.utils (which loads packaging.tags and logging: start-up, issue #9).
The torch child (child/torch_probe.py) keeps its own copy: it runs in the examined interpreter and
cannot import envdoctor.
"""

from __future__ import annotations

import re


def normalize_name(name: str) -> str:
    """PEP 503's normal form, packaging.utils.canonicalize_name's rule: Torch_Audio -> torch-audio."""
    return re.sub(r"[-_.]+", "-", name).lower()
