"""`envdoctor report`: what the probes saw, made fit to paste into a public issue.

The snapshot is masked for sharing before anything is judged or rendered: credentials (as always),
plus the user names in home-folder paths and GPU UUIDs (redact.redact_private). Findings are then
computed from the masked facts, so no rendered text can bring the originals back.
"""

from __future__ import annotations

from collections.abc import Mapping

from envdoctor.engine import diagnose
from envdoctor.snapshot import Snapshot, dumps
from envdoctor.util.redact import redact_private


def homes(env: Mapping[str, str]) -> tuple[str, ...]:
    """This user's home folders as the environment names them (masked even outside /home)."""
    return tuple(env[k] for k in ("HOME", "USERPROFILE") if env.get(k))


def shareable(snapshot: Snapshot, env: Mapping[str, str]) -> Snapshot:
    return redact_private(snapshot, homes(env))


def render_report(snapshot: Snapshot, fmt: str, env: Mapping[str, str], source: str = "live") -> str:
    """The bug-report Markdown, or with fmt "json" the masked snapshot (loadable with check --from)."""
    clean = shareable(snapshot, env)
    if fmt == "json":
        return dumps(clean)
    from envdoctor.render.markdown import render_bug_report

    report = diagnose(clean.platform, clean.interpreter, clean.probes, source=source)
    return render_bug_report(redact_private(report, homes(env)))
