"""The report as Markdown: `check --format markdown`, GitHub's step summary, and `envdoctor report`.

Built from the JSON report's data, so it carries exactly the findings JSON carries. Text from the
machine is escaped for Markdown; commands go into fenced blocks, verbatim, to stay copy-pasteable.
"""

from __future__ import annotations

from typing import Any

from envdoctor.model.findings import Report
from envdoctor.render.json_report import report_to_data
from envdoctor.render.why_words import REPORT_LEAD, SUPPORT_WORDS, header
from envdoctor.util.words import in_words

MARK = {"ok": "✅", "info": "ℹ️", "warning": "⚠️", "error": "❌"}
HEADLINE = {0: "no problems found", 1: "problems found"}


def text(value: object) -> str:
    """Machine text as Markdown prose: HTML-like pieces ("<user>") must not vanish as tags."""
    return str(value).replace("<", "&lt;")


def cell(value: object) -> str:
    return text(value).replace("|", "\\|").replace("\r", " ").replace("\n", "<br>")


def fence(body: str, lang: str = "") -> str:
    """A fenced block that the body's own backticks cannot close."""
    ticks = "```"
    while ticks in body:
        ticks += "`"
    return f"{ticks}{lang}\n{body}\n{ticks}"


def primary(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The findings that stand on their own (folded ones are shown under their cause)."""
    return [f for f in data["findings"] if "folded_under" not in f]


def consequences(data: dict[str, Any], finding: dict[str, Any]) -> list[dict[str, Any]]:
    """The findings folded under `finding` (under the first finding of its code only)."""
    first = next(f for f in primary(data) if f["code"] == finding["code"])
    if first is not finding:
        return []
    return [f for f in data["findings"] if f.get("folded_under") == finding["code"]]


def headline(data: dict[str, Any]) -> str:
    shown = primary(data)
    counts = {s: sum(1 for f in shown if f["severity"] == s) for s in ("error", "warning", "info")}
    words = {"error": "error", "warning": "warning", "info": "note"}
    parts = [f"{n} {words[s]}{'s' if n != 1 else ''}" for s, n in counts.items() if n]
    folded = len(data["findings"]) - len(shown)
    if folded:
        parts.append(f"{folded} consequence{'s' if folded != 1 else ''} folded in")
    if data["exit_code"] == 0 and (counts["error"] or counts["warning"]):
        state = "works, with warnings"
    else:
        state = HEADLINE.get(data["exit_code"], "problems found")
    tail = f" ({', '.join(parts)})" if parts else ""
    return f"{state}{tail}, exit {data['exit_code']}"


def _intro(data: dict[str, Any]) -> list[str]:
    plat = data["platform"]
    source = "" if data["source"] == "live" else f" · from snapshot `{data['source']}`"
    lines = [
        f"envdoctor {data['envdoctor_version']} · {plat['system']} {plat['release']} {plat['machine']} · "
        f"examined `{data['interpreter']['path']}` ({text(data['interpreter']['reason'])}){source}",
    ]
    if data.get("plugins"):
        from envdoctor.render.plugin_words import plugins_line

        told = plugins_line(
            (p["package"], p["version"], p["rules"], p["probes"], p["error"]) for p in data["plugins"]
        )
        lines[0] += f" · plugins: {text(told)}"
    return lines


def _area_mark(area: dict[str, Any]) -> str:
    """As the console marks it: an area that does not apply was not checked, so no tick."""
    if area["severity"] == "ok" and str(area["verdict"]).startswith("not applicable"):
        return "➖"
    return MARK[area["severity"]]


def _areas(data: dict[str, Any]) -> list[str]:
    rows = ["| | Area | Verdict |", "|---|---|---|"]
    rows += [f"| {_area_mark(a)} | {cell(a['title'])} | {cell(a['verdict'])} |" for a in data["areas"]]
    return rows


def _expectations(data: dict[str, Any]) -> list[str]:
    table = data.get("expectations")
    if not table:
        return []
    rows = ["### Expectations", "", "| Expectation | Wanted | Status | Rule |", "|---|---|---|---|"]
    marks = {"met": "✅ met", "not met": "❌ not met", "ignored": "➖ ignored"}
    for key, row in table.items():
        value = "true" if row["value"] is True else row["value"]
        rows.append(f"| `{key}` | `{value}` | {marks[row['status']]} | {row['rule']} |")
    return [*rows, ""]


def finding_lines(finding: dict[str, Any], verbose: bool = False) -> list[str]:
    lines = [
        f"#### {MARK[finding['severity']]} {finding['code']} `{finding['name']}` ({finding['severity']})",
        "",
        f"**{text(finding['title'])}**",
        "",
        *([f"_{SUPPORT_WORDS[finding['support']].capitalize()}._", ""] if finding.get("support") else []),
        *(text(line) + "  " for line in finding["detail"].splitlines()),
    ]
    if verbose and finding["evidence"]:
        lines += ["", "Evidence: " + "; ".join(f"`{e}`" for e in finding["evidence"])]
    for number, fix in enumerate(finding["fixes"]):
        lines += ["", f"**{'Fix' if number == 0 else 'Or'}:** {text(in_words(fix['summary']))}"]
        if fix["commands"]:
            lines += ["", fence("\n".join(fix["commands"]), "bash")]
        if fix["link"]:
            lines += ["", f"See <{fix['link']}>"]
    return [*lines, ""]


def consequence_lines(folded: list[dict[str, Any]], verbose: bool = False) -> list[str]:
    """Findings folded under a root cause: listed in a closed <details>, without fixes."""
    if not folded:
        return []
    noun = "finding" if len(folded) == 1 else "findings"
    lines = [f"<details><summary>Caused by this ({len(folded)} {noun}, fixed by the fix above)</summary>", ""]
    for finding in folded:
        lines.append(
            f"- {MARK[finding['severity']]} {finding['code']} `{finding['name']}`: {text(finding['title'])}"
        )
        if verbose:
            lines += [f"  {text(line)}  " for line in finding["detail"].splitlines()]
    return [*lines, "", "</details>", ""]


def render_markdown_data(data: dict[str, Any], verbose: bool = False, title: str = "envdoctor") -> str:
    lines = [f"## {title}: {headline(data)}", "", *_intro(data), "", *_why(data), *_areas(data), ""]
    lines += _expectations(data)
    if data["findings"]:
        lines += ["### Findings", ""]
        for finding in primary(data):
            lines += finding_lines(finding, verbose)
            lines += consequence_lines(consequences(data, finding), verbose)
    if data.get("ignored"):
        lines += [f"Ignored rules: {', '.join(data['ignored'])}", ""]
    told = data.get("why")
    if told is not None and not told["known"]:
        lines += [
            REPORT_LEAD,
            "",
            fence("\n".join(f"{k}: {v}" for k, v in environment_rows(data)), "text"),
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def _why(data: dict[str, Any]) -> list[str]:
    told = data.get("why")
    if told is None:
        return []
    said = header(told["known"], told["signatures"], told["read_bytes"], told["truncated"], told["input"])
    return [text(said), ""]


def render_markdown(report: Report, verbose: bool = False) -> str:
    return render_markdown_data(report_to_data(report), verbose)


# --- envdoctor report: the bug-report block -----------------------------------------------------


def flatten(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    """("gpus[0].name", "NVIDIA ...") pairs; short lists join on ", " (a capability is "8, 9")."""
    if isinstance(value, dict):
        pairs: list[tuple[str, str]] = []
        for key, item in value.items():
            pairs += flatten(item, f"{prefix}.{key}" if prefix else str(key))
        return pairs
    if isinstance(value, list):
        plain = all(not isinstance(v, (dict, list)) for v in value)
        if plain and not any(", " in str(v) or "\n" in str(v) for v in value):
            return [(prefix, ", ".join(str(v) for v in value) if value else "[]")]
        pairs = []
        for index, item in enumerate(value):
            pairs += flatten(item, f"{prefix}[{index}]")
        return pairs
    if value is None:
        return []  # absent is said by the key's absence, never by a stray "key: None"
    shown = str(value).lower() if isinstance(value, bool) else str(value)
    return [(prefix, shown)]


def facts_block(data: dict[str, Any]) -> str:
    """Every probe's facts as `key: value` lines, one section per probe, like collect_env prints."""
    titles = {a["area"]: a["title"] for a in data["areas"]}
    out: list[str] = []
    for probe in data["probes"]:
        name = probe["name"]
        out.append(f"== {titles.get(name, name)} ({name}: {probe['status']}, {probe['seconds']:.2f} s) ==")
        if probe["error"]:
            out.append(f"error: {probe['error']}")
        for key, value in flatten(data["facts"].get(name)):
            lines = value.splitlines() or [""]
            out.append(f"{key}: {lines[0]}")
            out += [f"    {line}" for line in lines[1:]]
        out.append("")
    return "\n".join(out).rstrip()


def _facts_of(data: dict[str, Any], probe: str) -> dict[str, Any]:
    found = data["facts"].get(probe)
    return found if isinstance(found, dict) else {}


def _joined(parts: list[str | None]) -> str:
    return ", ".join(p for p in parts if p)


def environment_rows(data: dict[str, Any]) -> list[tuple[str, str]]:
    """What torch's collect_env prints, from the facts that are there; a missing fact is no row."""
    plat = data["platform"]
    env = _facts_of(data, "environment")
    python = _facts_of(data, "python")
    torch = _facts_of(data, "torch")
    nvml = _facts_of(data, "nvml")
    toolkit = _facts_of(data, "toolkit")
    rows: list[tuple[str, str]] = []
    system = f"{plat['system']} {plat['release']} {plat['machine']}"
    rows.append(("OS", f"{env['distribution']} ({system})" if env.get("distribution") else system))
    if env.get("libc"):
        rows.append(("C library", env["libc"]))
    if python:
        kind = "conda env" if python.get("is_conda") else "venv" if python.get("is_venv") else "system"
        rows.append(
            (
                "Python",
                f"{python.get('implementation', '')} {python.get('version', '')} "
                f"({python.get('bits', '?')}-bit, {kind})".strip(),
            )
        )
    if torch.get("version") or torch.get("dist_version"):
        build = _joined(
            [
                f"CUDA {torch['cuda']}" if torch.get("cuda") else None,
                f"cuDNN {torch['cudnn']}" if torch.get("cudnn") else None,
                f"ROCm {torch['hip']}" if torch.get("hip") else None,
                "CPU-only" if not (torch.get("cuda") or torch.get("hip")) and torch.get("version") else None,
            ]
        )
        version = torch.get("version") or torch.get("dist_version")
        rows.append(("PyTorch", f"{version} ({build})" if build else str(version)))
        if torch.get("cuda_available") is not None:
            rows.append(("CUDA available", "yes" if torch["cuda_available"] else "no"))
    elif torch:
        rows.append(("PyTorch", "not installed" if not torch.get("installed") else "does not import"))
    numpy = torch.get("numpy") if isinstance(torch.get("numpy"), dict) else None
    if numpy is not None:
        rows.append(("NumPy", numpy.get("version") or "not installed"))
    gpus = nvml.get("gpus") or []
    if gpus:
        names = [
            f"GPU {g.get('index', i)}: {g.get('name') or '?'}"
            + (f" (sm_{g['capability'][0]}{g['capability'][1]})" if g.get("capability") else "")
            for i, g in enumerate(gpus)
        ]
        rows.append(("GPUs", "; ".join(names)))
    if nvml.get("driver_version"):
        rows.append(("NVIDIA driver", str(nvml["driver_version"])))
    nvcc = toolkit.get("nvcc") if isinstance(toolkit.get("nvcc"), dict) else None
    if nvcc is not None and nvcc.get("release"):
        rows.append(("nvcc", f"CUDA {nvcc['release']} ({nvcc.get('path', '')})"))
    for tool in env.get("tools") or []:
        if tool.get("version"):
            rows.append((str(tool["name"]), str(tool["version"])))
    packages = [f"{p['name']}=={p['version']}" for p in env.get("packages") or []]
    if packages:
        rows.append(("Packages", ", ".join(packages)))
    return rows


def render_bug_report_data(data: dict[str, Any]) -> str:
    plat = data["platform"]
    table = ["| | |", "|---|---|", *(f"| {cell(k)} | {cell(v)} |" for k, v in environment_rows(data))]
    lines = [
        "<!-- envdoctor report: paste into the issue as it is; credentials, user names in paths and "
        "GPU UUIDs are masked -->",
        render_markdown_data(data, verbose=True, title="envdoctor report").rstrip(),
        "",
        "### Environment",
        "",
        *table,
        "",
        "<details><summary>Every fact the probes recorded</summary>",
        "",
        f"Platform: {plat['system']} {plat['release']} ({text(plat['version'])}) {plat['machine']}",
        "",
        fence(facts_block(data), "text"),
        "",
        "</details>",
    ]
    return "\n".join(lines) + "\n"


def render_bug_report(report: Report) -> str:
    return render_bug_report_data(report_to_data(report))
