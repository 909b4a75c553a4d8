"""One proposed edit, applied exactly or refused, and measured against the edit budget.

An edit changes one file of the skill (``file``: SKILL.md, or a Markdown file SKILL.md references). It
replaces ``old`` — an exact substring that occurs once — with ``new``;
or, with ``old`` empty, inserts ``new`` right after ``anchor`` (also exact and
unique), or at the end when both are empty. Nothing is applied fuzzily: an
edit that does not fit the text is refused with the reason.

The budget is the design's "textual learning rate": the Levenshtein distance
between the texts before and after must be at most ``budget`` × the original
length (10 % by default), and the new text at most 150 % of the original.
"""

from __future__ import annotations

from dataclasses import dataclass

from rapidfuzz.distance import Levenshtein

from scoring.skill_view import SKILL_FILE  # what an edit changes unless it names a file SKILL.md references

DEFAULT_BUDGET = 0.10
SIZE_CAP = 1.5


class EditRefused(ValueError):
    """The edit cannot be applied as written; the message says why."""


@dataclass(frozen=True)
class Edit:
    target_dim: str
    old: str
    new: str
    rationale: str = ""
    expected_gain: float = 0.0
    anchor: str = ""
    strategy: str = ""  # which proposer strategy produced it, for meta-learning
    file: str = SKILL_FILE  # the skill's file it changes, relative to the skill's folder (one file per edit)

    def describe(self) -> str:
        what = self.strategy or self.target_dim
        where = "" if self.file == SKILL_FILE else f" in {self.file}"
        return f"{what}{where}: {self.rationale}" if self.rationale else f"{what}{where}"


def apply_edit(text: str, edit: Edit) -> str:
    if edit.old:
        count = text.count(edit.old)
        if count != 1:
            raise EditRefused(f"'old' must occur exactly once in the skill; it occurs {count} time(s)")
        if edit.old == edit.new:
            raise EditRefused("'old' and 'new' are the same: the edit changes nothing")
        return text.replace(edit.old, edit.new, 1)
    if not edit.new:
        raise EditRefused("the edit has neither 'old' nor 'new' text")
    if not edit.anchor:
        return text + ("" if text.endswith("\n") else "\n") + edit.new
    count = text.count(edit.anchor)
    if count != 1:
        raise EditRefused(f"the insertion 'anchor' must occur exactly once; it occurs {count} time(s)")
    at = text.index(edit.anchor) + len(edit.anchor)
    return text[:at] + edit.new + text[at:]


@dataclass(frozen=True)
class BudgetCheck:
    distance: int
    original_length: int
    budget: float
    size_ratio: float

    @property
    def allowed(self) -> int:
        return int(self.budget * self.original_length)

    @property
    def edit_pct(self) -> float:
        """Distance as a percentage of the original length (the results.tsv edit_pct column)."""
        return 100.0 * self.distance / max(1, self.original_length)

    @property
    def within(self) -> bool:
        return self.problem() is None

    def problem(self) -> str | None:
        if self.distance > self.allowed:
            return (f"edit changes {self.distance} characters, over the budget of {self.allowed} "
                    f"({self.budget:.0%} of the original {self.original_length}); propose a smaller edit")
        if self.size_ratio > SIZE_CAP:
            return f"the skill would grow to {self.size_ratio:.0%} of its original size, over the 150 % cap"
        return None


def check_budget(original: str, edited: str, budget: float = DEFAULT_BUDGET) -> BudgetCheck:
    """Levenshtein distance (rapidfuzz) against ``budget`` × the original's length, and the size cap."""
    if not 0 < budget <= DEFAULT_BUDGET:
        raise ValueError(f"edit budget must be in (0, 0.10], got {budget}")
    distance = Levenshtein.distance(original, edited)
    return BudgetCheck(distance, len(original), budget, len(edited) / max(1, len(original)))
