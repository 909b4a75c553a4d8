"""ROI precheck (Phase 0): skip what is near its ceiling, and say how much room is left.

A skill whose last three attempted runs kept nothing rests: it is skipped for ``REST_RUNS`` runs, then tried again
(a run that skipped it attempted nothing, so it neither adds to nor resets the three). Without the rest, the skip's
own baseline row made the next run "stuck" again and the skill was never tried again.

"Kept nothing", not the design's "gained under a point each": every kept edit already cleared the judges' noise,
while under σ = 1 judges and two rounds a run a healthy skill gains under a point in most runs — that rule rested
the library of the weekly test for good by its sixth run (tests/flows/test_many_runs.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class RoiCheck:
    decision: str  # "skip" | "recommend_skip" | "optimize"
    room: str  # "low" | "medium" | "high"
    reason: str
    estimate: str


REST_RUNS = 3


def roi_precheck(baseline_total: float, lowest_dim: float, run_deltas: list[float],
                 days_since_last: int | None, rested: int = 0, watched: bool = False) -> RoiCheck:
    """``run_deltas``: the total Δ of each earlier run of this skill that attempted an edit, oldest first;
    ``rested``: the runs since the last of them that attempted nothing; ``watched``: the library's outcome alert
    is open, and asks whether its change persists — keeping nothing is what it watches, so no rest."""
    times = len(run_deltas)
    if times:
        last = run_deltas[-1]
        ago = f", {days_since_last} days ago" if days_since_last is not None else ""
        history = f"optimized {times} time(s), last {last:+.1f}{ago}"
    else:
        history = "never optimized"
    stuck = times >= 3 and all(d <= 0 for d in run_deltas[-3:]) and rested < REST_RUNS
    if stuck and watched:
        history += "; kept nothing in three runs, tried anyway: the library's outcome alert is watching"
        stuck = False
    if baseline_total >= 85 and lowest_dim >= 7:
        room = "low"
        decision, reason = "skip", f"ceiling is near: baseline {baseline_total} ≥ 85 and lowest dimension {lowest_dim:g} ≥ 7"
    elif stuck:
        room = "low"
        decision, reason = "recommend_skip", (f"the last three runs kept no edit (rests {REST_RUNS - rested} more run(s), "
                                              "then is tried again)")
    else:
        room = "high" if baseline_total < 70 else "medium"
        decision, reason = "optimize", f"baseline {baseline_total}, lowest dimension {lowest_dim:g}"
    return RoiCheck(decision, room, reason, f"{history}: room {room}")


def earlier_runs(rows, now: datetime) -> tuple[list[float], int | None, int]:
    """Each earlier run's total kept Δ (oldest first; runs that attempted an edit only), the days since the last run
    started, and how many runs since the last attempted one attempted nothing.

    ``rows``: results.tsv rows (anything with ``status``, ``delta`` and ``timestamp``), oldest first.
    """
    runs: list[list[float]] = []  # per run: each attempt's kept Δ (0 for a revert)
    attempted: list[bool] = []
    last_start = None
    for row in rows:
        if row.status == "baseline":
            runs.append([])
            attempted.append(False)
            last_start = row.timestamp
        elif row.status in ("keep", "revert") and runs:
            attempted[-1] = True
            runs[-1].append((row.delta or 0.0) if row.status == "keep" else 0.0)
    totals = [round(sum(kept), 1) for kept, tried in zip(runs, attempted, strict=True) if tried]
    rested = len(attempted) - 1 - max((i for i, tried in enumerate(attempted) if tried), default=len(attempted) - 1)
    try:
        days = (now - datetime.fromisoformat(last_start)).days if last_start else None
    except (TypeError, ValueError):  # a hand-edited timestamp: the estimate just omits the age
        days = None
    return totals, days, rested
