"""The keep decision's values: the policy's numbers, each dimension's evidence and the decision, frozen and checked.

``scoring/keep_decision.py`` holds the rule that makes them; this module holds
what the rule reads and returns, so that the flows, the records and the report
can use them without the rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum

from scoring.model import WEIGHTS

JUDGE_DIMS: tuple[str, ...] = ("dim2", "dim3", "dim5", "dim6")  # one structure-judge call scores all four


class Verdict(StrEnum):
    KEEP = "keep"
    REVERT = "revert"  # a confident non-improvement: a veto, or nothing rose where nothing is noisy
    MORE = "more"  # undecided: measure both texts again
    INCONCLUSIVE = "inconclusive"  # undecided at the cap: reverted, and the skill goes on


class DimStatus(StrEnum):
    GAIN = "gain"
    LOSS = "loss"  # worse beyond its noise
    EVEN = "even"  # exact, unchanged
    WITHIN = "within"  # judged, neither a gain nor a loss yet
    UNKNOWN = "unknown"  # judged, too few degrees of freedom to know its noise
    UNMEASURED = "unmeasured"  # measured on one text only


def spending(looks: int, last: float = 0.7) -> tuple[float, ...]:
    """Shares of alpha per look: ``last`` at the cap, the rest evenly before it (a clear gain can stop early)."""
    return (1.0,) if looks == 1 else tuple([(1 - last) / (looks - 1)] * (looks - 1) + [last])


@dataclass(frozen=True)
class KeepPolicy:
    """The numbers behind the rule; the defaults are what ``benchmarks/judge_noise.py`` measured."""

    alpha: float = 0.05  # one-sided: the chance that noise alone shows a gain, over all dimensions and looks
    max_looks: int = 8  # the cap: looks at the evidence before an undecided edit is inconclusive
    look_shares: tuple[float, ...] = spending(8)  # of alpha, spent at each look (Bonferroni across looks)
    target_share: float = 0.7  # of each look's alpha, for the dimension the edit says it improves
    veto_alpha: float = 0.05  # a loss beyond noise, split over the judged dimensions and the looks
    margin: float = 1.0  # points a judged dimension may lose, at most, for a gain on exact dimensions alone
    min_effect: float = 0.5  # a gain smaller than this (points on one dimension) is not worth an edit
    min_df: int = 3  # degrees of freedom before a dimension's noise counts as known
    # readings a side before a noisy dimension may decide: one reading against one is one draw each, however well
    # the pooled noise is known (RUBRIC.md: no keep or revert rests on one reading)
    min_readings: int = 2
    judges_per_step: int = 4  # judge calls per text when more is measured
    max_dim8: int = 2  # dim8 measurements of one text within a decision (two calls per test prompt each)
    # ... when the edit says it improves dim8: its gain is a fraction of a point (+1 Accuracy is +0.44 on dim8) read
    # through three noisy grades per measurement, so it takes about eight measurements a side to show
    max_dim8_target: int = 8

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 0.5 or not 0 < self.veto_alpha < 0.5:
            raise ValueError("alpha and veto_alpha must lie in (0, 0.5)")
        if self.max_looks < 1 or len(self.look_shares) != self.max_looks:
            raise ValueError(f"look_shares needs one share per look ({self.max_looks}), got {len(self.look_shares)}")
        if any(s < 0 for s in self.look_shares) or not math.isclose(sum(self.look_shares), 1.0, abs_tol=1e-9):
            raise ValueError(f"look_shares must be non-negative and sum to 1, got {self.look_shares}")
        if not 0 < self.target_share < 1 or self.margin < 0 or self.min_df < 1 or self.judges_per_step < 1:
            raise ValueError("target_share in (0, 1), margin ≥ 0, min_df ≥ 1 and judges_per_step ≥ 1")
        if self.min_readings < 1:
            raise ValueError("min_readings must be at least 1")
        if not 1 <= self.max_dim8 <= self.max_dim8_target:
            raise ValueError("max_dim8 must be at least 1, and max_dim8_target at least max_dim8")


@dataclass(frozen=True)
class DimEvidence:
    dim: str
    n: tuple[int, int]  # candidate, incumbent
    delta: float | None  # mean(candidate) − mean(incumbent)
    status: DimStatus
    se: float | None = None  # None: exact (or not measured on both)
    lower: float | None = None  # the gain test's one-sided bound at this dimension's share of alpha
    upper: float | None = None  # the veto's bound
    sd: float | None = None  # the judge noise it was read against
    df: int | None = None
    via: str | None = None  # a gain read through one of the dimension's parts (dim8's Accuracy), or a loss by veto
    few: bool = False  # noisy, with fewer than the policy's min_readings a side: its bounds cannot decide yet

    @property
    def falling_on_few(self) -> bool:
        """It fell beyond its noise, but on too few readings to decide: a keep waits for another reading of it."""
        return self.few and self.upper is not None and self.upper < -1e-9

    def to_json(self) -> dict:
        out: dict = {"n": list(self.n), "delta": _r(self.delta), "status": self.status.value}
        if self.via:
            out["via"] = self.via
        if self.few:
            out["few"] = True
        for name in ("se", "lower", "upper", "sd"):
            if getattr(self, name) is not None:
                out[name] = _r(getattr(self, name))
        if self.df is not None:
            out["df"] = self.df
        return out


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str
    look: int
    evidence: tuple[DimEvidence, ...]
    total_delta: float | None  # the total of the candidate's means − the incumbent's, at one decimal
    basis: str | None = None  # the dimension that decided it (the gain kept, or the loss vetoed)
    need: frozenset[str] = field(default_factory=frozenset)  # with MORE: the dimensions worth measuring again
    target: str | None = None  # the dimension the edit meant to improve
    rule_only: bool = False  # the gain so far is on exact dimensions alone: every judged one must show non-inferiority
    vetoes: tuple[str, ...] = ()  # each text's dim8 veto that holds over its readings ("candidate: …", "kept: …")

    def of(self, dim: str) -> DimEvidence | None:
        return next((e for e in self.evidence if e.dim == dim), None)

    @property
    def bound(self) -> float | None:
        """The deciding dimension's bound in total points (weight × bound / 10): how much it says, at least."""
        basis = self.of(self.basis) if self.basis else None
        if basis is None:
            return None
        value = basis.delta if basis.se in (None, 0.0) else (basis.upper if basis.status is DimStatus.LOSS else basis.lower)
        return None if value is None else round(WEIGHTS[basis.dim] * value / 10, 2)

    def samples(self) -> str:
        """'candidate/incumbent' samples of the deciding dimension (else of the most-sampled one)."""
        chosen = self.of(self.basis) if self.basis else None
        chosen = chosen or max(self.evidence, key=lambda e: sum(e.n), default=None)
        return f"{chosen.n[0]}/{chosen.n[1]}" if chosen else ""

    def to_json(self) -> dict:
        out = {"verdict": self.verdict.value, "look": self.look, "basis": self.basis, "reason": self.reason,
               "total_delta": self.total_delta, "dims": {e.dim: e.to_json() for e in self.evidence}}
        return out | {"vetoes": list(self.vetoes)} if self.vetoes else out


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
