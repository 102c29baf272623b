"""Plugins: packages that add rules and probes through entry points, as pytest and flake8 take theirs.

A package names a module (or a rule, a probe spec, or a list of them) under the entry-point groups
`envdoctor.rules` and `envdoctor.probes`. Loading one is contained like a probe: an import that
fails or a module that gives nothing usable becomes a note on the plugin (ED902 reports it) and
the rest of envdoctor runs as before. What cannot be contained is a clash: a plugin code that is
not namespaced (ED...) or that two packages both claim, or a probe named like another one: which
rule or probe would a code mean? That is one clear error naming both packages, and envdoctor does
not run until it is resolved (or --no-plugins / ENVDOCTOR_NO_PLUGINS=1).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from functools import cache
from types import ModuleType
from typing import Any

from envdoctor.model.findings import PluginInfo
from envdoctor.probes.base import ProbeSpec
from envdoctor.rules.base import Rule
from envdoctor.settings import SettingsError
from envdoctor.util.lazy_re import Lazy
from envdoctor.util.records import record

RULES_GROUP = "envdoctor.rules"
PROBES_GROUP = "envdoctor.probes"
NO_PLUGINS_VARIABLE = "ENVDOCTOR_NO_PLUGINS"
# A namespace of capitals (and digits after the first letter), then three digits: VLLM001, COMFY120.
PLUGIN_CODE = Lazy(r"^[A-Z][A-Z0-9]{1,7}[0-9]{3}$")
OWN_PREFIX = "ED"


class PluginError(SettingsError):
    """Plugins that cannot run together or with envdoctor; one line naming the packages."""


@record
class EntryPoint:
    """One entry point as importlib.metadata lists it: the edge to the installed packages."""

    group: str
    name: str
    value: str
    package: str
    version: str
    load: Callable[[], object]

    @property
    def spelled(self) -> str:
        return f"{self.group}:{self.name} = {self.value}"


@record
class Loaded:
    rules: tuple[Rule, ...] = ()
    probes: tuple[ProbeSpec[Any], ...] = ()
    plugins: tuple[PluginInfo, ...] = ()


NONE = Loaded()


def installed_entry_points() -> tuple[EntryPoint, ...]:
    """The entry points of both groups in the environment envdoctor runs from."""
    from importlib import metadata

    found: list[EntryPoint] = []
    for group in (RULES_GROUP, PROBES_GROUP):
        try:
            listed: Iterable[Any] = metadata.entry_points(group=group)
        except TypeError:  # Python 3.9: a dict of groups
            listed = metadata.entry_points().get(group, ())  # type: ignore[attr-defined,unused-ignore]
        for point in listed:
            dist = getattr(point, "dist", None)
            package = str(dist.metadata["Name"]) if dist is not None else point.value.split(".")[0]
            version = str(dist.version) if dist is not None else "?"
            found.append(EntryPoint(group, point.name, point.value, package, version, point.load))
    return tuple(sorted(found, key=lambda e: (e.package, e.group, e.name)))


def _items(loaded: object, kind: type) -> tuple[Any, ...]:
    """The rules (or probe specs) an entry point gives: itself, a list of them, or those a module
    defines (as the built-in areas list theirs: found by type)."""
    if isinstance(loaded, kind):
        return (loaded,)
    if isinstance(loaded, ModuleType):
        return tuple(v for v in vars(loaded).values() if isinstance(v, kind))
    if isinstance(loaded, (list, tuple)):
        return tuple(v for v in loaded if isinstance(v, kind))
    return ()


def _describe(exc: BaseException) -> str:
    from envdoctor.util.threads import describe

    return describe(exc)


def load(points: Iterable[EntryPoint], builtin_codes: Iterable[str], builtin_probes: Iterable[str]) -> Loaded:
    """Every plugin of `points`, checked against envdoctor's own codes and probe names and each other."""
    rules: list[Rule] = []
    probes: list[ProbeSpec[Any]] = []
    infos: list[PluginInfo] = []
    code_owner: dict[str, str] = {code: "envdoctor" for code in builtin_codes}
    probe_owner: dict[str, str] = {name: "envdoctor" for name in builtin_probes}
    for point in points:
        info = PluginInfo(point.package, point.version, point.spelled)
        try:
            loaded = point.load()
        except BaseException as exc:  # a plugin's import runs its code: contain everything it raises
            if isinstance(exc, KeyboardInterrupt):
                raise
            infos.append(replace(info, error=f"its import failed: {_describe(exc)}"))
            continue
        if point.group == RULES_GROUP:
            found = _items(loaded, Rule)
            if not found:
                infos.append(
                    replace(info, error=f"{point.value} gives no rule (expected @envdoctor.plugin.rule)")
                )
                continue
            for found_rule in found:
                _claim_code(found_rule.code, point.package, code_owner)
            rules += [replace(r, origin=point.package) for r in found]
            infos.append(replace(info, rules=tuple(sorted(r.code for r in found))))
        else:
            specs = _items(loaded, ProbeSpec)
            if not specs:
                infos.append(replace(info, error=f"{point.value} gives no probe (expected a ProbeSpec)"))
                continue
            for spec in specs:
                owner = probe_owner.setdefault(spec.name, point.package)
                if owner != point.package:
                    raise PluginError(
                        f"plugin probe {spec.name!r}: {point.package} and {owner} both name a probe so; "
                        f"uninstall one of them, or run with --no-plugins"
                    )
            probes += specs
            infos.append(replace(info, probes=tuple(s.name for s in specs)))
    return Loaded(tuple(sorted(rules, key=lambda r: r.code)), tuple(probes), tuple(infos))


def _claim_code(code: str, package: str, owners: dict[str, str]) -> None:
    if code.upper().startswith(OWN_PREFIX) or not PLUGIN_CODE.match(code):
        raise PluginError(
            f"plugin rule {code!r} from {package}: plugin codes are a namespace of their own and three "
            "digits (e.g. VLLM001), never ED (envdoctor's); ask its authors, or run with --no-plugins"
        )
    owner = owners.setdefault(code, package)
    if owner != package:
        raise PluginError(
            f"plugin rule {code}: {package} and {owner} both declare it; uninstall one of them, or run "
            "with --no-plugins"
        )


def wanted(environ: Mapping[str, str] = os.environ) -> bool:
    return environ.get(NO_PLUGINS_VARIABLE, "").strip().lower() not in ("1", "yes", "true", "on")


@cache
def _installed() -> Loaded:
    from envdoctor.probes import PROBES
    from envdoctor.rules import RULES

    points = installed_entry_points()
    if not points:
        return NONE
    return load(points, (r.code for r in RULES), (p.name for p in PROBES))


def plugins(enabled: bool = True) -> Loaded:
    """The installed plugins, loaded once per process; none when turned off (either way)."""
    if not enabled or not wanted():
        return NONE
    return _installed()
