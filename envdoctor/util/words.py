"""User text in words: the planner's reasons are chains ("no NVIDIA GPU with a working driver ->
the CPU build -> torch 2.13.0 (cpu)"), kept so in the JSON reports for scripts; people read them
as a sentence. No imports: the lean `install` path uses it too."""

from __future__ import annotations

_ARROWS = (" -> ", " → ")


def in_words(text: str) -> str:
    """An arrow chain as a sentence: "A -> B -> torch X" reads "A, so B: torch X". Text without
    an arrow chain is returned as it is."""
    for arrow in _ARROWS[1:]:
        text = text.replace(arrow, _ARROWS[0])
    if _ARROWS[0] not in text:
        return text
    steps = text.split(_ARROWS[0])
    last = steps[-1]
    if last.startswith("torch ") and len(steps) > 1:  # what was chosen, after why
        steps, chosen = steps[:-1], last
    else:
        chosen = None
    sentence = steps[0] + "".join(f", so {step}" for step in steps[1:])
    return f"{sentence}: {chosen}" if chosen is not None else sentence
