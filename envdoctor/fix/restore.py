"""The commands that put a recorded state back. Pure.

Every distribution that was added since is uninstalled; every one that was removed or changed is
installed again at its recorded version, from its recorded wheel file when it came from one (else
from the indexes pip is configured with, as before). `--no-deps` is safe here: the whole difference
between the two states is put back, so the recorded set, whose requirements held, is whole again,
and pip is kept from moving anything else.
"""

from __future__ import annotations

from envdoctor.fix.state import EnvState, Installed
from envdoctor.util.records import record

_ARCHIVES = (".whl", ".tar.gz", ".zip", ".tar.bz2")


@record
class RestorePlan:
    commands: tuple[tuple[str, ...], ...]
    cannot: tuple[str, ...] = ()  # what the commands cannot put back, one sentence each

    @property
    def needed(self) -> bool:
        return bool(self.commands or self.cannot)


def pin(dist: Installed) -> str:
    """The requirement that reinstalls exactly this distribution from where it came."""
    url = dist.url or ""
    if url and not dist.editable and url.lower().endswith(_ARCHIVES):
        return f"{dist.name} @ {url}"
    return f"{dist.name}=={dist.version}"


def restore_plan(recorded: EnvState, now: EnvState, launcher: tuple[str, ...]) -> RestorePlan:
    """From `now` back to `recorded`; `launcher` is ("<python>", "-m", "pip")."""
    added = [d.name for d in now.dists if recorded.get(d.name) is None]
    changed = [d for d in recorded.dists if now.get(d.name) != d]
    pins, cannot = [], []
    for dist in changed:
        if dist.editable:
            cannot.append(
                f"{dist.name} {dist.version} was an editable install from {dist.url}: "
                "reinstall it with pip install -e on that folder"
            )
        else:
            pins.append(pin(dist))
    commands: list[tuple[str, ...]] = []
    if added:
        commands.append((*launcher, "uninstall", "-y", *added))
    if pins:
        commands.append((*launcher, "install", "--no-deps", *pins))
    return RestorePlan(tuple(commands), tuple(cannot))
