"""Measurements of a text, and the judges' noise read from them: what the keep decision weighs.

A text's ``Measured`` holds every value each dimension got — one per judge
call, or per evaluation for dim8 — and names the dimensions that are exact
(rules, formula, offline heuristics: one value, no noise). ``pooled`` reads
a judge's noise from the spread within texts, never between them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from scoring.formula import round1
from scoring.model import WEIGHTS

# dim8's sub-scores as the grader gives them (RUBRIC.md: dim8 = (8·Accuracy + 5·Safety + 5·Compliance) / 18), each
# one sample per dim8 measurement, and how much of dim8 a point of each is worth.
PARTS: dict[str, float] = {"dim8.accuracy": 8 / 18, "dim8.safety": 5 / 18, "dim8.compliance": 5 / 18}


@dataclass(frozen=True)
class Measured:
    """Every value one text got, per dimension: one per judge call (or per evaluation, for dim8).

    ``exact`` names the dimensions computed without a model (rules, formula,
    offline heuristics): they hold one value, and it has no noise. ``PARTS``
    are dim8's judged sub-scores, sampled with each dim8 measurement: not
    dimensions of the rubric (no weight, never in a total), but where an edit
    aimed at dim8 shows (``keep_decision``).
    """

    values: tuple[tuple[str, tuple[float, ...]], ...] = ()
    exact: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        for dim, values in self.values:
            if dim not in WEIGHTS and dim not in PARTS:
                raise ValueError(f"unknown dimension {dim!r}")
            if any(not (0 <= v <= 10) or v != v for v in values):
                raise ValueError(f"{dim}: values must lie in [0, 10], got {values}")
            if dim in self.exact and len(values) > 1:
                raise ValueError(f"{dim} is exact and holds one value, got {len(values)}")

    @classmethod
    def of(cls, values: Mapping[str, Iterable[float]], exact: Iterable[str] = ()) -> Measured:
        return cls(tuple(sorted((d, tuple(float(v) for v in vs)) for d, vs in values.items() if tuple(vs))), frozenset(exact))

    def samples(self, dim: str) -> tuple[float, ...]:
        return dict(self.values).get(dim, ())

    def n(self, dim: str) -> int:
        return len(self.samples(dim))

    def mean(self, dim: str) -> float | None:
        values = self.samples(dim)
        return sum(values) / len(values) if values else None

    @property
    def dims(self) -> frozenset[str]:
        """The rubric's dimensions measured (dim8's parts are not dimensions)."""
        return frozenset(d for d, _ in self.values if d in WEIGHTS)

    def plus(self, more: Measured) -> Measured:
        """These samples and ``more``'s; an exact dimension takes the newer value (it is the same text)."""
        merged = {d: list(v) for d, v in self.values}
        for dim, values in more.values:
            merged[dim] = list(values) if dim in more.exact else merged.get(dim, []) + list(values)
        return Measured.of(merged, (self.exact | more.exact) & frozenset(merged))

    def total(self, dims: Iterable[str] | None = None) -> float:
        """Σ(weight × mean) / 10 over ``dims`` (default: every measured one), at one decimal."""
        chosen = self.dims if dims is None else frozenset(dims)
        points = sum(WEIGHTS[d] * (self.mean(d) or 0.0) for d in chosen if self.n(d))
        return round1(points / 10)

    def means(self) -> dict[str, float]:
        return {d: round(self.mean(d) or 0.0, 2) for d in sorted(self.dims)}


@dataclass(frozen=True)
class Noise:
    """A dimension's judge noise: pooled within-text variance, with its degrees of freedom."""

    variance: float
    df: int

    @property
    def sd(self) -> float:
        return math.sqrt(self.variance)


QUANTUM = 1 / 12  # the variance of rounding to whole points: a judge that answers in integers is never finer than this


def pooled(groups: Iterable[Sequence[float]]) -> Noise | None:
    """Σ squared deviations from each group's own mean over Σ (n − 1); None when no group has two values.

    A group is one text's samples: the spread between texts is what an edit
    changes, the spread within one text is the judge's noise. A judge that
    answers in whole points often gives a text the same integer every time and
    flips at the texts that sit between two: a pooled spread of zero then says
    "flips are rare", not "never". So when every sample is a whole number the
    variance is read as at least the rounding's own, 1/12 (Sheppard).
    """
    squares, df, whole = 0.0, 0, True
    for values in groups:
        if len(values) < 2:
            continue
        mean = sum(values) / len(values)
        squares += sum((v - mean) ** 2 for v in values)
        df += len(values) - 1
        whole = whole and all(float(v).is_integer() for v in values)
    return Noise(max(squares / df, QUANTUM if whole else 0.0), df) if df else None


def pooled_noise(texts: Iterable[Measured]) -> dict[str, Noise]:
    """Each judged dimension's noise, pooled over the texts (``pooled``); exact dimensions have none."""
    groups: dict[str, list[tuple[float, ...]]] = {}
    for text in texts:
        for dim, values in text.values:
            if dim not in text.exact:
                groups.setdefault(dim, []).append(values)
    found = {dim: pooled(values) for dim, values in groups.items()}
    return {dim: noise for dim, noise in found.items() if noise is not None}


@lru_cache(maxsize=4096)
def quantile(p: float, df: int | None) -> float:
    """The one-sided critical value for error ``p``: Student's t with the noise's df (the normal without one)."""
    from scipy import special  # not scipy.stats: a third of the import time, paid by every `luban` process

    if p <= 0:
        return math.inf
    return -float(special.stdtrit(df, p)) if df else -float(special.ndtri(p))  # upper tail = − lower (symmetric)


def compare_means(before: tuple[float, ...], after: tuple[float, ...], noise: Noise | None, alpha: float = 0.05,
                  min_df: int = 3) -> tuple[float, float | None]:
    """(after − before, the one-sided upper bound of that difference); the bound is None when the noise is unknown.

    The held-out gate reads a decline as real only when this upper bound is
    below 0: the same measured noise as the keep decision, not one graded call each.
    """
    if not before or not after:
        raise ValueError("both sides need at least one measurement")
    delta = sum(after) / len(after) - sum(before) / len(before)
    if noise is None or noise.df < min_df:
        return delta, None
    return delta, delta + quantile(alpha, noise.df) * noise.sd * math.sqrt(1 / len(after) + 1 / len(before))
