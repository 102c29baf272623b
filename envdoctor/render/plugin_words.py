"""The plugins a report ran, in one line for every format's header."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def plugins_line(plugins: Iterable[tuple[str, str, Sequence[str], Sequence[str], str | None]]) -> str:
    """(package, version, rule codes, probe names, error) per entry point, as one line per report:
    "acme-envdoctor 0.1.0 (ACME001, ACME002, probe acme; one entry point failed: see ED902)"."""
    rules: dict[tuple[str, str], list[str]] = {}
    probes: dict[tuple[str, str], list[str]] = {}
    failed: dict[tuple[str, str], int] = {}
    for package, version, codes, names, error in plugins:
        key = (package, version)
        rules.setdefault(key, []).extend(codes)
        probes.setdefault(key, []).extend(f"probe {name}" for name in names)
        failed[key] = failed.get(key, 0) + (error is not None)
    said = []
    for key in rules:
        added = sorted(rules[key]) + probes[key]
        parts = [", ".join(added)] if added else []
        if failed[key]:
            which = "one entry point" if failed[key] == 1 else f"{failed[key]} entry points"
            parts.append(f"{which} failed: see ED902")
        said.append(f"{key[0]} {key[1]} ({'; '.join(parts)})")
    return "; ".join(said)
