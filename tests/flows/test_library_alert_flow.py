"""A library whose proposer turns bad, through the real flow: the library's alert fires on the first run's attempts,
confirms on each run after it, and pauses every skill when the change persists — measured, not edited.

The healthy weeks before the change are written as records (what steady runs would leave: tests/flows/
test_many_runs.py runs those for real), so the suite pays only for the runs after it. How often this happens for a
subtler bad proposer, over many libraries and seeds, is benchmarks/weekly_runs.py's to say.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.library_weeks import LLM, World, describe, run_weeks, write_library
from workspace.results_tsv import ResultRow, ResultsFile

pytestmark = [pytest.mark.usefixtures("prefect_api"), pytest.mark.slow]

SKILLS, HEALTHY_WEEKS = 3, 6
# each healthy week: a baseline and two attempts per skill, cycling through these outcomes — 42 % kept and 8 % worse
# beyond noise, about what the steady world of benchmarks/weekly_runs.py keeps and loses
OUTCOMES = (("keep", "keep"), ("keep", "inconclusive"), ("inconclusive", "inconclusive"), ("keep", "inconclusive"),
            ("inconclusive", "revert"), ("keep", "inconclusive"))


def healthy_records(workspace: Path, names: list[str]) -> None:
    """Six weeks of a healthy library's rows in full mode, a day apart, long before today's runs."""
    for number, name in enumerate(names):
        rows = ResultsFile(workspace / "full" / name / "results.tsv")
        rows.ensure()
        for week in range(HEALTHY_WEEKS):
            stamp = f"2026-01-{week + 1:02d}T10:0{number}"
            rows.append(ResultRow(f"{stamp}:00+00:00", name, 0, "baseline", "full", new_score=70.0 + week,
                                  note="sha=000000000000; baseline"))
            for round_no, verdict in enumerate(OUTCOMES[(week + number) % len(OUTCOMES)], start=1):
                kept = verdict == "keep"
                rows.append(ResultRow(f"{stamp}:{round_no:02d}+00:00", name, round_no, "keep" if kept else "revert",
                                      "full", old_score=70.0, new_score=71.0 if kept else 70.0, delta=1.0 if kept else 0.0,
                                      dim_changed="dim5", edit_pct=3.0, note="strategy=llm",
                                      evidence={"verdict": verdict, "basis": "dim5" if kept else None}))


def test_a_proposer_that_turns_bad_is_alerted_then_confirmed_then_pauses_the_library(tmp_path: Path):
    from flows.optimize import optimize_skills

    skills_dir = tmp_path / "skills"
    names = write_library(skills_dir, SKILLS, seed=11)
    healthy_records(tmp_path / "luban-workspace", names)

    def optimize(folder: Path, base_url: str) -> dict:
        result = optimize_skills(skills_dir=str(folder), mode="full", approval="auto", max_rounds=2,
                                 llm=LLM | {"base_url": base_url})
        assert isinstance(result, dict), result
        return result

    # every proposal now damages the skill (−3 true points on one dimension); "text" noise: reproducible judges
    world = World(sigma=1.0, seed=11, bad_from=0, noise="text", bad=("damaging",))
    weeks = run_weeks(skills_dir, 5, world, optimize)
    story = "\n".join(describe(w) for w in weeks)
    library = [[a.split(" (")[0] for a in w.alerts if a.startswith("edit_outcomes for the library")] for w in weeks]
    assert library[0] == [], story  # the healthy records alone: nothing to see
    first = next((i for i, found in enumerate(library) if found), len(weeks))
    assert first <= 2, story  # seen on the first bad runs' attempts (a window of three, or of six)
    assert library[first:first + 3] == [["edit_outcomes for the library: record"]] * 2 + [
        ["edit_outcomes for the library: pause"]], story  # confirmed on the attempts since each firing; the third pauses
    paused = weeks[first + 2]
    assert sorted(paused.profile.get("paused", {})) == names, story  # a library alert holds every skill
    assert paused.attempted == [] and paused.kept == 0, story  # paused: measured, not edited
    assert all(w.kept == 0 for w in weeks), story  # and the ratchet kept none of the damage meanwhile
