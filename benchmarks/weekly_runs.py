"""A library run every week: false alarms in a world where nothing changes, detection in one where something does.

Usage (from a clean clone): make bench-weekly
    or: .venv/bin/python benchmarks/weekly_runs.py [--weeks 20] [--skills 5] [--rounds 2] [--seeds 11,12] [--sigma 1]

The real ``optimize-skills`` flow (full mode, approval auto) runs ``--weeks`` times on a library of ``--skills``
skills in a git repository, against a loopback model server (tests/support/noisy_world.py) whose judges are noisy
(σ per call) and whose proposer is steady: 45 % neutral, 35 % helpful, 20 % harmful edits. After every run a
maintainer merges the run's branch into ``main`` and checks ``main`` out (tests/support/library_weeks.py).

Three worlds per seed:
- ``steady``: nothing changes, so every alert that escalates is a false alarm;
- ``bad proposer``: from week ``--change`` on, 80 % of the proposals are harmful;
- ``judge drift``: from week ``--change`` on, every judged score reads 1.5 points high.

Printed per world, with 95 % Wilson intervals and the counts behind them: the skill-weeks that escalated (pause or
freeze) before any change, skills frozen and paused at the end, skills with an alert within 3 weeks of the change,
skills paused by the change, guards, edits kept per week, and run branches left.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(1, str(ROOT))

from shared import harness_environment, per_event, rate  # noqa: E402 - after the sys.path set-up above

from tests.support.library_weeks import LLM, Week, World, describe, run_weeks, write_library  # noqa: E402 - as above


def one_world(world: World, weeks: int, skills: int, rounds: int, verbose: bool) -> tuple[list[Week], list[str]]:
    from flows.optimize import optimize_skills

    def run(skills_dir: Path, base_url: str) -> dict:
        return optimize_skills(skills_dir=str(skills_dir), mode="full", approval="auto", max_rounds=rounds,
                               llm=LLM | {"base_url": base_url})

    with tempfile.TemporaryDirectory(prefix="luban-weeks-") as scratch:
        skills_dir = Path(scratch) / "skills"
        names = write_library(skills_dir, skills, world.seed)
        return run_weeks(skills_dir, weeks, world, run, after=(lambda w: print("   ", describe(w), flush=True)) if verbose
                         else (lambda w: None)), names


def fired(week: Week, library: list[str], actions: tuple[str, ...]) -> set[str]:
    """Skills a week's escalating alerts took one of ``actions`` on (a library alert: every skill of the library)."""
    found: set[str] = set()
    for line in week.alerts:
        who, action = line.split(" for ", 1)[1].split(": ", 1)
        if action.startswith(actions):
            found |= set(library) if who == "the library" else {who}
    return found


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--weeks", type=int, default=20)
    options.add_argument("--skills", type=int, default=5)
    options.add_argument("--rounds", type=int, default=2)
    options.add_argument("--seeds", default="11")
    options.add_argument("--sigma", type=float, default=1.0)
    options.add_argument("--change", type=int, default=10, help="the week the changed worlds change")
    options.add_argument("--worlds", default="steady,bad,drift")
    options.add_argument("--verbose", action="store_true")
    args = options.parse_args()
    harness_environment("luban-weeks-prefect-")
    from prefect.testing.utilities import prefect_test_harness

    print(f"{args.weeks} weeks × {args.skills} skills × ≤ {args.rounds} rounds, σ {args.sigma:g}, seeds {args.seeds}, "
          f"change at week {args.change}; python {sys.version.split()[0]}, {os.cpu_count()} cores")
    with prefect_test_harness(server_startup_timeout=120):
        for kind in args.worlds.split(","):
            started = time.perf_counter()
            quiet_weeks = false_escalations = frozen = paused = detected = paused_by_change = changed = 0
            kept, guards, branches, total_weeks = 0, 0, 0, 0
            for seed in (int(s) for s in args.seeds.split(",")):
                world = World(args.sigma, seed, bad_from=args.change if kind == "bad" else None,
                              drift_from=args.change if kind == "drift" else None)
                weeks, names = one_world(world, args.weeks, args.skills, args.rounds, args.verbose)
                # a week's alerts read the weeks before it: the change shows from the week after it on
                before = [w for w in weeks if not world.changed(w.number - 1)]
                after = [w for w in weeks if world.changed(w.number - 1)]
                quiet_weeks += len(before) * args.skills
                false_escalations += sum(len(fired(w, names, ("pause", "freeze"))) for w in before)
                last = weeks[-1].profile
                frozen += len(last.get("frozen", {}))
                paused += len(last.get("paused", {}))
                if after:
                    changed += args.skills
                    detected += len(set().union(*(fired(w, names, ("record", "pause", "freeze")) for w in after[:3])))
                    paused_by_change += len(set().union(*(fired(w, names, ("pause", "freeze")) for w in after)))
                kept += sum(w.kept for w in weeks)
                guards += len(last.get("oscillation_guard", []))
                branches += len(weeks[-1].branches)
                total_weeks += len(weeks)
            print(f"{kind:<6} skill-weeks paused or frozen before any change {rate(false_escalations, quiet_weeks)}; at the end frozen "
                  f"{frozen}, paused {paused}, guards {guards}, run branches left {branches}; kept {kept / total_weeks:.2f} "
                  f"edits a week", flush=True)
            print(f"       {per_event(false_escalations, quiet_weeks)} (goal: ≥ 200)", flush=True)
            if changed:
                print(f"       skills alerted within 3 runs of the change {rate(detected, changed)}; paused by it "
                      f"{rate(paused_by_change, changed)}", flush=True)
            print(f"       {time.perf_counter() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
