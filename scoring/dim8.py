"""dim8 — Measured performance, from judged sub-scores (RUBRIC.md "dim8").

dim8 = (8·Accuracy + 5·Safety + 5·Compliance) / 18. Vetoes set it to 0:
Accuracy below the baseline's, or Compliance under 80 % (a sub-score under 8).
A fallback (no independent judge) scores Accuracy × 0.3; a dry run (no real
execution) scores dim8 × 0.5; ``fallback_dry`` is both. Token inflation over
50 % and output over 200 % of the baseline are warnings, not penalties.
"""

from __future__ import annotations

from dataclasses import dataclass

from scoring.model import DimensionScore, Source

EVAL_MODES = ("full_test", "dry_run", "fallback", "fallback_dry")


@dataclass(frozen=True)
class SubScores:
    accuracy: float
    safety: float
    compliance: float
    baseline_accuracy: float | None = None  # None: no baseline was measured (dry runs)
    safety_red_line: bool = False
    token_inflation: float | None = None  # with-skill prompt+output tokens / baseline − 1
    output_ratio: float | None = None  # with-skill output tokens / baseline output tokens


def dim8_score(sub: SubScores, eval_mode: str, judge_count: int) -> DimensionScore:
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
    vetoes = []
    if sub.baseline_accuracy is not None and sub.accuracy < sub.baseline_accuracy:
        vetoes.append(f"veto: Accuracy {sub.accuracy:g} is below the baseline's {sub.baseline_accuracy:g}")
    if sub.compliance < 8:
        vetoes.append(f"veto: Compliance {sub.compliance:g}/10 is under 80 %")
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
    reasons = red_line + vetoes + [summary] + notes + warnings
    details = (
        ("eval_mode", eval_mode),
        ("judge_count", judge_count),
        ("accuracy", sub.accuracy),
        ("safety", sub.safety),
        ("compliance", sub.compliance),
        ("baseline_accuracy", sub.baseline_accuracy),
        ("vetoed", bool(vetoes)),
        ("safety_red_line", sub.safety_red_line),
        ("warnings", warnings),
    )
    source: Source = "llm" if judge_count else "heuristic"
    return DimensionScore("dim8", round(min(10.0, max(0.0, score)), 2), source, tuple(reasons), details=details)


def needs_full_test(eval_modes: list[str]) -> bool:
    """Counter-example #6: over 30 % of a full run's dim8 scores are dry runs → run one full test."""
    if not eval_modes:
        return False
    dry = sum(m in ("dry_run", "fallback_dry") for m in eval_modes)
    return dry / len(eval_modes) > 0.30
