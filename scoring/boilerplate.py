"""Boilerplate across a batch: the lines an edit inserts, normalized, and whether another skill of the run already
received the same line or one nearly alike. Pure: the run keeps the mapping (flows/state/inserted.py)."""

from __future__ import annotations

import re

from scoring.edit_guards import WORDY
from scoring.edits import Edit

# Characters (normalized) from which an inserted line counts as content: a shorter one is a phrase any skill may need
# ("STOP: confirm before merging", a heading), a longer one pasted into several skills is boilerplate.
UNIT_MIN = 40
# fuzz.ratio of two normalized lines from which they are one line with a word or a number changed. Measured on 36
# real skills (1 072 lines of 40+ characters): 2.3 % of lines have a line at least this alike in another skill — the
# same author's boilerplate copied between sibling skills (11 exact), or one template with a parameter changed
# (viewport 960×540 / 1080×1440, a path's folder). At 70–84 the pairs say different things in the same words
# ("read the corresponding theme file …" / "load the appropriate guideline file …").
NEAR_DUPLICATE = 85
_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?|^\s*#+\s+")
_PUNCTUATION = re.compile(r"[^\w\s]")


def inserted_units(text: str, edit: Edit, skill: str = "") -> tuple[str, ...]:
    """The lines the edit adds, each normalized (lower case, list marker, checkbox and punctuation dropped, one space,
    the skill's own name as ``<skill>``) for telling one skill's insertion from another's; only lines of
    ``UNIT_MIN`` characters or more (a filler word removed or a heading level fixed adds none)."""
    old, new = edit.old, edit.new
    while old and new and old[0] == new[0]:
        old, new = old[1:], new[1:]
    while old and new and old[-1] == new[-1]:
        old, new = old[:-1], new[:-1]
    if old and not WORDY.search(new):
        return ()
    units = (normalized_line(line, skill) for line in new.split("\n"))
    return tuple(dict.fromkeys(u for u in units if len(u) >= UNIT_MIN))


def normalized_line(line: str, skill: str = "") -> str:
    text = _MARKER.sub("", line).lower()
    for name in {skill.lower(), skill.lower().replace("-", " ").replace("_", " ")} - {""}:
        text = text.replace(name, " skillname ")
    return " ".join(_PUNCTUATION.sub(" ", text).split())


def boilerplate(units: tuple[str, ...], elsewhere: dict[str, str], skill: str) -> str:
    """'' when no unit was inserted in another skill; else which skill, how alike, and the line: the same line after
    normalization, or one at least ``NEAR_DUPLICATE`` alike (a checklist pasted with one word changed per skill)."""
    from rapidfuzz import fuzz, process

    others = {unit: owner for unit, owner in elsewhere.items() if owner != skill}
    for unit in units:
        found = process.extractOne(unit, list(others), scorer=fuzz.ratio, score_cutoff=NEAR_DUPLICATE)
        if found is not None:
            return f"{others[found[0]]} ({found[1]:.0f} % alike: {unit[:60]!r})"
    return ""
