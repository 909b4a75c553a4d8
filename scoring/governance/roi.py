"""ROI precheck (Phase 0): skip what is near its ceiling, and say how much room is left."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class RoiCheck:
    decision: str  # "skip" | "recommend_skip" | "optimize"
    room: str  # "low" | "medium" | "high"
    reason: str
    estimate: str


def roi_precheck(baseline_total: float, lowest_dim: float, run_deltas: list[float],
                 days_since_last: int | None) -> RoiCheck:
    """``run_deltas``: the total Δ of each earlier run of this skill, oldest first."""
    times = len(run_deltas)
    if times:
        last = run_deltas[-1]
        ago = f", {days_since_last} days ago" if days_since_last is not None else ""
        history = f"optimized {times} time(s), last {last:+.1f}{ago}"
    else:
        history = "never optimized"
    stuck = times >= 3 and all(d < 1 for d in run_deltas[-3:])
    if baseline_total >= 85 and lowest_dim >= 7:
        room = "low"
        decision, reason = "skip", f"ceiling is near: baseline {baseline_total} ≥ 85 and lowest dimension {lowest_dim:g} ≥ 7"
    elif stuck:
        room = "low"
        decision, reason = "recommend_skip", "the last three runs each gained less than 1 point"
    else:
        room = "high" if baseline_total < 70 else "medium"
        decision, reason = "optimize", f"baseline {baseline_total}, lowest dimension {lowest_dim:g}"
    return RoiCheck(decision, room, reason, f"{history}: room {room}")


def earlier_runs(rows, now: datetime) -> tuple[list[float], int | None]:
    """Each earlier run's total kept Δ (oldest first), and the days since the last one started.

    ``rows``: results.tsv rows (anything with ``status``, ``delta`` and ``timestamp``), oldest first.
    """
    totals: list[float] = []
    last_start = None
    for row in rows:
        if row.status == "baseline":
            totals.append(0.0)
            last_start = row.timestamp
        elif row.status == "keep" and totals:
            totals[-1] = round(totals[-1] + (row.delta or 0), 1)
    try:
        days = (now - datetime.fromisoformat(last_start)).days if last_start else None
    except (TypeError, ValueError):  # a hand-edited timestamp: the estimate just omits the age
        days = None
    return totals, days
