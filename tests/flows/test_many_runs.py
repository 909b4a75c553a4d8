"""A library run week after week through the real flow, against a noisy loopback world whose truth is known.

In a world where nothing changes, every alert that escalates is a false alarm: Luban must go on improving the
library run after run, never freezing it by its own records. In a world whose proposer turns bad, the alerts must
see it. The long version, with rates and intervals over more weeks and seeds, is benchmarks/weekly_runs.py.
"""

from __future__ import annotations

from pathlib import Path

import git
import pytest
from typer.testing import CliRunner

from flows.cli import app
from tests.support.library_weeks import LLM, Week, World, describe, run_weeks, write_library
from workspace import profile

pytestmark = pytest.mark.usefixtures("prefect_api")

SKILLS, ROUNDS = 4, 2


def optimize(skills_dir: Path, base_url: str) -> dict:
    from flows.optimize import optimize_skills

    result = optimize_skills(skills_dir=str(skills_dir), mode="full", approval="auto", max_rounds=ROUNDS,
                             llm=LLM | {"base_url": base_url})
    assert isinstance(result, dict), result  # a Failed state is a run that did not end well
    return result


def test_twelve_weeks_of_a_steady_noisy_world_keep_improving_and_never_freeze(tmp_path: Path):
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

    weeks = run_weeks(skills_dir, 12, World(sigma=1.0, seed=11), optimize, after=maintainer)
    story = "\n".join(describe(w) for w in weeks)
    assert "lifted skill-1: freeze" in lifted[0] and "alert counters reset" in lifted[0], lifted
    assert "skill-1" in weeks[2].attempted, story  # the lift stuck: not frozen again by the counter it reset
    last = profile.load(profile_path)
    assert last.frozen == {} and len(last.paused) <= 1 and last.oscillation_guard == [], story
    escalated = [a for w in weeks for a in w.alerts if a.split(": ", 1)[1].startswith(("pause", "freeze"))]
    assert escalated == [], story
    assert all(w.started_on == "main" for w in weeks), story
    assert all((w.summary["handoff"] or {}).get("base") == "main" for w in weeks), story
    assert all(len(w.branches) <= 1 for w in weeks), story  # the merged one, until the next run deletes it
    assert sum(w.kept for w in weeks[6:]) > 0, story  # still improving in the second half
    assert all(len(w.attempted) > 0 for w in weeks), story  # never everything resting at once
    kept_nothing = [w for w in weeks if w.kept == 0]
    assert all(w.summary["branch"] is None and w.merged is None for w in kept_nothing), story


def test_a_proposer_that_turns_bad_is_seen_by_the_alerts(tmp_path: Path):
    """From week 3 on, four proposals in five are harmful. The alert reads each week's records at the next week's
    Phase 0; how soon it fires over many seeds, with its interval, is benchmarks/weekly_runs.py's to say."""
    skills_dir = tmp_path / "skills"
    write_library(skills_dir, SKILLS, seed=11)
    change = 3
    weeks = run_weeks(skills_dir, change + 5, World(sigma=1.0, seed=11, bad_from=change), optimize)
    story = "\n".join(describe(w) for w in weeks)
    before = [a for w in weeks[:change + 1] for a in w.alerts if "edit_outcomes" in a and ": note" not in a]
    after = [a for w in weeks[change + 1:] for a in w.alerts if "edit_outcomes for the library: record" in a]
    assert before == [] and after, story
    assert sum(w.kept for w in weeks[change:]) <= 1, story  # meanwhile the ratchet itself kept (almost) nothing bad
    assert git.Repo(skills_dir).active_branch.name == "main"
