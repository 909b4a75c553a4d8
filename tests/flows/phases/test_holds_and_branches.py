"""Through the real flow (offline, fast): a pause is served and ends, a timed freeze ends, a run started on an earlier
run's branch says so, and merged run branches are deleted by the run after."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from flows.optimize import optimize_skills
from tests.support.repos import GIT_IDENTITY, commit_all
from workspace import profile
from workspace.results_tsv import ResultsFile

pytestmark = pytest.mark.usefixtures("prefect_api")


def run(skills: Path, *names: str) -> dict:
    result = optimize_skills(skills_dir=str(skills), skills=list(names), mode="full", approval="auto", max_rounds=1)
    assert isinstance(result, dict), result
    return result


def test_a_pause_is_measured_for_two_runs_and_a_timed_freeze_ends(example_skills: Path):
    commit_all(example_skills)
    path = example_skills.parent / "luban-workspace" / "luban-profile.json"
    path.parent.mkdir()

    def held(p: profile.LubanProfile) -> None:
        p.paused["pr-review"] = profile.PausedSkill(reason="alert edit_outcomes (library) fired 3 times", since="t")
        p.frozen["api-changelog"] = profile.FrozenSkill(reason="extreme overfitting (Step D)", since="t", runs_left=2)

    profile.update(path, held)
    results = []
    for _ in range(3):  # each run from main, as a maintainer who reviews the branch later leaves it
        results.append(run(example_skills, "pr-review", "api-changelog"))
        git.Repo(example_skills).git.checkout("main")
    rows = ResultsFile(example_skills.parent / "luban-workspace" / "full" / "pr-review" / "results.tsv").rows()
    paused = [r for r in rows if r.stop == "paused"]
    assert len(paused) == 2 and all(r.status == "skip" for r in paused)  # measured (a baseline each), not edited
    assert [r.status for r in rows].count("baseline") == 3 and "pr-review" in results[2]["skills"]
    assert any("pr-review: pause over" in n for n in results[2]["notices"])
    assert "api-changelog" not in results[0]["skills"] and "api-changelog" not in results[1]["skills"]
    assert any("api-changelog: freeze over" in n for n in results[1]["notices"])
    assert "api-changelog" in results[2]["skills"] and profile.load(path).frozen == {} and profile.load(path).paused == {}


def test_a_run_on_an_earlier_runs_branch_says_so_and_merged_run_branches_are_deleted(example_skills: Path):
    repo = commit_all(example_skills)
    first = run(example_skills, "pr-review")
    assert first["branch"] and first["handoff"]["base"] == "main" and first["handoff"]["files"]  # offline fixes kept
    second = run(example_skills, "pr-review")  # still on the first run's branch: stacked on it, and said
    assert any(f"starts from {first['branch']}, an earlier run's branch" in n for n in second["notices"])
    assert second["handoff"]["base"] == first["branch"]
    repo.git.checkout("main")
    repo.git.merge("--no-ff", "-m", "merge", second["branch"] or first["branch"], env=GIT_IDENTITY)
    third = run(example_skills, "pr-review")
    deleted = next(n for n in third["notices"] if n.startswith("deleted "))
    assert first["branch"] in deleted and {h.name for h in repo.heads} <= {"main", third["branch"]}
