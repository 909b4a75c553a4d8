"""Epoch meta-review (Phase 6): lessons across the skills of a run, from results.tsv alone.

- high-yield patterns: edit strategies kept at least twice, by mean Δ;
- repeatedly reverted directions: strategies reverted at least twice;
- ceiling signals: skills whose dim2/3/4 cluster is above 90 % of its maximum;
- overfitting patterns: a strategy followed by a held-out failure in ≥ 2 skills;
- oscillations: a dimension whose established gain later kept edits undid
  (``oscillation``), per skill — it goes to ``oscillation_guard`` and
  diagnosis skips it in that skill for a few runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from scoring.governance.oscillation import WINDOW, oscillations
from scoring.model import WEIGHTS
from scoring.notes import parse_note

CLUSTER = ("dim2", "dim3", "dim4")


@dataclass(frozen=True)
class Lesson:
    section: str
    title: str
    fields: dict[str, str]


@dataclass(frozen=True)
class MetaReview:
    lessons: tuple[Lesson, ...]
    oscillating_dims: dict[str, tuple[str, ...]] = field(default_factory=dict)  # dim → skills
    preferred_strategies: tuple[str, ...] = ()


def _scores(cell) -> dict[str, float]:
    if isinstance(cell, dict):
        return cell
    try:
        value = json.loads(cell) if isinstance(cell, str) and cell else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def meta_review(frame, history=None) -> MetaReview | None:
    """None when fewer than two skills were optimized (the review needs a cross-skill view). ``frame``: the rows of
    the skills' latest runs; ``history``: all their rows (oscillation reads each skill's recent runs; default frame)."""
    attempts = frame[frame["status"].isin(["keep", "revert"])]
    if attempts["skill"].nunique() < 2:
        return None
    strategy = attempts["note"].map(lambda n: parse_note(str(n))[0].get("strategy", "unspecified"))
    attempts = attempts.assign(strategy=strategy)
    lessons: list[Lesson] = []
    keeps = attempts[attempts["status"] == "keep"]
    kept = keeps.groupby("strategy")["delta"].agg(["count", "mean"])
    dims = keeps.groupby("strategy")["dim_changed"].agg(lambda d: d.mode().iloc[0] if len(d.mode()) else "")
    for name, row in kept[kept["count"] >= 2].sort_values("mean", ascending=False).iterrows():
        lessons.append(Lesson("高收益改动", str(name), {"count": str(int(row["count"])), "mean_delta": f"{row['mean']:+.1f}",
                                                    "dim": str(dims.get(name, ""))}))
    reverted = attempts[attempts["status"] == "revert"].groupby("strategy")["skill"].agg(["count", "nunique"])
    for name, row in reverted[reverted["count"] >= 2].iterrows():
        lessons.append(Lesson("低收益/拒绝改动", str(name), {"reverts": str(int(row["count"])), "skills": str(int(row["nunique"]))}))
    lessons += _ceilings(frame) + _overfitting(frame)
    oscillating = oscillations(frame if history is None else history, WINDOW)
    for dim, skills in oscillating.items():
        lessons.append(Lesson("触顶信号规律", f"{dim} oscillates", {"skills": ", ".join(skills), "action": "oscillation_guard"}))
    preferred = tuple(str(n) for n in kept[kept["count"] >= 2].sort_values("mean", ascending=False).index)
    return MetaReview(tuple(lessons), oscillating, preferred)


def _ceilings(frame) -> list[Lesson]:
    out = []
    for skill, group in frame.groupby("skill"):
        last = _scores(group["scores"].iloc[-1])
        if all(isinstance(last.get(d), (int, float)) for d in CLUSTER):
            points = sum(last[d] * WEIGHTS[d] for d in CLUSTER)
            if points > 0.9 * sum(10 * WEIGHTS[d] for d in CLUSTER):
                out.append(Lesson("触顶信号规律", f"{skill}: dim2/3/4 cluster at its ceiling",
                                  {"cluster_points": f"{points / 10:.1f}", "suggestion": "consider the exploratory rewrite (Phase 2.5)"}))
    return out


def _overfitting(frame) -> list[Lesson]:
    failing = frame[frame["note"].astype(str).str.contains("held_out_fail=true", regex=False)]
    by_strategy: dict[str, set[str]] = {}
    for _, row in failing.iterrows():
        name = parse_note(str(row["note"]))[0].get("strategy", "unspecified")
        by_strategy.setdefault(name, set()).add(str(row["skill"]))
    return [Lesson("过拟合模式库", f"{name} precedes held-out decline", {"skills": ", ".join(sorted(skills))})
            for name, skills in sorted(by_strategy.items()) if len(skills) >= 2]
