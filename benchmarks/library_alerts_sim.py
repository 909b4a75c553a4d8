"""The library's outcome check and its escalation ladder alone, on simulated libraries whose truth is known.

Usage (from a clean clone): .venv/bin/python benchmarks/library_alerts_sim.py [--libraries 400] [--runs 20]

Each library has ``--skills`` skills run ``--runs`` times; a skill-run makes 0–2 attempts, each kept, worse beyond
noise or undecided, in the shares the weekly benchmark's records show (tests/support/library_weeks.py's world, σ = 1
judges): healthy 34 % kept, 10 % worse, 1.6 attempts a skill-run; a proposer turned bad (from ``--change``) keeps
2 %, makes 50 % worse, and gets 1.2 attempts a skill-run for three runs, then 0.4 as the ROI precheck rests skills
that kept nothing three runs running — 1.2 again while the outcome alert is open, which stops those rests.
``scoring.governance.library_alerts.check_library`` and ``escalation.advance`` decide exactly as the flow does.

Printed with 95 % Wilson intervals: steady libraries paused (a library pause holds every skill: a false alarm),
steady libraries with any firing, and for the bad proposer: libraries with a firing within 3 runs of the change,
and paused within 6 and by the end.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(1, str(ROOT))

import pandas as pd  # noqa: E402 - after the sys.path set-up above
from shared import rate  # noqa: E402 - as above

from scoring.governance.escalation import Escalation, advance, key  # noqa: E402 - as above
from scoring.governance.library_alerts import LIBRARY, check_library  # noqa: E402 - as above
from workspace.profile import PAUSE_RUNS  # noqa: E402 - as above

HEALTHY = (0.34, 0.10, 1.6)  # kept, worse, attempts a skill-run
BAD = (0.02, 0.50, 0.4)
BAD_WATCHED = (0.02, 0.50, 1.2)


def skill_run(rng: random.Random, skill: int, run: int, world: tuple[float, float, float]) -> dict:
    kept_share, worse_share, attempts_mean = world
    attempts = sum(rng.random() < attempts_mean / 2 for _ in range(2))
    keeps = worse = 0
    for _ in range(attempts):
        draw = rng.random()
        keeps += draw < kept_share
        worse += kept_share <= draw < kept_share + worse_share
    return {"skill": f"s{skill}", "started": f"2026-01-01T{run:02d}:00:{skill:02d}", "attempts": attempts,
            "keeps": keeps, "worse": worse, "shift": float("nan"), "sha": "", "baseline": float("nan")}


def one_library(rng: random.Random, skills: int, runs: int, change: int | None) -> list[str]:
    """Each run's action on the library's outcome counter ("" when nothing happened)."""
    rows: list[dict] = []
    counters: dict[str, Escalation] = {}
    actions = []
    pause_left = 0  # workspace/holds.py: a pause holds for PAUSE_RUNS runs, measured, not edited
    for run in range(runs):
        if rows:  # Phase 0 reads the records before this run
            metrics = pd.DataFrame(rows)
            alerts = check_library(metrics, counters)
            outcome = alerts[0]
            state, action = counters.get("edit_outcomes", Escalation()), ""
            if outcome.active and state.seen != outcome.run:
                state, action = advance(state, outcome.fired, outcome.run, outcome.history_until)
                counters["edit_outcomes"] = state
            actions.append(action if action in ("record", "pause", "freeze") else "")
        else:
            actions.append("")
        pause_left = PAUSE_RUNS if actions[-1] == "pause" else max(0, pause_left - 1)
        paused = pause_left > 0
        bad = change is not None and run >= change
        resting = change is not None and run >= change + 3 and not counters.get("edit_outcomes", Escalation()).count
        world = (BAD if resting else BAD_WATCHED) if bad else HEALTHY
        for skill in range(skills):
            rows.append(skill_run(rng, skill, run, (0, 0, 0) if paused else world))
    return actions


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--libraries", type=int, default=400)
    options.add_argument("--runs", type=int, default=20)
    options.add_argument("--skills", type=int, default=5)
    options.add_argument("--change", type=int, default=10)
    options.add_argument("--seed", type=int, default=7)
    args = options.parse_args()
    rng = random.Random(args.seed)
    steady = [one_library(rng, args.skills, args.runs, None) for _ in range(args.libraries)]
    bad = [one_library(rng, args.skills, args.runs, args.change) for _ in range(args.libraries)]
    n = args.libraries
    after = args.change + 1  # a change in run c shows first in run c + 1's Phase 0
    print(f"{n} libraries × {args.runs} runs × {args.skills} skills, change at run {args.change}, seed {args.seed}; "
          f"counter {key('edit_outcomes', LIBRARY)}")
    print("steady  paused at least once ", rate(sum("pause" in a for a in steady), n))
    print("steady  any firing           ", rate(sum(any(a) for a in steady), n))
    print("bad     fired within 3 runs  ", rate(sum(any(a[after:after + 3]) for a in bad), n))
    print("bad     paused within 6 runs ", rate(sum("pause" in a[after:after + 6] for a in bad), n))
    print("bad     paused by the end    ", rate(sum("pause" in a[after:] for a in bad), n))


if __name__ == "__main__":
    main()
