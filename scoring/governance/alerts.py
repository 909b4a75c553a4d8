"""The design's eight dynamic-threshold alerts ("动态阈值告警"), computed over results.tsv history.

History is cut into *runs*: for each skill, a run starts at a ``baseline`` row
and holds the attempts after it. Each run yields one value per metric; a
metric's history is every earlier run, across skills, in time order; the value
checked is each skill's latest run.

The per-attempt figures read the keep decision's evidence where a row has it
(``results.tsv``'s ``evidence``), so judge noise is not mistaken for a trend:
an attempt is *flat* when it established neither a gain nor a loss on any
dimension (an inconclusive edit, or nothing rose), not when its noisy Δ
happened to be near 0; the self-assessment gap counts only what lies beyond the
target dimension's own 95 % noise band. Rows without evidence (older files,
the offline heuristics) keep the plain readings: |Δ| < 0.1, |expected − Δ|.

Dynamic thresholds are μ ± k·σ of the metric's own history, with
k = norm.isf(0.05 / 8) (Bonferroni over the eight checks, ≈ 2.50) from 30
points on, the t quantile t.isf(0.05 / 8, n − 1) below that, and no alert at
all under 5 points. Fixed thresholds stay fixed: flat > 40 %, budget use
< 2 % or > 8 %, self-assessed vs measured gap > 5, Δ-mean slope < −0.1 per run
(least squares, from 5 runs on), and a missing mode cell.

Two of the dynamic checks read rates of a run's few attempts: the revert rate (reverts of the attempts) and the
rejected-hit rate (proposals that repeated a rejected edit). A run of one to three attempts gives rates 0, 1/3, 1/2
or 1, where a normal line on per-run rates does not hold (one false pause per 48 skill-runs in a stationary world), so
these are checked on their counts (``counted``): the exact binomial tail of this run's count against the history's
pooled rate, at the same error the 2.5σ line is set for. The others keep μ ± k·σ.

Only a check with a noise model escalates (``Alert.escalates``): the dynamic
ones here, and the library's (``library_alerts``). A fixed threshold knows
nothing of the run's judge noise or edit sizes — under σ = 1 judges and two
rounds a run, "flat > 40 %" fired on 51 of 75 healthy skill-runs (two steady
libraries of five skills, twelve weeks each), and "budget use < 2 %" fires on
any skill whose one small edit is small — so a fixed check is recorded and
shown, never counted toward a pause or a freeze.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace

from scoring.model import WEIGHTS
from scoring.notes import fact_float, parse_note
from scoring.samples import quantile

ALPHA = 0.05
CHECKS = 8
MIN_POINTS = 5
NORMAL_FROM = 30
METRICS = ("dry_run_ratio", "revert_rate", "delta_trend", "flat_ratio", "mode_completeness",
           "rejected_hit_rate", "budget_use", "assessment_gap")


def k_for(points: int, alpha: float = ALPHA / CHECKS) -> float | None:
    """The threshold multiplier for a history of ``points`` values (None: too short to judge)."""
    if points < MIN_POINTS:
        return None
    return quantile(alpha, None if points >= NORMAL_FROM else points - 1)


@dataclass(frozen=True)
class Alert:
    name: str
    skill: str
    value: float | None
    threshold: float | None
    fired: bool
    active: bool  # False: not enough history to judge
    message: str
    escalates: bool = True  # False: recorded and shown only (a fixed threshold, blind to noise)
    run: str = ""  # the run checked (its first row's time): a counter observes each run once
    history_until: str = ""  # the newest run of the history it was judged against (a library episode's reference)

    def __post_init__(self) -> None:  # pandas hands over numpy scalars; keep the record plain Python
        object.__setattr__(self, "fired", bool(self.fired))
        object.__setattr__(self, "active", bool(self.active))
        if self.value is not None:
            object.__setattr__(self, "value", float(self.value))


def _evidence(cell) -> dict:
    if not isinstance(cell, str) or not cell:
        return {}
    try:
        return json.loads(cell)
    except ValueError:
        return {}


def _flat(evidence: dict, delta: float) -> bool:
    """Moved neither way beyond noise: no dimension decided it. Without evidence: |Δ| < 0.1."""
    if evidence:
        return evidence.get("basis") is None
    return delta == delta and abs(delta) < 0.1


def _assessment_gap(evidence: dict, expected: float, delta: float, target: str) -> float:
    """|expected − measured| beyond the target dimension's 95 % noise band, in total points (only for an attempt whose
    Δ was measured: an unmeasured one has no gap to read, not a measured 0)."""
    measured = delta
    band = (evidence.get("dims") or {}).get(target, {}).get("se")
    slack = 1.96 * band * WEIGHTS.get(target, 0) / 10 if band else 0.0
    return max(0.0, abs(expected - measured) - slack)


COLUMNS = ("skill", "run", "started", "dry_run_ratio", "revert_rate", "delta_mean", "flat_ratio", "mode_completeness",
           "rejected_hit_rate", "budget_use", "assessment_gap", "attempts", "keeps", "worse", "proposals", "hits",
           "baseline", "sha", "models", "shift", "reference")


def run_metrics(frame):
    """One row per (skill, run) with the eight metrics, the run's attempts and keeps, and ``shift``: its baseline
    minus the skill's previous baseline when both measured the same text — SKILL.md and its files (``sha``) — with the
    same judging models (``models``), else NaN (a model change is a new reference, said in ``reference``); ``frame`` is
    results.tsv rows as pandas reads them."""
    import pandas as pd

    rows = []
    for skill, group in frame.groupby("skill", sort=True):
        group = group.reset_index(drop=True)
        run_ids = (group["status"] == "baseline").cumsum()
        previous: tuple[str, str, float] | None = None  # the last baseline's text (with its files), models and total
        for run_id, run in group.groupby(run_ids):
            row = _one_run(skill, int(run_id), run)
            if row["sha"] and previous is not None and previous[0] == row["sha"]:
                if previous[1] == row["models"]:
                    row["shift"] = row["baseline"] - previous[2]
                else:  # the same text read by other models: a new reference, not a drift
                    row["reference"] = f"the judging models changed ({previous[1] or '?'} → {row['models'] or '?'})"
            if row["sha"] and row["baseline"] == row["baseline"]:
                previous = (row["sha"], row["models"], row["baseline"])
            rows.append(row)
    return pd.DataFrame(rows).sort_values(["started", "skill"]).reset_index(drop=True) if rows else pd.DataFrame(
        columns=list(COLUMNS))


def _one_run(skill: str, run_id: int, run) -> dict:
    attempts = run[run["status"].isin(["keep", "revert"])]
    notes = [str(n) for n in attempts["note"]]
    evidence = [_evidence(e) for e in (attempts["evidence"] if "evidence" in attempts else [""] * len(attempts))]
    proposals = sum(fact_float(n, "proposals") or 1 for n in notes)
    hits = sum(fact_float(n, "rejected_hits") or 0 for n in notes)
    gaps = [_assessment_gap(e, fact_float(n, "expected") or 0.0, d, str(t))
            for n, d, e, t in zip(notes, attempts["delta"], evidence, attempts["dim_changed"], strict=False)
            if fact_float(n, "expected") is not None and d == d]
    flats = [_flat(e, d) for e, d in zip(evidence, attempts["delta"], strict=False)]
    decided = len(attempts)
    first = run.iloc[0]
    is_baseline = first["status"] == "baseline"
    return {
        "skill": skill, "run": run_id, "started": str(first["timestamp"]),
        "dry_run_ratio": float(run["eval_mode"].isin(["dry_run", "fallback_dry"]).mean()),
        "revert_rate": float((attempts["status"] == "revert").mean()) if decided else math.nan,
        "delta_mean": float(attempts["delta"].mean()) if decided else math.nan,
        "flat_ratio": sum(flats) / decided if decided else math.nan,
        "mode_completeness": float(run["mode"].isin(["quick", "full"]).mean()),
        "rejected_hit_rate": hits / proposals if proposals else math.nan,
        "budget_use": float(attempts["edit_pct"].mean()) if decided else math.nan,
        "assessment_gap": sum(gaps) / len(gaps) if gaps else math.nan,
        "attempts": decided, "keeps": int((attempts["status"] == "keep").sum()),
        "worse": sum(e.get("verdict") == "revert" for e in evidence),  # a confident non-improvement (a veto)
        "proposals": proposals, "hits": hits,
        "baseline": float(first["new_score"]) if is_baseline and first["new_score"] == first["new_score"] else math.nan,
        "sha": parse_note(str(first["note"]))[0].get("sha", "") if is_baseline else "",
        "models": parse_note(str(first["note"]))[0].get("models", "") if is_baseline else "",
        "shift": math.nan, "reference": "",
    }


def dynamic(name: str, skill: str, value: float, history: list[float], side: str, what: str, run: str = "",
            scale: float = 1.0, alpha: float = ALPHA / CHECKS) -> Alert:
    """``value`` against μ ± k·σ of ``history`` (``side``: upper, lower or both); ``scale`` divides σ (a mean of n
    values is checked against σ/√n); ``alpha``: the error k is set for, per side."""
    points = [h for h in history if h == h]  # NaN-free
    k = k_for(len(points), alpha)
    if k is None or value != value:
        return Alert(name, skill, None if value != value else value, None, False, False,
                     f"{name}: inactive ({len(points)} point(s) of history, {MIN_POINTS} needed)", run=run)
    mean = sum(points) / len(points)
    sd = math.sqrt(sum((p - mean) ** 2 for p in points) / (len(points) - 1)) / scale
    upper, lower = mean + k * sd, mean - k * sd
    high = value > upper and side in ("upper", "both")
    low = value < lower and side in ("lower", "both")
    threshold = upper if high or side == "upper" else lower
    sign = "+" if threshold == upper else "−"
    return Alert(name, skill, value, threshold, high or low, True,
                 f"{name} {value:.3f} {'beyond' if high or low else 'within'} μ {sign} {k:.2f}σ = {threshold:.3f}: {what}",
                 run=run)


def binomial_tail(count: int, out_of: int, p: float, side: str) -> float:
    """P(X ≤ count) (``side`` lower) or P(X ≥ count) (upper) for X ~ Binomial(out_of, p), summed exactly."""
    chosen = range(0, count + 1) if side == "lower" else range(count, out_of + 1)
    return min(1.0, sum(math.comb(out_of, k) * p**k * (1 - p) ** (out_of - k) for k in chosen))


def counted(name: str, skill: str, current: tuple[float, float], history: tuple, side: str, what: str,
            run: str = "", alpha: float = ALPHA / CHECKS) -> Alert:
    """A rate of few attempts checked on its counts: this run's ``count`` of ``out_of`` against the history's pooled
    rate, by the exact binomial tail at the error the μ ± k·σ line is set for (``alpha``, ≈ 2.5σ one-sided). A run
    of one to three attempts has rates 0, 1/3, 1/2 or 1, where a normal line on the per-run rates does not hold; the
    tail knows how many attempts the rate rests on (one attempt can never fire a check whose rate is not extreme).
    ``history``: the earlier runs' counts and totals, as two sequences."""
    count, out_of = current
    counts, totals = ([float(v) for v in column] for column in history)
    runs = [(c, t) for c, t in zip(counts, totals, strict=True) if t == t and t > 0 and c == c]
    if len(runs) < MIN_POINTS or not out_of or out_of != out_of:
        value = count / out_of if out_of and out_of == out_of else None
        return Alert(name, skill, value, None, False, False,
                     f"{name}: inactive ({len(runs)} run(s) with attempts in its history, {MIN_POINTS} needed)"
                     if value is not None else f"{name}: no attempts to measure", run=run)
    pooled = sum(c for c, _ in runs) / sum(t for _, t in runs)
    pooled = min(max(pooled, 0.5 / sum(t for _, t in runs)), 1 - 0.5 / sum(t for _, t in runs))  # never exactly 0 or 1
    tail = binomial_tail(round(count), round(out_of), pooled, side)
    fired = tail < alpha
    return Alert(name, skill, count / out_of, pooled, fired, True,
                 f"{name} {int(count)}/{int(out_of)} against the history's pooled {pooled:.3f}: P({'≤' if side == 'lower' else '≥'}"
                 f" {int(count)}) = {tail:.4f} {'below' if fired else 'not below'} {alpha:.4f}: {what}", run=run)


