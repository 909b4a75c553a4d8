"""A skill's rounds in a thread of their own (--parallel): its own copy of every per-skill map, handed back in order."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from flows.state.config import RunConfig, RunOptions
from flows.state.effects import DirectEffects
from flows.state.run import Run
from judges.backend import OfflineBackend
from tests.support.repos import copy_examples
from workspace.layout import Mode, Workspace
from workspace.profile import LubanProfile

NOW = datetime(2026, 12, 5, 9, 0)


def evaluate_only_run(tmp_path: Path) -> Run:
    skills = copy_examples(tmp_path / "skills", "pr-review", "api-changelog")
    config = RunConfig(RunOptions(str(skills), ("pr-review", "api-changelog"), "quick", "auto"), Mode.QUICK)
    return Run(config, Workspace.open(skills, Mode.QUICK), None, OfflineBackend(), LubanProfile(), tmp_path / "runs", NOW,
               DirectEffects(), skills=["pr-review", "api-changelog"])


def test_a_skills_thread_changes_only_its_copy_until_joined_and_then_only_its_own_entries(tmp_path: Path):
    run = evaluate_only_run(tmp_path)
    card = OfflineBackend().evaluate(run.workspace.skill_file("pr-review").read_text(encoding="utf-8"), "pr-review",
                                     frozenset({"SKILL.md"}), Mode.QUICK, [])
    run.best["api-changelog"] = card
    run.asked["test-prompts"] = 1
    first, second = run.for_skill(), run.for_skill()
    first.best["pr-review"] = card
    del first.best["api-changelog"]  # another skill's entry: its loss must not come back
    first.ask("max-rounds-pr-review", "used all rounds")
    second.ask("max-rounds-api-changelog", "used all rounds")
    assert "pr-review" not in run.best and "max-rounds-pr-review" not in run.asked  # nothing shared before the join
    run.join(first, "pr-review")
    run.join(second, "api-changelog")
    assert run.best == {"api-changelog": card, "pr-review": card}
    assert run.asked == {"test-prompts": 1, "max-rounds-pr-review": 1, "max-rounds-api-changelog": 1}
    assert first.ledger is run.ledger and first.inserted is run.inserted and first.effects is run.effects  # run-wide


def test_notices_from_every_skills_thread_reach_the_run(tmp_path: Path):
    run = evaluate_only_run(tmp_path)
    run.for_skill().effects.notice("pr-review: refused a proposed edit as a duplicate")
    run.effects.notice("api-changelog: test prompts designed offline (no model)", "run stopped early: budget")
    assert run.effects.notices() == ("pr-review: refused a proposed edit as a duplicate",
                                     "api-changelog: test prompts designed offline (no model)", "run stopped early: budget")
