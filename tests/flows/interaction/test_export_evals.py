"""`luban export-evals`: the prompts Luban designed, written as the skill's evals/evals.json on request."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from flows.cli import app
from tests.conftest import write_skill
from workspace import test_prompts
from workspace.author_evals import read_cases
from workspace.layout import Mode, Workspace
from workspace.test_prompts import TestPrompt

DESIGNED = [TestPrompt(id=1, type="main", prompt="review my PR", expected="a review"),
            TestPrompt(id=2, type="edge", prompt="review a 3000-line PR", expected="asks to split", held_out=True)]


def test_designed_prompts_become_the_skills_evals_and_the_authors_file_is_never_overwritten(tmp_path: Path):
    skills = tmp_path / "skills"
    write_skill(skills, "pr-review", "---\nname: pr-review\ndescription: d\n---\n# PR review\n")
    runner = CliRunner()
    missing = runner.invoke(app, ["export-evals", "pr-review", "--skills-dir", str(skills)])
    assert missing.exit_code == 2 and "run 'luban optimize' first" in missing.output
    workspace = Workspace.open(skills, Mode("full"))
    workspace.skill_state("pr-review").mkdir(parents=True)
    test_prompts.save(workspace.test_prompts("pr-review"), DESIGNED)
    done = runner.invoke(app, ["export-evals", "pr-review", "--skills-dir", str(skills)])
    assert done.exit_code == 0, done.output
    cases = read_cases(skills / "pr-review")
    assert cases is not None and [c.prompt for c in cases] == ["review my PR", "review a 3000-line PR"]
    evals = skills / "pr-review" / "evals" / "evals.json"
    before = evals.read_bytes()
    again = runner.invoke(app, ["export-evals", "pr-review", "--skills-dir", str(skills)])
    assert again.exit_code == 2 and "never overwritten" in again.output and evals.read_bytes() == before
    assert json.loads(before)["skill_name"] == "pr-review"
