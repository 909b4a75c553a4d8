"""The arithmetic of the rubric: totals, rounding, dim10, and what counts as better.

Rounding is decimal half-up at one place, done on exact decimals, so that
7.25 becomes 7.3 on every machine (binary floats and ``round`` would give 7.2).
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Decimal
from typing import Protocol


class Scored(Protocol):
    """What the arithmetic reads of a dimension's score (``scoring.model.DimensionScore`` is one): the formula stays
    below the model, which builds its totals with it."""

    @property
    def dim(self) -> str: ...
    @property
    def score(self) -> float | None: ...
    @property
    def source(self) -> str: ...
    @property
    def weight(self) -> int: ...


_TENTH = Decimal("0.1")


def round1(value: float | Decimal) -> float:
    """Round half-up to one decimal, from the value's shortest decimal repr."""
    exact = value if isinstance(value, Decimal) else Decimal(repr(float(value)))
    return float(exact.quantize(_TENTH, rounding=ROUND_HALF_UP))


def total_of(dims: Iterable[Scored]) -> float:
    """Σ(score × weight) / 10 over the scored dimensions, at one decimal."""
    points = sum(
        (Decimal(repr(float(d.score))) * d.weight for d in dims if d.score is not None),
        Decimal(0),
    )
    return round1(points / 10)


def points_covered(dims: Iterable[Scored]) -> int:
    """How many of the 100 points the scored dimensions stand for."""
    return sum(d.weight for d in dims if d.score is not None)


# What each source is called wherever a total is shown (luban score, the report, run.json): one vocabulary.
SOURCE_LABELS = {"rules": "rules", "formula": "formula", "llm": "model", "heuristic": "offline estimate"}


def explain_total(dims: Iterable[Scored]) -> str:
    """Where a total's points come from, by source, and what is left unscored (never counted as zero).

    ``luban score`` (no model: the LLM dimensions unscored) and ``luban optimize`` offline (heuristic estimates for
    them) give one skill two different totals; this line, printed by both, says why."""
    dims = list(dims)
    parts = []
    for source, label in SOURCE_LABELS.items():
        chosen = [d for d in dims if d.source == source and d.score is not None]
        if chosen:
            parts.append(f"{label} {total_of(chosen)} ({' '.join(d.dim for d in chosen)})")
    line = f"total {total_of(dims)} of {points_covered(dims)} points scored: " + (" + ".join(parts) or "nothing")
    unscored = [d for d in dims if d.score is None]
    if unscored:
        line += f"; unscored {' '.join(d.dim for d in unscored)} ({sum(d.weight for d in unscored)} points, not counted)"
    return line


def is_improvement(old_total: float, new_total: float) -> bool:
    """An edit is kept only when the new total, at one decimal, is strictly greater."""
    return round1(new_total) > round1(old_total)


def dim10_score(p0: int, p1: int) -> float:
    """dim10 = (100 − 30·P0 − 5·P1) / 10, at most 4.0 while a P0 is open, at least 1.0."""
    if p0 < 0 or p1 < 0:
        raise ValueError(f"finding counts cannot be negative (P0={p0}, P1={p1})")
    raw = Decimal(100 - 30 * p0 - 5 * p1) / 10
    if p0 > 0:
        raw = min(raw, Decimal(4))
    return float(max(raw, Decimal(1)))
