"""Through the real flow (offline, fast), three runs: a pause is served (measured, not edited) and ends, a timed
freeze ends, a run started on an earlier run's unmerged branch says so, and merged run branches are deleted."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from flows.optimize import optimize_skills
from tests.support.repos import GIT_IDENTITY, commit_all
from workspace import profile
from workspace.results_tsv import ResultsFile

pytestmark = pytest.mark.usefixtures("prefect_api")

SKILLS = ("pr-review", "api-changelog", "db-migration")


def run(skills: Path) -> dict:
    result = optimize_skills(skills_dir=str(skills), skills=list(SKILLS), mode="full", approval="auto", max_rounds=1)
    assert isinstance(result, dict), result
    return result


def test_holds_end_by_themselves_and_run_branches_are_handed_off_stacked_and_cleaned(example_skills: Path):
    repo = commit_all(example_skills)
    path = example_skills.parent / "luban-workspace" / "luban-profile.json"
    path.parent.mkdir()

    def held(p: profile.LubanProfile) -> None:
        p.paused["db-migration"] = profile.PausedSkill(reason="alert edit_outcomes (library) fired 3 times", since="t")
        p.frozen["api-changelog"] = profile.FrozenSkill(reason="extreme overfitting (Step D)", since="t", runs_left=2)

    profile.update(path, held)
    first = run(example_skills)  # pr-review gets offline fixes: a branch to hand off
    assert first["branch"] and first["handoff"]["base"] == "main" and first["handoff"]["files"], first["handoff"]
    second = run(example_skills)  # still on the first run's branch: it builds on it, and says so
    assert any(f"starts from {first['branch']}, an earlier run's branch" in n for n in second["notices"])
    assert second["handoff"]["base"] == first["branch"]
    assert first["branch"] in {h.name for h in repo.heads}  # where it started: kept, whatever minute either began in
    repo.git.checkout("main")  # the maintainer merges what the runs left, then starts the next one from main
    repo.git.merge("--no-ff", "-m", "merge", second["branch"] or first["branch"], env=GIT_IDENTITY)
    third = run(example_skills)
    deleted = next(n for n in third["notices"] if n.startswith("deleted ")).split(": ", 1)[1].split(", ")
    merged = {first["branch"], second["branch"]} - {None}
    assert merged <= set(deleted) and {h.name for h in repo.heads} <= {"main", third["branch"]}, deleted

    rows = ResultsFile(example_skills.parent / "luban-workspace" / "full" / "db-migration" / "results.tsv").rows()
    paused = [r for r in rows if r.stop == "paused"]
    assert len(paused) == 2 and all(r.status == "skip" for r in paused)  # measured (a baseline each), not edited
    assert [r.status for r in rows].count("baseline") == 3 and "db-migration" in third["skills"]
    assert any("db-migration: pause over" in n for n in third["notices"])
    assert "api-changelog" not in first["skills"] and "api-changelog" not in second["skills"]
    assert any("api-changelog: freeze over" in n for n in second["notices"])
    assert "api-changelog" in third["skills"] and profile.load(path).frozen == {} and profile.load(path).paused == {}
    assert git.Repo(example_skills).active_branch.name in ("main", third["branch"])
