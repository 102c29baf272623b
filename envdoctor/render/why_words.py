"""The words `envdoctor why` uses in every format: what was read, what it recognised, and what
backs each finding."""

from __future__ import annotations

from collections.abc import Sequence

SUPPORT_WORDS = {
    "both": "the pasted error points here, and this machine's facts confirm it",
    "text": "the pasted error says so; this machine's facts do not show it",
    "facts": "this machine's facts; not what the pasted error points to",
}


def header(known: bool, signatures: Sequence[str], read_bytes: int, truncated: bool, source: str) -> str:
    size = read_bytes / 1024
    cut = ", of which its beginning and end were read" if truncated else ""
    where = "standard input" if source == "stdin" else source
    if not known:
        return (
            f"envdoctor does not know this error ({where}, {size:.1f} KiB{cut}): none of its error "
            "signatures matches it. What the check found anyway is below; if none of it explains the "
            "error, the lines at the end are what a bug report needs."
        )
    count = len(signatures)
    sign = "sign" if count == 1 else "signs"
    return (
        f"Explaining the error from {where} ({size:.1f} KiB{cut}): it shows {count} known {sign} "
        f"({', '.join(signatures)}); the findings it points to come first."
    )


REPORT_LEAD = "To report the error, paste it with these lines (`envdoctor report` prints the full block):"
