"""`fix --offline`: pip's settings for its commands, local sources only.

pip's build-isolation environment (where it installs setuptools or a build backend before it can
build anything) reads the same settings as pip itself, from the environment as well as the
command line: variables keep every pip process local, the build's too. The local sources are
those the report's facts name: find-links folders, file:// indexes (pip's own configuration).
"""

from __future__ import annotations

from envdoctor.model.findings import Report
from envdoctor.model.sources import MirrorFacts


def _local(url: str) -> bool:
    return url.startswith("file:") or "://" not in url


def offline_environment(report: Report) -> dict[str, str]:
    """PIP_* variables that keep pip (and its build environments) on this machine's sources."""
    facts = next((p.facts for p in report.probes if isinstance(p.facts, MirrorFacts)), None)
    pip = facts.pip if facts is not None else None
    index = pip.get("index-url") if pip is not None else None
    extra = pip.get("extra-index-url") if pip is not None else None
    links = pip.get("find-links") if pip is not None else None
    indexes = [
        u for u in ((index.value.split() if index else []) + list(extra.items if extra else [])) if _local(u)
    ]
    folders = [u for u in (links.items if links else ()) if _local(u)]
    env = {"PIP_FIND_LINKS": " ".join(folders), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    if indexes:
        env.update(PIP_INDEX_URL=indexes[0], PIP_EXTRA_INDEX_URL=" ".join(indexes[1:]))
    else:
        env["PIP_NO_INDEX"] = "1"  # no local index: find-links folders alone
    return env
