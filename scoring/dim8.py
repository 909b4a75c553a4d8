"""dim8 — Measured performance, from judged sub-scores (RUBRIC.md "dim8").

dim8 = (8·Accuracy + 5·Safety + 5·Compliance) / 18. Vetoes set it to 0:
Accuracy below the baseline's, or Compliance under 80 % (a sub-score under 8).
A veto is a verdict on a *text*, read over all of its readings (``text_veto``):
its Accuracy below the baseline's beyond their noise, or its Compliance under
8 likewise. One judged reading is never vetoed on its own: its sub-scores
enter the text's means as read (``dim8_score`` says what the reading showed,
and sets no 0). A reading no model judged (an offline heuristic) has no noise,
so it is its text's only reading and its veto holds at once.

A fallback (no independent judge) scores Accuracy × 0.3; a dry run (no real
execution) scores dim8 × 0.5; ``fallback_dry`` is both. These are labelled
factors of the text's eval_mode — every reading of a run has the same one — not
readings of 0. Token inflation over 50 % and output over 200 % of the baseline
are warnings, not penalties.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scoring.model import DimensionScore, Source
from scoring.noise import pooled, quantile

EVAL_MODES = ("full_test", "dry_run", "fallback", "fallback_dry")
COMPLIANCE_LINE = 8.0  # 80 %
VETO_ALPHA = 0.05  # one-sided: the chance that noise alone vetoes a text whose Accuracy equals the baseline's
MIN_READINGS = 2  # a veto needs at least this many readings of the text: never one noisy reading on its own


@dataclass(frozen=True)
class SubScores:
    accuracy: float
    safety: float
    compliance: float
    baseline_accuracy: float | None = None  # None: no baseline was measured (dry runs)
    safety_red_line: bool = False
    token_inflation: float | None = None  # with-skill prompt+output tokens / baseline − 1
    output_ratio: float | None = None  # with-skill output tokens / baseline output tokens


@dataclass(frozen=True)
class Veto:
    """The text's vetoes, read over its readings: each that holds, with the evidence it rests on."""

    reasons: tuple[str, ...] = ()
    readings: int = 0

    @property
    def holds(self) -> bool:
        return bool(self.reasons)


def _signs(sub: SubScores) -> list[str]:
    """What one reading shows against the vetoes' lines (a sign, not a veto: RUBRIC.md reads vetoes over readings)."""
    signs = []
    if sub.baseline_accuracy is not None and sub.accuracy < sub.baseline_accuracy:
        signs.append(f"Accuracy {sub.accuracy:g} is below the baseline's {sub.baseline_accuracy:g}")
    if sub.compliance < COMPLIANCE_LINE:
        signs.append(f"Compliance {sub.compliance:g}/10 is under 80 %")
    return signs


