"""What install commands do to the installed packages, and what changed between two states. Pure.

`planned` reads the pins of pip/uv commands (`torch==2.13.0+cpu`, `torch===2.13.0`) against the
recorded state; an unpinned name is "the version pip chooses". `diff` compares two recorded states.
"""

from __future__ import annotations

from collections.abc import Sequence

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from envdoctor.fix.state import EnvState
from envdoctor.util.pep503 import normalize_name
from envdoctor.util.records import record

CHOSEN = "the version pip chooses"

# pip/uv install options followed by a value (the value is not a requirement).
_VALUED = frozenset(
    {
        "-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-c", "--constraint",
        "-r", "--requirement", "--python", "-t", "--target", "--prefix", "--root", "--platform",
        "--python-version", "--implementation", "--abi", "--trusted-host", "--cache-dir", "--src",
        "--upgrade-strategy", "--progress-bar", "--log", "--timeout", "--retries", "--proxy",
        "--cert", "--client-cert", "--config-settings", "-C", "--only-binary", "--no-binary",
        "-e", "--editable", "--index-strategy", "--index", "--default-index",
    }
)  # fmt: skip


@record
class Change:
    name: str
    before: str | None  # None: not installed
    after: str | None  # None: removed; CHOSEN: pip decides

    @property
    def words(self) -> str:
        if self.before is None:
            return f"add {self.name} {self.after}"
        if self.after is None:
            return f"remove {self.name} {self.before}"
        if self.after == self.before:
            return f"reinstall {self.name} {self.before}"
        return f"{_direction(self.before, self.after)} {self.name} {self.before} -> {self.after}"


def _direction(before: str, after: str) -> str:
    try:
        # Local labels (+cpu, +cu126) name builds, not an order: compare the releases only.
        old, new = Version(Version(before).public), Version(Version(after).public)
    except InvalidVersion:
        return "replace"
    if new > old:
        return "upgrade"
    if new < old:
        return "downgrade"
    return "replace"  # the same release, another build (+cpu -> +cu126)


def _arguments(argv: Sequence[str]) -> tuple[str, tuple[str, ...], bool]:
    """(action, requirement arguments, --force-reinstall) of a pip or uv pip command."""
    start = 4 if len(argv) > 3 and argv[1:3] == ("-m", "pip") else 3
    action = argv[start - 1]
    names: list[str] = []
    skip = False
    for arg in argv[start:]:
        if skip:
            skip = False
        elif arg in _VALUED:
            skip = True
        elif not arg.startswith("-"):
            names.append(arg)
    return action, tuple(names), "--force-reinstall" in argv


def _pinned(requirement: Requirement) -> str:
    for spec in requirement.specifier:
        if spec.operator in ("==", "===") and "*" not in spec.version:
            return spec.version
    return CHOSEN


def planned(state: EnvState, argvs: Sequence[Sequence[str]]) -> tuple[Change, ...]:
    """The package changes the commands ask for, in order, against the recorded state."""
    now: dict[str, str | None] = {d.key: d.version for d in state.dists}
    shown: dict[str, str] = {d.key: d.name for d in state.dists}
    first: dict[str, str | None] = {}
    touched: list[str] = []
    forced: set[str] = set()
    for argv in argvs:
        action, args, force = _arguments(tuple(argv))
        for arg in args:
            name, version = arg, None if action == "uninstall" else CHOSEN
            if action == "install":
                try:
                    requirement = Requirement(arg)
                except InvalidRequirement:
                    continue  # a path or URL: its name is known only once pip reads it
                name, version = requirement.name, _pinned(requirement)
            key = normalize_name(name)
            shown.setdefault(key, name)
            if key not in first:
                first[key] = now.get(key)
                touched.append(key)
            if force:
                forced.add(key)
            now[key] = version
    changes = []
    for key in touched:
        before, after = first[key], now[key]
        if before == after and key not in forced:
            continue  # already as asked: pip leaves it
        if before is None and after is None:
            continue
        changes.append(Change(shown[key], before, after))
    return tuple(changes)


def diff(before: EnvState, after: EnvState) -> tuple[Change, ...]:
    """Every distribution added, removed or changed (version or source) from `before` to `after`."""
    old = {d.key: d for d in before.dists}
    new = {d.key: d for d in after.dists}
    changes = []
    for key in sorted(old.keys() | new.keys()):
        was, now = old.get(key), new.get(key)
        if was == now:
            continue
        name = (now or was).name  # type: ignore[union-attr]
        changes.append(Change(name, was.version if was else None, now.version if now else None))
    return tuple(changes)
