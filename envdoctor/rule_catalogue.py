"""The rules as `envdoctor rules` and `envdoctor explain` show them, without importing every rule.

The registry (envdoctor.rules) imports each rule module and, through them, the probes' fact types,
the knowledge tables and the install planner: several times the start-up budget of these two
commands. Their text depends on nothing but the code of the package, so it is kept in the user's
cache folder, keyed the way Python keys its own bytecode cache: by the size and modification time
of every source file of the package (kept as text and compared whole: hashlib's import alone costs
more than the comparison). Any edit, upgrade or reinstall changes the key and the next
run rebuilds the catalogue from the registry; a cache that cannot be read or written costs only
time. Plain tuples and dicts, not dataclasses: importing dataclasses alone (it imports inspect) is
a tenth of the budget.
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from envdoctor.paths import cache_dir
from envdoctor.util.textwidth import DEFAULT_WIDTH, hanging
from envdoctor.util.textwidth import wrap as _wrap

# One rule as shown: code, name, severity, area, summary, then the four documentation paragraphs.
FIELDS = (
    "code",
    "name",
    "severity",
    "area",
    "summary",
    "what",
    "why",
    "fix",
    "example",
    "folded_under",
    "causes",
    "origin",
)
# folded_under: the codes whose finding this rule's finding is folded under, comma-separated ("": none)
# causes: a symptom rule's usual causes (knowledge/symptoms.json) for this system, one per line, each
# "title<TAB>check<TAB>what the check shows<TAB>fix<TAB>the rules that name it" ("": not a symptom rule)
# origin: "package version" of the plugin that adds the rule ("": envdoctor's own)
Entry = tuple[str, str, str, str, str, str, str, str, str, str, str, str]

PACKAGE = os.path.dirname(os.path.abspath(__file__))
_SCHEMA = "envdoctor.rule-catalogue/4"


def this_system() -> str:
    """The platform's name for the system explain runs on, as the rules' data spells it."""
    return {"win32": "windows", "darwin": "macos"}.get(sys.platform, "linux")


def causes_field(code: str, os_name: str) -> str:
    """The usual causes of symptom rule `code` as the catalogue keeps them, in the data's order."""
    from envdoctor.knowledge.symptoms import symptom

    found = symptom(code)
    if found is None:
        return ""
    rows = []
    for cause in found.causes:
        check = cause.check_for(os_name)
        if not cause.applies_on(os_name) or check is None:
            continue
        commands = "; ".join(cause.fix.commands_for(os_name))
        fix = cause.fix.summary + (f" ({commands})" if commands else "")
        row = "\t".join((cause.title, check, cause.shows, fix, ", ".join(cause.named_by)))
        rows.append(row.replace("{python}", "python"))  # the examined interpreter, in a finding
    return "\n".join(rows)


def entry_of(rule: Any, os_name: str, origin: str = "") -> Entry:
    """One rule (envdoctor's or a plugin's) as the catalogue keeps it."""
    return (
        rule.code,
        rule.name,
        rule.severity.value,
        str(rule.area),
        rule.summary,
        rule.doc.what,
        rule.doc.why,
        rule.doc.fix,
        rule.doc.example,
        ", ".join(rule.consequence_of),
        causes_field(rule.code, os_name),
        origin,
    )


def from_registry() -> tuple[Entry, ...]:
    """Every rule, from the registry itself (the slow path, and the truth the cache holds)."""
    from envdoctor.rules import RULES

    os_name = this_system()
    return tuple(entry_of(r, os_name) for r in RULES)


