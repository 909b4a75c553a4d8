"""A judge's noise as the keep decision and the dim8 veto read it: pooled within-text spread, and Student's t.

Pure statistics with no rubric in them, so that both ``scoring/samples.py`` (a text's measurements) and
``scoring/dim8.py`` (the text's veto, read over its readings) can use one definition.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache


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


@lru_cache(maxsize=4096)
def quantile(p: float, df: int | None) -> float:
    """The one-sided critical value for error ``p``: Student's t with the noise's df (the normal without one)."""
    from scipy import special  # not scipy.stats: a third of the import time, paid by every `luban` process

    if p <= 0:
        return math.inf
    return -float(special.stdtrit(df, p)) if df else -float(special.ndtri(p))  # upper tail = − lower (symmetric)
