"""Checkpoints in the Prefect API: a paused run resumed with input from code, rejections, and timeouts."""

from __future__ import annotations

import threading
from pathlib import Path
from uuid import UUID

import pytest

from flows.optimize import optimize_skills
from flows.serving import NotPaused, approve, pending
from tests.conftest import REPO_ROOT
from tests.support.scripted_runs import answer_checkpoints, run_in_thread

pytestmark = pytest.mark.usefixtures("prefect_api")


def test_paused_run_is_resumed_with_input_from_code(example_skills: Path):
    thread, box = run_in_thread(skills_dir=str(example_skills), skills=["pr-review"], mode="quick", approval="ui",
                                max_rounds=2, approval_timeout=120)
    paused: dict[str, str] = {}
    seen = answer_checkpoints(thread, lambda name: {"comment": f"ok {name}"}, flows=paused)
    assert "error" not in box, box.get("error")
    assert seen[:2] == ["test-prompts", "baseline"] and "skill-pr-review" in seen
    # Prefect pauses only flows: with a person answering in the UI, each phase is a subflow that pauses itself
    assert paused["test-prompts"] == "phase-0.5-test-prompts" and paused["baseline"] == "phase-1-baseline"
    assert paused["skill-pr-review"] == "phase-2-ratchet"
    assert box["result"]["stopped"] is None and box["result"]["skills"]["pr-review"]["kept"] >= 1


def test_rejecting_a_skill_restores_the_original(example_skills: Path):
    original = (example_skills / "pr-review" / "SKILL.md").read_bytes()
    thread, box = run_in_thread(skills_dir=str(example_skills), skills=["pr-review"], mode="quick", approval="ui",
                                max_rounds=2, approval_timeout=120)
    answer_checkpoints(thread, lambda name: {"reject": name == "skill-pr-review", "comment": "not good"})
    assert "error" not in box, box.get("error")
    assert (example_skills / "pr-review" / "SKILL.md").read_bytes() == original
    assert box["result"]["skills"]["pr-review"]["after"] == box["result"]["skills"]["pr-review"]["before"]


def test_a_checkpoint_nobody_answers_ends_recorded_and_resumable(example_skills: Path):
    result = optimize_skills(skills_dir=str(example_skills), skills=["pr-review"], mode="quick", approval="ui",
                             approval_timeout=3)
    assert "no answer at the test-prompts checkpoint" in result["stopped"] and "--resume" in result["stopped"]
    assert "run stopped early" in Path(result["report"]).read_text()
    assert (example_skills / "pr-review" / "SKILL.md").read_bytes() == (
        REPO_ROOT / "skills" / "pr-review" / "SKILL.md"
    ).read_bytes()


def test_approving_a_run_that_is_not_paused_says_so():
    with pytest.raises(NotPaused, match="not a flow run id"):
        approve("not-a-uuid")
    with pytest.raises(Exception):  # noqa: B017 - whatever Prefect raises for an unknown run id; the point is that it raises
        approve("00000000-0000-0000-0000-000000000000")


def test_auto_mode_shows_the_router_reasons_at_a_checkpoint_and_obeys_the_choice(example_skills: Path):
    from flows.optimize import evaluate_skills

    box: dict = {}
    thread = threading.Thread(target=lambda: box.update(result=evaluate_skills(
        skills_dir=str(example_skills), mode="auto", approval="ui")), daemon=True)
    thread.start()
    summaries: list[str] = []

    def decide(name: str) -> dict:
        if name == "mode":
            from prefect.client.orchestration import get_client

            with get_client(sync_client=True) as client:  # what the form shows: the router's reasons
                run = next(r for r in pending() if r.checkpoint == "mode")
                state = client.read_flow_run(UUID(run.id)).state
                summaries.append(client.read_flow_run_input(UUID(run.id), state.state_details.run_input_keyset["description"]))
            return {"choice": "full", "comment": "the router's reasons are clear"}
        return {}

    seen = answer_checkpoints(thread, decide)
    assert seen[0] == "mode" and "mode router:" in summaries[0] and "Suggested:" in summaries[0]
    assert box["result"]["mode"] == "full"
    assert any(n.startswith("mode router:") for n in box["result"]["notices"])
    assert (example_skills.parent / "luban-workspace" / "full" / "pr-review" / "results.tsv").exists()
