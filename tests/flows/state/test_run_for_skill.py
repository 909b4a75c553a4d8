"""A skill's work in a thread of its own (--parallel, Phase 1): its own copy of every per-skill map, handed back as
its state (``Run.part`` / ``Run.take``); checkpoint keys counted run-wide."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from flows.state.config import RunConfig, RunOptions
from flows.state.effects import DirectEffects, safe_default
from flows.state.measurements import DirectMeasurements
from flows.state.products import SkillState
from flows.state.run import Run
from judges.offline_backend import OfflineBackend
from tests.support.repos import copy_examples
from workspace.layout import Mode, Workspace
from workspace.results_tsv import Stop

NOW = datetime(2026, 12, 5, 9, 0)


def evaluate_only_run(tmp_path: Path) -> Run:
    skills = copy_examples(tmp_path / "skills", "pr-review", "api-changelog")
    config = RunConfig(RunOptions(str(skills), ("pr-review", "api-changelog"), "quick", "auto"), Mode.QUICK)
    return Run(config, Workspace.open(skills, Mode.QUICK), None, OfflineBackend(), tmp_path / "runs", NOW,
               DirectEffects(), DirectMeasurements(), skills=["pr-review", "api-changelog"])


def test_a_skills_thread_changes_only_its_copy_until_joined_and_then_only_its_own_entries(tmp_path: Path):
    run = evaluate_only_run(tmp_path)
    card = OfflineBackend().evaluate(run.workspace.skill_file("pr-review").read_text(encoding="utf-8"), "pr-review",
                                     frozenset({"SKILL.md"}), Mode.QUICK, [])
    run.take(SkillState("api-changelog", best=card))
    first, second = run.for_skill(), run.for_skill()
    first.take(SkillState("pr-review", baseline=card, best=card))
    del first.states["api-changelog"]  # another skill's entry: its loss must not come back
    second.take(SkillState("api-changelog", resumed=(80.0, 2, None)))
    assert run.state("pr-review").best is None and run.resumed("api-changelog") is None  # nothing shared before the join
    run.join(first, "pr-review")
    run.join(second, "api-changelog")
    assert run.best("api-changelog") is card and run.best("pr-review") is card and run.measured() == ["pr-review"]
    assert run.resumed("api-changelog") == (80.0, 2, None) and run.resumed("pr-review") is None
    with pytest.raises(LookupError, match="api-changelog: no baseline score card in this run yet"):
        run.baseline("api-changelog")
    assert first.ledger is run.ledger and first.inserted is run.inserted and first.effects is run.effects  # run-wide


def test_a_skills_state_goes_in_whole_and_what_it_left_untouched_stays(tmp_path: Path):
    run = evaluate_only_run(tmp_path)
    card = OfflineBackend().evaluate(run.workspace.skill_file("pr-review").read_text(encoding="utf-8"), "pr-review",
                                     frozenset({"SKILL.md"}), Mode.QUICK, [])
    run.take(SkillState("pr-review", baseline=card, best=card))
    assert run.state("pr-review") == SkillState("pr-review", baseline=card, best=card)
    run.take(SkillState("pr-review", resumed=(70.5, 1, Stop.NO_EDIT)))  # the cards it left None stay
    assert run.state("pr-review") == SkillState("pr-review", baseline=card, best=card, resumed=(70.5, 1, Stop.NO_EDIT))
    assert run.state("api-changelog") == SkillState("api-changelog")


def test_checkpoint_keys_count_across_every_skills_thread_in_the_order_asked(tmp_path: Path):
    run = evaluate_only_run(tmp_path)
    asked: list[str] = []
    run.effects = DirectEffects(answer=lambda key, summary, kwargs: (asked.append(key), safe_default(key, summary, kwargs))[1])
    first, second = run.for_skill(), run.for_skill()
    first.ask("max-rounds-pr-review", "used all rounds")
    second.ask("max-rounds-api-changelog", "used all rounds")
    run.ask("test-prompts", "3 prompts")
    first.ask("test-prompts", "3 prompts")  # the same name asked again, from a skill's thread: a key of its own
    assert asked == ["max-rounds-pr-review", "max-rounds-api-changelog", "test-prompts", "test-prompts#2"]


def test_notices_from_every_skills_thread_reach_the_run(tmp_path: Path):
    run = evaluate_only_run(tmp_path)
    run.for_skill().effects.notice("pr-review: refused a proposed edit as a duplicate")
    run.effects.notice("api-changelog: test prompts designed offline (no model)", "run stopped early: budget")
    assert run.effects.notices() == ("pr-review: refused a proposed edit as a duplicate",
                                     "api-changelog: test prompts designed offline (no model)", "run stopped early: budget")