def plugins_declared(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether plugins are wanted and some installed package declares one (a cheap file scan)."""
    from envdoctor.util.plugin_scan import declared

    if environ.get("ENVDOCTOR_NO_PLUGINS", "").strip().lower() in ("1", "yes", "true", "on"):
        return False
    return declared()


def plugin_entries(environ: Mapping[str, str] = os.environ) -> tuple[Entry, ...]:
    """The rules of installed plugin packages, read live (a plugin's edits show at once); nothing
    to import when no package declares envdoctor entry points. PluginError when plugins clash."""
    if not plugins_declared(environ):
        return ()
    from envdoctor.plugin.loader import plugins

    loaded = plugins()
    versions = {info.package: info.version for info in loaded.plugins}
    os_name = this_system()
    return tuple(
        entry_of(r, os_name, f"{r.origin} {versions.get(r.origin or '', '')}".strip()) for r in loaded.rules
    )


def fingerprint(package: str = PACKAGE) -> str:
    """The package's sources by path, size and modification time, and the Python version."""
    parts = [sys.version, package]
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".json")):
                stat = os.stat(os.path.join(folder, name))
                parts.append(f"{os.path.relpath(folder, package)}/{name} {stat.st_size} {stat.st_mtime_ns}")
    return "\n".join(parts)


def _cache_file(folder: str, package: str) -> str:
    # One file per installation, so two environments sharing a home do not evict each other.
    where = f"{zlib.crc32(package.encode()):08x}"
    return os.path.join(folder, f"rules-{where}.json")


def _read(path: str, key: str) -> tuple[Entry, ...] | None:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != _SCHEMA or data.get("key") != key:
        return None
    rows = data.get("rules")
    if not isinstance(rows, list):
        return None
    entries = []
    for row in rows:
        if not (isinstance(row, list) and len(row) == len(FIELDS) and all(isinstance(v, str) for v in row)):
            return None
        entries.append(tuple(row))  # twelve strings, checked above
    return tuple(entries)


def _write(path: str, key: str, entries: Sequence[Entry]) -> None:
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump({"schema": _SCHEMA, "key": key, "rules": entries}, handle)
        os.replace(temporary, path)  # atomic: a concurrent reader sees the old file or the new one
    except OSError:
        import contextlib

        with contextlib.suppress(OSError):
            os.unlink(temporary)


def load(environ: Mapping[str, str] = os.environ, package: str = PACKAGE) -> tuple[Entry, ...]:
    """The catalogue: from the cache when it matches the package, else from the registry (and cached)."""
    folder = cache_dir(environ)
    if folder is None:
        return from_registry()
    key = fingerprint(package)
    path = _cache_file(folder, package)
    cached = _read(path, key)
    if cached is not None:
        return cached
    entries = from_registry()
    _write(path, key, entries)
    return entries


# --- what the two commands print ------------------------------------------------------------------


def wrap_text(text: str, width: int) -> str:
    return "\n".join(_wrap(text, width))


def find(entries: Sequence[Entry], wanted: str) -> Entry | None:
    """The rule named by its code (any case) or its name."""
    wanted = wanted.strip()
    for entry in entries:
        if wanted.upper() == entry[0] or wanted.lower() == entry[1]:
            return entry
    return None


# Each rules area (its package name) in the words of the report's sections.
AREA_TITLES = {
    "plugins": "Plugins",
    "nvml": "NVIDIA driver",
    "torch": "PyTorch build",
    "toolkit": "CUDA toolkit",
    "windows": "Windows runtime",
    "mirrors": "Package indexes",
    "expectations": "Project expectations",
    "envdoctor": "envdoctor itself",
    "fleet": "Nodes of a multi-node job",
    "gpu_vendors": "AMD and Intel GPUs",
    "environment": "Environment",
}


def area_title(area: str) -> str:
    return AREA_TITLES.get(area, area)


def explain_header(code: str, name: str, severity: str, area: str) -> str:
    return f"{code} {name} ({severity}; about: {area_title(area)})"


_LOOKALIKE_DIGITS = str.maketrans("OQDILSZB", "00011528")


