"""Write the generated parts of the README and docs/: `python -m tests.regen_docs`.

- README.md's samples: each `<!-- sample: ARGS -->` block is followed by a fence holding
  `$ envdoctor ARGS` and that command's real output, run on the recorded fixtures at 100 columns;
- README.md's corpus score (`<!-- corpus-score -->...<!-- /corpus-score -->`);
- docs/rules.md: every rule from the registry, with its documentation as `explain` prints it.

tests/test_readme.py fails when any of it drifts from what this writes.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
RULES_DOC = ROOT / "docs" / "rules.md"
WIDTH = 100
SAMPLE = re.compile(r"(<!-- sample: (?P<args>.*?) -->\n```text\n)(?P<body>.*?)(```)", re.S)
SCORE = re.compile(r"<!-- corpus-score -->.*?<!-- /corpus-score -->", re.S)


def run_sample(args: str) -> str:
    """`envdoctor ARGS` as a user at a 100-column terminal without colours sees it, from the
    repository's root (fixtures/ paths), offline and with no pip configuration of this machine."""
    # Not in CI either: CI=true prints whole lines for the log, and the sample is a terminal's.
    drop = ("PIP_", "UV_", "CONDA", "ENVDOCTOR_", "GITHUB_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop) and k != "CI"}
    env.update(
        COLUMNS=str(WIDTH), NO_COLOR="1", TERM="dumb", ENVDOCTOR_OFFLINE="1", PIP_CONFIG_FILE=os.devnull
    )
    argv = shlex.split(args)
    stdin = None
    if "<" in argv:  # "why - < file": the file on standard input
        at = argv.index("<")
        stdin = (ROOT / argv[at + 1]).read_bytes()
        argv = argv[:at] + argv[at + 2 :]
    done = subprocess.run(
        [sys.executable, "-m", "envdoctor", *argv],
        cwd=ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
    )
    out = done.stdout.decode("utf-8")
    return f"$ envdoctor {args}\n{out.rstrip()}\n"


def readme_text(text: str) -> str:
    def sample(match: re.Match[str]) -> str:
        return match.group(1) + run_sample(match.group("args")) + match.group(4)

    text = SAMPLE.sub(sample, text)
    return SCORE.sub(_score_line(), text)


def _score_line() -> str:
    from tests.corpus_support import score, why_score

    result, explained = score(), why_score()
    return (
        f"<!-- corpus-score -->The corpus holds {result.total} real threads; the rules diagnose "
        f"{result.right} of them right ({result.ratio:.1%}), and `envdoctor why` puts the thread's "
        f"finding first for {explained.right} of {explained.total} error texts "
        f"({explained.ratio:.1%}).<!-- /corpus-score -->"
    )


def rules_doc() -> str:
    from envdoctor.rule_catalogue import area_title
    from envdoctor.rules import RULES

    lines = [
        "# Rules",
        "",
        "Every rule envdoctor applies, by code (`envdoctor rules` lists them, `envdoctor explain CODE`",
        "prints one). Generated from the registry by `python -m tests.regen_docs`: edit the rules, not",
        "this file.",
        "",
        "| code | name | severity | what it catches |",
        "|---|---|---|---|",
        *(
            f"| [{r.code}](#{r.code.lower()}) | `{r.name}` | {r.severity.value} | {r.summary} |"
            for r in RULES
        ),
        "",
    ]
    for rule in RULES:
        lines += [
            f"## {rule.code}",
            "",
            f"`{rule.name}` · {rule.severity.value} · about: {area_title(rule.area)}",
            "",
            f"**{rule.summary}**",
            "",
            f"- *What it checks:* {rule.doc.what}",
            f"- *Why it matters:* {rule.doc.why}",
            f"- *How to fix:* {rule.doc.fix}",
            f"- *Example:* {rule.doc.example}",
        ]
        if rule.consequence_of:
            lines.append(f"- *Folded under:* {', '.join(rule.consequence_of)}, when one of them is found.")
        lines += _causes(rule.code)
        lines.append("")
    return "\n".join(lines).replace("<", "&lt;")


def _causes(code: str) -> list[str]:
    """A symptom rule's usual causes (knowledge/symptoms.json), each with its check and fix per system."""
    from envdoctor.knowledge.symptoms import symptom

    found = symptom(code)
    if found is None:
        return []
    lines = ["", "Usual causes, in the order threads report them (a finding puts first what the facts show):"]
    lines.append("")
    for number, cause in enumerate(found.causes, 1):
        forms = [(("elsewhere" if system == "any" else system), check) for system, check in cause.checks]
        checks = "; ".join(f"`{c}`" if len(forms) == 1 else f"{system}: `{c}`" for system, c in forms)
        named = f" Named exactly by {', '.join(cause.named_by)}." if cause.named_by else ""
        tell = f"*Tell:* {checks} shows {cause.shows}."
        lines.append(f"{number}. {cause.title}. {tell} *Fix:* {cause.fix.summary}.{named}")
    return lines


def main() -> None:
    README.write_text(readme_text(README.read_text(encoding="utf-8")), encoding="utf-8")
    RULES_DOC.write_text(rules_doc(), encoding="utf-8")
    print(f"wrote {README.relative_to(ROOT)} and {RULES_DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
