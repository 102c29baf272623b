"""Install commands and pip's own index lines in a pasted error text (`envdoctor why`).

A thread's log often shows the command that went wrong (`pip install torch --extra-index-url
https://download.pytorch.org/whl/cu126`) and pip's "Looking in indexes: ..." line: where the
machine's configuration is clean, that is where the sources came from. Only the pasted text is
read (the texts a check captures are errors, not commands), line by line, each line cut to
MAX_LINE characters, so a hostile log costs time linear in its size.
"""

from __future__ import annotations

import shlex

from envdoctor.knowledge.signatures import PASTED, ErrorEvidence
from envdoctor.util.lazy_re import Lazy
from envdoctor.util.records import record

MAX_LINE = 2000
MAX_LINES = 5000
_COMMAND = Lazy(
    r"(?:^|[\s>$#`(])(?P<tool>uv\s+pip|uv|pip3?|python3?\s+-m\s+pip)\s+(?P<verb>install|add|sync|compile|tool\s+install)\b"
)
_LOOKING = Lazy(r"Looking in (?P<what>indexes|links):\s*(?P<urls>\S.*)$")
# Options that take a URL, as pip and uv spell them (long and short forms, = or a space).
_OPTIONS = {
    "--index-url": "index_url",
    "-i": "index_url",
    "--extra-index-url": "extra_index_urls",
    "--find-links": "find_links",
    "-f": "find_links",
    "--index": "indexes",
    "--default-index": "index_url",
}


@record
class PastedCommand:
    tool: str  # pip, uv
    line: str  # the line as pasted (trimmed)
    index_url: str | None = None  # --index-url / -i / --default-index
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    indexes: tuple[str, ...] = ()  # uv --index: prioritised over the default index
    requirements: tuple[str, ...] = ()  # the words that are neither options nor their values

    @property
    def sources(self) -> tuple[str, ...]:
        return (
            *((self.index_url,) if self.index_url else ()),
            *self.indexes,
            *self.extra_index_urls,
            *self.find_links,
        )


@record
class LookingIn:
    """pip's "Looking in indexes: A, B" / "Looking in links: C" line: what it really used."""

    indexes: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    line: str = ""


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text, posix=True)
    except ValueError:  # an unbalanced quote in a log line: split on blanks
        return text.split()


def parse_command(line: str) -> PastedCommand | None:
    text = line[:MAX_LINE]
    match = _COMMAND.search(text)
    if match is None:
        return None
    tool = "uv" if match.group("tool").startswith("uv") else "pip"
    # A command quoted in prose (`pip install ... -f URL` was resolved to ...): drop the quote marks
    # and sentence punctuation that stick to its last word.
    words = [w.strip("`'\",;") for w in _words(text[match.end() :].split("`", 1)[0])]
    words = [w for w in words if w]
    found: dict[str, list[str]] = {"index_url": [], "extra_index_urls": [], "find_links": [], "indexes": []}
    requirements: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        name, sep, value = word.partition("=")
        if name in _OPTIONS and sep:
            found[_OPTIONS[name]].append(value)
        elif word in _OPTIONS and index + 1 < len(words):
            found[_OPTIONS[word]].append(words[index + 1])
            index += 1
        elif not word.startswith("-") and word not in ("&&", "||", ";", "|"):
            requirements.append(word)
        elif word in ("&&", "||", ";", "|"):
            break
        index += 1
    # uv's --index may be name=url: keep the URL
    indexes = tuple(
        v.split("=", 1)[1] if "=" in v and "://" not in v.split("=", 1)[0] else v for v in found["indexes"]
    )
    return PastedCommand(
        tool=tool,
        line=text.strip()[:300],
        index_url=found["index_url"][-1] if found["index_url"] else None,
        extra_index_urls=tuple(found["extra_index_urls"]),
        find_links=tuple(found["find_links"]),
        indexes=indexes,
        requirements=tuple(requirements),
    )


def _pasted_lines(evidence: ErrorEvidence | None) -> list[str]:
    if evidence is None:
        return []
    lines: list[str] = []
    for text in evidence.texts:
        if text.source == PASTED:
            lines += [raw[:MAX_LINE] for raw in text.text.splitlines()[:MAX_LINES]]
    return lines


def commands(evidence: ErrorEvidence | None) -> tuple[PastedCommand, ...]:
    """The pip and uv install commands in the pasted text, in order."""
    found = [parse_command(line) for line in _pasted_lines(evidence)]
    return tuple(c for c in found if c is not None)


def looking_in(evidence: ErrorEvidence | None) -> tuple[LookingIn, ...]:
    found = []
    for line in _pasted_lines(evidence):
        match = _LOOKING.search(line)
        if match is None:
            continue
        urls = tuple(u.strip() for u in match.group("urls").split(",") if u.strip())
        if match.group("what") == "indexes":
            found.append(LookingIn(indexes=urls, line=line.strip()[:300]))
        else:
            found.append(LookingIn(links=urls, line=line.strip()[:300]))
    return tuple(found)


def text_lines(evidence: ErrorEvidence | None) -> list[str]:
    """Every line of every error text (pasted first), each cut to MAX_LINE characters."""
    if evidence is None:
        return []
    lines: list[str] = []
    for text in evidence.texts:
        lines += [raw[:MAX_LINE] for raw in text.text.splitlines()[:MAX_LINES]]
    return lines
