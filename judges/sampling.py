"""The judges' answers as samples for the keep decision (``scoring/keep_decision.py``).

Every judge call is one sample of each dimension it scores; dim8 is one
sample per measurement (its formula over the test prompts, never vetoed on
its own), with its sub-scores and the baseline's Accuracy beside it, so the
text's veto is read over all its readings (``Measured.veto``).
What no model computed — the rule dimensions, dim10's formula, the offline
heuristics — is exact: the same text always gets the same value. A dimension
a call could not score gives no sample at all, never a zero.
"""

from __future__ import annotations

from judges.backend import Evaluation, Resample
from judges.structure_judge import Verdict
from scoring.keep_decision import JUDGE_DIMS, Measured
from scoring.model import DimensionScore
from scoring.samples import dim8_parts


def _judge_values(verdicts: tuple[Verdict, ...]) -> dict[str, list[float]]:
    scored = [v for v in verdicts if v.unscored_reason is None]
    return {d: [float(v.scores[d]) for v in scored if d in v.scores] for d in JUDGE_DIMS}


def _sampled(dim: DimensionScore) -> bool:
    return dim.source == "llm"


def evaluation_samples(evaluation: Evaluation) -> Measured:
    """One full evaluation: each judge's scores, dim8 once, and the exact dimensions."""
    values: dict[str, list[float]] = {}
    exact = []
    for dim in evaluation.score.dims:
        if dim.score is None:
            continue
        if not _sampled(dim):
            values[dim.dim] = [dim.score]
            exact.append(dim.dim)
        elif dim.dim in JUDGE_DIMS and evaluation.panel is not None:
            values[dim.dim] = _judge_values(evaluation.panel.verdicts)[dim.dim]
        else:
            values[dim.dim] = [dim.score]
            values |= dim8_parts(dim)
    return Measured.of(values, exact)


def resample_samples(resample: Resample) -> Measured:
    values = _judge_values(resample.verdicts)
    if resample.dim8 is not None and resample.dim8.score is not None and _sampled(resample.dim8):
        values["dim8"] = [resample.dim8.score]
        values |= dim8_parts(resample.dim8)
    return Measured.of(values)