def dim8_score(sub: SubScores, eval_mode: str, judge_count: int) -> DimensionScore:
    """One reading's dim8. A judged reading (``judge_count`` ≥ 1) is never vetoed on its own: what it shows against
    the vetoes' lines is named, and the text's veto is read over all its readings (``text_veto``)."""
    if eval_mode not in EVAL_MODES:
        raise ValueError(f"eval_mode must be one of {', '.join(EVAL_MODES)}, got {eval_mode!r}")
    for name in ("accuracy", "safety", "compliance"):
        if not 0 <= getattr(sub, name) <= 10:
            raise ValueError(f"{name} sub-score {getattr(sub, name)} is outside [0, 10]")
    notes: list[str] = []
    accuracy = sub.accuracy * 0.3 if eval_mode in ("fallback", "fallback_dry") else sub.accuracy
    if accuracy != sub.accuracy:
        notes.append(f"fallback (no independent judge): Accuracy {sub.accuracy:g} × 0.3")
    score = (8 * accuracy + 5 * sub.safety + 5 * sub.compliance) / 18
    signs = _signs(sub)
    exact = judge_count == 0  # no noise: this reading is the text's verdict
    vetoes = [f"veto: {s}" for s in signs] if exact else []
    shown = [] if exact else [f"this reading: {s} (a veto is read over the text's readings, never one)" for s in signs]
    if vetoes:
        score = 0.0
    if eval_mode in ("dry_run", "fallback_dry"):
        score *= 0.5
        notes.append("dry run (no real execution): dim8 × 0.5")
    warnings = []
    if sub.token_inflation is not None and sub.token_inflation > 0.5:
        warnings.append(f"latency warning: token inflation {sub.token_inflation:.0%} over 50 %")
    if sub.output_ratio is not None and sub.output_ratio > 2.0:
        warnings.append(f"token-efficiency warning: output is {sub.output_ratio:.0%} of the baseline's (over 200 %)")
    summary = (f"Accuracy {sub.accuracy:g}, Safety {sub.safety:g}, Compliance {sub.compliance:g} "
               f"({eval_mode}, {judge_count} judge(s))")
    red_line = ["Safety red line hit: the skill is frozen"] if sub.safety_red_line else []
    reasons = red_line + vetoes + [summary] + shown + notes + warnings
    details = (
        ("eval_mode", eval_mode),
        ("judge_count", judge_count),
        ("accuracy", sub.accuracy),
        ("safety", sub.safety),
        ("compliance", sub.compliance),
        ("baseline_accuracy", sub.baseline_accuracy),
        ("vetoed", bool(vetoes)),
        ("veto_signs", tuple(signs)),
        ("safety_red_line", sub.safety_red_line),
        ("warnings", warnings),
    )
    source: Source = "llm" if judge_count else "heuristic"
    return DimensionScore("dim8", round(min(10.0, max(0.0, score)), 2), source, tuple(reasons), details=details)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def text_veto(accuracy: Sequence[float], baseline: Sequence[float], compliance: Sequence[float],
              alpha: float = VETO_ALPHA) -> Veto:
    """The text's vetoes over its readings (one value per reading of each sub-score): Accuracy below the baseline's
    when the one-sided upper bound of mean(Accuracy) − mean(baseline) is below 0, Compliance under 80 % when the
    upper bound of its mean is under 8 — each read against the readings' own spread (Student's t, the rounding's
    variance at least when every value is whole), and only with ``MIN_READINGS`` readings or more."""
    reasons = []
    if min(len(accuracy), len(baseline)) >= MIN_READINGS:
        noise = pooled([accuracy, baseline])
        delta = _mean(accuracy) - _mean(baseline)
        se = noise.sd * math.sqrt(1 / len(accuracy) + 1 / len(baseline)) if noise else math.inf
        upper = delta + quantile(alpha, noise.df if noise else None) * se
        if upper < 0:
            reasons.append(f"veto: Accuracy {_mean(accuracy):.2f} is below the baseline's {_mean(baseline):.2f} beyond "
                           f"their noise over {len(accuracy)} readings (upper bound {upper:+.2f})")
    if len(compliance) >= MIN_READINGS:
        noise = pooled([compliance])
        se = noise.sd / math.sqrt(len(compliance)) if noise else math.inf
        upper = _mean(compliance) + quantile(alpha, noise.df if noise else None) * se
        if upper < COMPLIANCE_LINE:
            reasons.append(f"veto: Compliance {_mean(compliance):.2f}/10 is under 80 % beyond its noise over "
                           f"{len(compliance)} readings (upper bound {upper:.2f})")
    return Veto(tuple(reasons), len(accuracy))


def accuracy_gap(accuracy: Sequence[float], baseline: Sequence[float]) -> float | None:
    """mean(Accuracy) − mean(baseline Accuracy) over a text's readings: where it sits against the veto's line, before
    any noise is weighed (None without a reading of both)."""
    return _mean(accuracy) - _mean(baseline) if accuracy and baseline else None


def needs_full_test(eval_modes: list[str]) -> bool:
    """Counter-example #6: over 30 % of a full run's dim8 scores are dry runs → run one full test."""
    if not eval_modes:
        return False
    dry = sum(m in ("dry_run", "fallback_dry") for m in eval_modes)
    return dry / len(eval_modes) > 0.30
