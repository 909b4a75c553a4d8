"""A library run week after week through the real flow, against a noisy loopback world whose truth is known.

In a world where nothing changes, every alert that escalates is a false alarm: Luban must go on improving the
library run after run, never freezing it by its own records. A world whose proposer turns bad is
tests/flows/test_library_alert_flow.py's; the long version, with rates and intervals over more weeks and seeds, is
benchmarks/weekly_runs.py.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import git
import pytest
from typer.testing import CliRunner

from flows.cli import app
from tests.support.library_weeks import LLM, Week, World, describe, run_weeks, write_library
from workspace import profile

pytestmark = [pytest.mark.usefixtures("prefect_api"), pytest.mark.slow]

SKILLS, ROUNDS = 2, 2


def optimize(skills_dir: Path, base_url: str) -> dict:
    from flows.optimize import optimize_skills

    result = optimize_skills(skills_dir=str(skills_dir), mode="full", approval="auto", max_rounds=ROUNDS,
                             llm=LLM | {"base_url": base_url})
    assert isinstance(result, dict), result  # a Failed state is a run that did not end well
    return result


STEADY = 9  # weeks of a world where nothing changes (the benchmark runs twenty, over seeds)


def test_steady_weeks_keep_improving_and_never_freeze(tmp_path: Path):
    """One library, nine runs in a steady noisy world: every escalation is a false alarm. A world that changes is
    tests/flows/test_library_alert_flow.py's; the rates over more weeks and seeds are benchmarks/weekly_runs.py's."""
    skills_dir = tmp_path / "skills"
    write_library(skills_dir, SKILLS, seed=11)
    profile_path = tmp_path / "luban-workspace" / "luban-profile.json"
    lifted: list[str] = []

    def maintainer(week: Week) -> None:
        if week.number == 1:  # a freeze and its counter, as five escalations would leave them; a person lifts it
            def freeze(p: profile.LubanProfile) -> None:
                p.frozen["skill-1"] = profile.FrozenSkill(reason="alert revert_rate escalated 5 times", since="t")
                p.alert_counters["revert_rate|skill-1"] = {"count": 5, "frozen": True, "seen": "long ago"}

            profile.update(profile_path, freeze)
            said = CliRunner().invoke(app, ["lift", "skill-1", "--skills-dir", str(skills_dir)])
            lifted.append(said.output)

    # "text" noise: every text the judges read gets its own fixed error (a judge at temperature 0), so the world is
    # noisy — each sample is a null variant of the text, read differently — and yet the same on every run of the
    # test, whatever order concurrent calls arrive in (per-call noise drawn in arrival order is not)
    world = World(sigma=1.0, seed=11, noise="text")
    weeks = steady = run_weeks(skills_dir, STEADY, world, optimize, after=maintainer)
    story = "\n".join(describe(w) for w in weeks)
    assert "lifted skill-1: freeze" in lifted[0] and "alert counters reset" in lifted[0], lifted
    assert "skill-1" in weeks[2].attempted, story  # the lift stuck: not frozen again by the counter it reset
    escalated = [a for w in steady for a in w.alerts if a.split(": ", 1)[1].startswith(("pause", "freeze"))]
    assert escalated == [], story
    held = steady[-1].profile
    assert held.get("frozen") == {} and len(held.get("paused", {})) <= 1, story
    # an oscillation guard is a false alarm here too: rare, and over when its term is (it holds diagnosis off one
    # dimension of one skill for GUARD_RUNS of that skill's runs); the rate is benchmarks/weekly_runs.py's
    guards: dict[tuple[str, str], list[int]] = {}
    for week in steady:
        for guard in week.profile.get("oscillation_guard", []):
            if set(guard["skills"]) & set(week.attempted):
                guards.setdefault((guard["dim"], guard["since"]), []).append(week.number)
    assert len(guards) <= 1 and all(len(w) <= profile.GUARD_RUNS + 1 for w in guards.values()), (guards, story)
    assert all(w.started_on == "main" for w in weeks), story
    assert all((w.summary["handoff"] or {}).get("base") == "main" for w in weeks), story
    assert all(len(w.branches) <= 1 for w in weeks), story  # the merged one, until the next run deletes it
    assert sum(w.kept for w in steady[STEADY // 2:]) > 0, story  # still improving in the second half
    # a skill that kept nothing three attempted runs running rests one run (the ROI precheck): with two skills both may
    # rest the same week, but a rest expires — the library is never idle two weeks running
    assert all(a.attempted or b.attempted for a, b in itertools.pairwise(steady)), story
    assert all(w.summary["branch"] is None and w.merged is None for w in weeks if w.kept == 0), story
    library = [a for w in steady for a in w.alerts if a.startswith("edit_outcomes for the library")]
    assert len(library) <= 1, story  # a false alarm of the library's check is a record at most
    assert git.Repo(skills_dir).active_branch.name == "main"