def suggest(entries: Sequence[Entry], wanted: str) -> str | None:
    """The code or name closest to a mistyped one (ED1O1, driver-to-old), if one is close."""
    import difflib

    wanted = wanted.strip()
    known = [e[0] for e in entries]
    if wanted.upper().startswith("ED"):
        # A letter typed for the digit it looks like (ED1O3), or a code cut short (ED10): the
        # string distance alone would rank ED813 or ED810 first.
        code = "ED" + wanted.upper()[2:].translate(_LOOKALIKE_DIGITS)
        started = [c for c in known if c.startswith(code)]
        if started:
            return started[0]
    codes = difflib.get_close_matches(wanted.upper(), known, n=1, cutoff=0.6)
    names = difflib.get_close_matches(wanted.lower(), [e[1] for e in entries], n=1, cutoff=0.6)
    found = codes or names
    return found[0] if found else None


# Where a rule's documentation lives for a reader without envdoctor at hand: the rules table of
# the README in the project's repository (regenerated from the registry: tests/regen_readme.py).
DOCS_URL = "https://github.com/envdoctor/envdoctor/blob/main/docs/rules.md"


def docs_url(code: str) -> str:
    """The rule's own section of the rules reference (docs/rules.md, headed by its code)."""
    return f"{DOCS_URL}#{code.lower()}"


def explain_text(entry: Entry, width: int = DEFAULT_WIDTH) -> str:
    """A rule's documentation, each paragraph wrapped to `width` under its heading, then the link."""
    code, name, severity, area, summary, what, why, fix, example, folded_under, causes, origin = entry
    title = explain_header(code, name, severity, area) + (f" [plugin: {origin}]" if origin else "")
    header = hanging(title, width, "", "  ")
    lines = [header, wrap_text(summary, width), ""]
    for heading, text in (
        ("What it checks", what),
        ("Why it matters", why),
        ("How to fix", fix),
        ("Example", example),
    ):
        lines += [f"{heading}:", hanging(text, width, "  ", "  "), ""]
    if causes:
        heading = "Usual causes (a finding puts first what this machine's facts show):"
        lines.append(hanging(heading, width, "", "  "))
        for number, row in enumerate(causes.split("\n"), 1):
            title, check, shows, cause_fix, named_by = row.split("\t")
            lead = f"  {number}. "
            lines.append(hanging(title, width, lead, " " * len(lead)))
            lines.append(
                hanging(f"tell: `{check}` shows {shows}", width, " " * len(lead), " " * (len(lead) + 2))
            )
            lines.append(hanging(f"fix: {cause_fix}", width, " " * len(lead), " " * (len(lead) + 2)))
            if named_by:
                lines.append(
                    hanging(f"named exactly by: {named_by}", width, " " * len(lead), " " * len(lead))
                )
        lines.append("")
    if folded_under:
        folded = f"{folded_under}, when one of them is found (one root cause, one finding)"
        lines += ["Folded under:", hanging(folded, width, "  ", "  "), ""]
    if origin:
        lines.append(f"From the plugin package {origin}: its own documentation has more.")
    else:
        lines.append(f"Docs: {docs_url(code)}")  # a URL is never wrapped: it must stay clickable
    return "".join(line + "\n" for line in lines)


def rules_text(entries: Sequence[Entry], width: int = DEFAULT_WIDTH) -> str:
    """A table that fits `width`: code, severity, then what the rule catches with its name, wrapped
    inside its column."""
    severity_width = max(len("severity"), *(len(entry[2]) for entry in entries))
    lead = 5 + 2 + severity_width + 2
    rows = [f"{'code':<5}  {'severity':<{severity_width}}  what it catches [name]"]
    for code, name, severity, _, summary, *rest in entries:
        first = f"{code:<5}  {severity:<{severity_width}}  "
        origin = rest[-1]
        plugin = f" (plugin {origin.split(' ')[0]})" if origin else ""
        rows.append(hanging(f"{summary} [{name}]{plugin}", width, first, " " * lead))
    return "".join(row + "\n" for row in rows)


def rules_json(entries: Sequence[Entry]) -> str:
    rows = [
        {**dict(zip(FIELDS[:5], entry[:5])), **({"plugin": entry[11]} if entry[11] else {})}
        for entry in entries
    ]
    return json.dumps(rows, indent=2) + "\n"
