"""Measurements of a text, and the judges' noise read from them: what the keep decision weighs.

A text's ``Measured`` holds every value each dimension got — one per judge
call, or per evaluation for dim8 — and names the dimensions that are exact
(rules, formula, offline heuristics: one value, no noise). ``pooled`` reads
a judge's noise from the spread within texts, never between them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scoring.dim8 import Veto, accuracy_gap, text_veto
from scoring.formula import round1
from scoring.model import WEIGHTS, DimensionScore
from scoring.noise import Noise, pooled, quantile

# dim8's sub-scores as the grader gives them (RUBRIC.md: dim8 = (8·Accuracy + 5·Safety + 5·Compliance) / 18), each
# one sample per dim8 measurement, and how much of dim8 a point of each is worth.
PARTS: dict[str, float] = {"dim8.accuracy": 8 / 18, "dim8.safety": 5 / 18, "dim8.compliance": 5 / 18}
# The baseline's Accuracy as the same grade read it: no part of dim8's formula, but what its Accuracy veto compares with.
BASELINE = "dim8.baseline"


@dataclass(frozen=True)
class Measured:
    """Every value one text got, per dimension: one per judge call (or per evaluation, for dim8).

    ``exact`` names the dimensions computed without a model (rules, formula,
    offline heuristics): they hold one value, and it has no noise. ``PARTS``
    are dim8's judged sub-scores, sampled with each dim8 measurement: not
    dimensions of the rubric (no weight, never in a total), but where an edit
    aimed at dim8 shows (``keep_decision``). ``BASELINE`` is the baseline's
    Accuracy in the same readings, which the dim8 veto compares with.

    A judged dim8 sample is one reading, never vetoed on its own; the text's
    dim8 (``value``, and so ``total`` and ``means``) is 0 only when its veto
    holds over all its readings (``veto``, RUBRIC.md "dim8").
    """

    values: tuple[tuple[str, tuple[float, ...]], ...] = ()
    exact: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        for dim, values in self.values:
            if dim not in WEIGHTS and dim not in PARTS and dim != BASELINE:
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

    def veto(self) -> Veto:
        """The text's dim8 veto over its judged readings (an exact dim8 already carries its own: it has no noise)."""
        if "dim8" in self.exact:
            return Veto()
        return text_veto(self.samples("dim8.accuracy"), self.samples(BASELINE), self.samples("dim8.compliance"))

    def accuracy_gap(self) -> float | None:
        """The mean of its judged readings' Accuracy − the baseline's (None for an exact dim8: its veto is its own)."""
        return None if "dim8" in self.exact else accuracy_gap(self.samples("dim8.accuracy"), self.samples(BASELINE))

    def value(self, dim: str) -> float | None:
        """The text's score on ``dim``: the mean of its samples, and for dim8 0 when the text's veto holds."""
        mean = self.mean(dim)
        return 0.0 if dim == "dim8" and mean is not None and self.veto().holds else mean

    def total(self, dims: Iterable[str] | None = None) -> float:
        """Σ(weight × value) / 10 over ``dims`` (default: every measured one), at one decimal."""
        chosen = self.dims if dims is None else frozenset(dims)
        points = sum(WEIGHTS[d] * (self.value(d) or 0.0) for d in chosen if self.n(d))
        return round1(points / 10)

    def means(self) -> dict[str, float]:
        """Each dimension's value (dim8 after the text's veto), at two decimals."""
        return {d: round(self.value(d) or 0.0, 2) for d in sorted(self.dims)}


def dim8_parts(dim8: DimensionScore) -> dict[str, list[float]]:
    """One dim8 reading's sub-scores as samples: its Accuracy, Safety and Compliance as the grader gave them, and the
    baseline's Accuracy where one was measured (what the text's veto compares with)."""
    details = dict(dim8.details)
    found = {f"dim8.{name}": details.get(name) for name in ("accuracy", "safety", "compliance")}
    found[BASELINE] = details.get("baseline_accuracy")
    return {part: [float(value)] for part, value in found.items() if isinstance(value, int | float)}


def pooled_noise(texts: Iterable[Measured]) -> dict[str, Noise]:
    """Each judged dimension's noise, pooled over the texts (``pooled``); exact dimensions have none."""
    groups: dict[str, list[tuple[float, ...]]] = {}
    for text in texts:
        for dim, values in text.values:
            if dim not in text.exact:
                groups.setdefault(dim, []).append(values)
    found = {dim: pooled(values) for dim, values in groups.items()}
    return {dim: noise for dim, noise in found.items() if noise is not None}


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
