"""--resume after a stop: the run's branch is reused, an undecided edit is rolled back, nothing is repeated or lost."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from flows.optimize import optimize_skills
from scoring.notes import parse_note
from workspace import rejected_edits
from workspace.results_tsv import ResultsFile

pytestmark = pytest.mark.usefixtures("prefect_api")


def test_resume_continues_from_the_last_recorded_round(example_skills: Path):
    first = optimize_skills(skills_dir=str(example_skills), skills=["pr-review"], mode="full", approval="auto",
                            init_git=True, max_rounds=1)
    repo = git.Repo(example_skills)
    branch = repo.active_branch.name
    skill_file = example_skills / "pr-review" / "SKILL.md"
    kept_text = skill_file.read_text()
    skill_file.write_text(kept_text + "\nhalf-applied edit from a crashed run\n")  # applied, never scored
    workspace = example_skills.parent / "luban-workspace" / "full" / "pr-review"
    buffer_before = rejected_edits.load(workspace / "rejected_edits.md", "pr-review", "").entries

    second = optimize_skills(skills_dir=str(example_skills), skills=["pr-review"], mode="full", approval="auto",
                             resume=True, max_rounds=4)
    assert repo.active_branch.name == branch == second["branch"] == first["branch"]
    assert any("never scored was rolled back" in n for n in second["notices"])
    assert "half-applied" not in skill_file.read_text() and repo.git.status("--porcelain") == ""
    rows = ResultsFile(workspace / "results.tsv").rows()
    assert [r.status for r in rows].count("baseline") == 1  # the recorded baseline was kept, not redone
    rounds = [r.round for r in rows if r.status != "baseline"]
    assert rounds == sorted(rounds) and rounds[0] == 1 and max(rounds) > 1
    strategies = [parse_note(r.note)[0].get("strategy") for r in rows if r.status == "keep"]
    assert len(strategies) == len(set(strategies))  # no kept edit was proposed twice
    buffer_after = rejected_edits.load(workspace / "rejected_edits.md", "pr-review", "").entries
    assert buffer_after[: len(buffer_before)] == buffer_before  # no rejected edit was lost
    assert second["skills"]["pr-review"]["before"] == first["skills"]["pr-review"]["before"]


def test_resume_with_nothing_recorded_starts_afresh_and_says_so(example_skills: Path):
    """A run killed before it recorded anything leaves nothing to continue: --resume makes the run a start would."""
    result = optimize_skills(skills_dir=str(example_skills), skills=["pr-review"], mode="quick", approval="auto", resume=True)
    assert any("nothing was recorded" in n and "started afresh" in n for n in result["notices"])
    rows = ResultsFile(example_skills.parent / "luban-workspace" / "quick" / "pr-review" / "results.tsv").rows()
    assert rows[0].status == "baseline" and rows[0].round == 0


def test_resume_on_the_wrong_branch_names_the_runs_branch(example_skills: Path):
    first = optimize_skills(skills_dir=str(example_skills), skills=["pr-review"], mode="full", approval="auto",
                            init_git=True, max_rounds=1)
    repo = git.Repo(example_skills)
    repo.git.checkout("-")  # back on the branch the run started from
    result = optimize_skills(skills_dir=str(example_skills), skills=["pr-review"], mode="full", approval="auto",
                             resume=True, return_state=True)
    assert result.is_failed() and f"git switch {first['branch']}" in result.message
