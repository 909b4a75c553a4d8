"""Edits with substance, online: keywords without content are not kept, content the judges see is, and the same
block is not pasted into a second skill of the batch."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.optimize import optimize_skills
from tests.support.noisy_llm import NoisyJudges
from tests.support.openai_server import ScriptedOpenAI
from workspace.results_tsv import ResultsFile

pytestmark = pytest.mark.usefixtures("prefect_api")

LLM = {"judge_model": "judge-a", "target_model": "target-m", "editor_model": "editor-e", "max_retries": 0}
STUFFING = "- Never skip a step.\n- Do not guess at anything.\n- Avoid shortcuts of any kind."
CONTENT = "Run the tests locally; paste each failing test name and its command in the review."


def run(skills: Path, judges: NoisyJudges, monkeypatch, names: list[str], rounds: int = 1) -> dict:
    server = ScriptedOpenAI()
    server.responder = judges
    with server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-luban-substance-0001")
        return optimize_skills(skills_dir=str(skills), skills=names, mode="full", approval="auto", init_git=True,
                               max_rounds=rounds, llm=LLM)


def rows(skills: Path, name: str):
    return [r for r in ResultsFile(skills.parent / "luban-workspace" / "full" / name / "results.tsv").rows()
            if r.status in ("keep", "revert")]


@pytest.mark.parametrize("judged_effect", [0.0, -1.0])
def test_keyword_stuffing_that_the_judges_do_not_rate_up_is_not_kept(example_skills: Path, monkeypatch, judged_effect):
    """Three 'never' lines lift dim9 from 3 to 10 by count alone; the judges see no gain (or a loss): not kept."""
    judges = NoisyJudges(sigma=0.0)
    judges.plant(STUFFING, "dim5", judged_effect)
    original = (example_skills / "pr-review" / "SKILL.md").read_text()
    run(example_skills, judges, monkeypatch, ["pr-review"])
    attempt = rows(example_skills, "pr-review")[0]
    assert attempt.status == "revert" and attempt.scores["dim9"] == 10  # the rule gain was there
    assert attempt.evidence["verdict"] == "revert"
    assert (example_skills / "pr-review" / "SKILL.md").read_text() == original


def test_content_the_judges_rate_up_is_kept(example_skills: Path, monkeypatch):
    judges = NoisyJudges(sigma=0.0)
    judges.plant(CONTENT, "dim5", +2.0)
    result = run(example_skills, judges, monkeypatch, ["pr-review"])
    keep = rows(example_skills, "pr-review")[0]
    assert keep.status == "keep" and keep.evidence["basis"] == "dim5"
    assert CONTENT in (example_skills / "pr-review" / "SKILL.md").read_text()
    report = Path(result["report"]).read_text()
    assert "```diff" in report and f"+{CONTENT}" in report  # the kept edit, as the lines it changed


def test_the_same_block_is_refused_in_a_second_skill_of_the_batch(example_skills: Path, monkeypatch):
    judges = NoisyJudges(sigma=0.0)
    judges.plant(CONTENT, "dim5", +2.0)  # proposed to every skill, and rated up in each
    result = run(example_skills, judges, monkeypatch, ["pr-review", "api-changelog"])
    got = [name for name in ("pr-review", "api-changelog") if CONTENT in (example_skills / name / "SKILL.md").read_text()]
    assert len(got) == 1  # the first skill optimized keeps it; the second is refused the same block
    other = "api-changelog" if got == ["pr-review"] else "pr-review"
    assert any(n.startswith(f"{other}: refused a proposed edit as") and "boilerplate" in n for n in result["notices"])
    assert "boilerplate" in Path(result["report"]).read_text()