def _fixed(name: str, skill: str, value: float, fired: bool, threshold: float, message: str, run: str) -> Alert:
    if value != value:
        return Alert(name, skill, None, threshold, False, False, f"{name}: no attempts to measure", False, run)
    return Alert(name, skill, value, threshold, fired, True, message, False, run)


def check_alerts(metrics) -> list[Alert]:
    """All eight checks for each skill's latest run, against the runs before it."""
    import numpy as np  # the least-squares slope; scipy.stats would add a second to every `luban` process's start

    alerts: list[Alert] = []
    for skill in sorted(set(metrics["skill"])):
        position = metrics.index[metrics["skill"] == skill][-1]
        current, history = metrics.loc[position], metrics.loc[: position - 1]
        run = str(current["started"])
        alerts.append(dynamic("dry_run_ratio", skill, current["dry_run_ratio"], list(history["dry_run_ratio"]), "upper",
                              "dim8 confidence is low", run))
        reverts = current["attempts"] - current["keeps"]
        alerts.append(counted("revert_rate", skill, (reverts, current["attempts"]),
                              (history["attempts"] - history["keeps"], history["attempts"]), "lower",
                              "the scorer may be too lenient", run))
        alerts.append(counted("rejected_hit_rate", skill, (current["hits"], current["proposals"]),
                              (history["hits"], history["proposals"]), "upper", "proposals keep repeating rejected edits",
                              run))
        if "shift" in metrics:
            shift = dynamic("score_shift", skill, current["shift"], list(history["shift"]), "both",
                            "the judges read the unchanged text differently: have they drifted?", run)
            if current.get("reference"):
                shift = replace(shift, message=f"score_shift: a new reference from this run: {current['reference']}")
            alerts.append(shift)
        trend = [v for v in [*list(history["delta_mean"]), current["delta_mean"]] if v == v]
        if len(trend) >= MIN_POINTS:
            slope = float(np.polyfit(range(len(trend)), trend, 1)[0])
            alerts.append(Alert("delta_trend", skill, slope, -0.1, slope < -0.1, True,
                                f"Δ-mean slope {slope:+.3f} per run (alert below −0.1): diminishing returns", False, run))
        else:
            alerts.append(Alert("delta_trend", skill, None, -0.1, False, False, f"delta_trend: inactive ({len(trend)} run(s))",
                                False, run))
        flat = current["flat_ratio"]
        alerts.append(_fixed("flat_ratio", skill, flat, flat > 0.40, 0.40, f"flat ratio {flat:.0%} (alert over 40 %): scorer ceiling",
                             run))
        complete = current["mode_completeness"]
        alerts.append(_fixed("mode_completeness", skill, complete, complete < 1.0, 1.0,
                             f"mode column {complete:.0%} complete: fill it in at Phase 0", run))
        budget = current["budget_use"]
        alerts.append(_fixed("budget_use", skill, budget, budget < 2 or budget > 8, 2.0,
                             f"mean edit-budget use {budget:.1f} % (alert under 2 % or over 8 %)", run))
        gap = current["assessment_gap"]
        alerts.append(_fixed("assessment_gap", skill, gap, gap > 5, 5.0,
                             f"self-assessed vs measured gap {gap:.1f} (alert over 5): self-assessment is unreliable", run))
    return alerts
