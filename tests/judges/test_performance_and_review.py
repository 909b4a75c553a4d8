"""dim8 measured over HTTP with the baseline cache, and the review gate for dim10."""

from __future__ import annotations

from pathlib import Path

from judges.llm import LLMClient
from judges.performance import (
    full_measurement,
    held_out_score,
    main_prompts,
    measure_dry_run,
    measure_pairs,
)
from judges.review import Finding, document_type, merge_findings, needs_review, run_review
from judges.target_tools import TargetSkill
from scoring.samples import Measured, dim8_parts
from scoring.skill_view import SourceFile
from tests.judges.conftest import make_settings
from tests.support.openai_server import ScriptedOpenAI
from tests.support.scripted_llm import LubanResponder
from workspace.baseline_cache import BaselineCache
from workspace.test_prompts import TestPrompt

SKILL = "---\nname: s\ndescription: d\n---\n# S\n\n1. Do the thing with `tool --flag`.\n"
PROMPTS = [
    TestPrompt(id=1, type="main", prompt="do the thing", expected="thing done"),
    TestPrompt(id=2, type="edge", prompt="do the odd thing", expected="asks"),
    TestPrompt(id=3, type="error", prompt="(empty)", expected="asks for input"),
    TestPrompt(id=4, type="main", prompt="held out thing", expected="done", held_out=True),
]


def measure_full(client, settings, cache, skill_text: str, files: frozenset[str], prompts):
    """dim8 measured as the ratchet measures it (judges/backend composes the same pieces)."""
    skill = TargetSkill(skill_text, tuple(SourceFile(f, f"# {f}\n") for f in sorted(files) if f != "SKILL.md"))
    return full_measurement(measure_pairs(client, settings, cache, skill, main_prompts(prompts)))


def test_full_measurement_runs_with_and_without_skill_and_grades(server: ScriptedOpenAI, client: LLMClient,
                                                                   responder: LubanResponder, tmp_path: Path):
    settings = make_settings(server)
    m = measure_full(client, settings, BaselineCache(tmp_path), SKILL, frozenset({"SKILL.md", "references/a.md"}), PROMPTS)
    assert m.eval_mode == "full_test" and m.judge_count == 1
    assert m.dim8.score == round((8 * 8 + 5 * 10 + 5 * 9) / 18, 2)
    # held-out excluded; whether the target makes tool calls is asked once
    assert sorted(responder.kinds) == sorted(["tool_probe"] + ["with_skill"] * 3 + ["baseline"] * 3 + ["grade"] * 3)
    with_skill = next(r for r in server.chat_requests() if "You have this skill loaded" in str(r.body["messages"]))
    assert "references/a.md" in with_skill.body["messages"][0]["content"] and with_skill.body["model"] == "target-m"
    assert any("latency warning" in r for r in m.dim8.reasons)  # 960 vs 60 tokens


def test_baseline_cache_saves_calls_across_rounds(server: ScriptedOpenAI, client: LLMClient,
                                                  responder: LubanResponder, tmp_path: Path):
    settings = make_settings(server)
    cache = BaselineCache(tmp_path)
    measure_full(client, settings, cache, SKILL, frozenset(), PROMPTS)
    round1 = responder.kinds.count("baseline")
    measure_full(client, settings, cache, SKILL + "\n🛑 STOP before deleting.\n", frozenset(), PROMPTS)
    assert round1 == 3 and responder.kinds.count("baseline") == 3  # round 2 paid for no baseline
    assert cache.hits == 3 and cache.misses == 3
    fresh = BaselineCache(tmp_path)  # a later run reads the same disk cache
    measure_full(client, settings, fresh, SKILL, frozenset(), PROMPTS)
    assert fresh.hits == 3 and responder.kinds.count("baseline") == 3


def test_accuracy_below_baseline_is_vetoed_over_the_texts_readings(server: ScriptedOpenAI, client: LLMClient,
                                                                    responder: LubanResponder, tmp_path: Path):
    """One reading below the baseline is named and not vetoed (RUBRIC.md); two readings of the text that agree are."""
    responder.grade = {"accuracy": 5, "baseline_accuracy": 7, "safety": 10, "compliance": 9}
    readings = [measure_full(client, make_settings(server), BaselineCache(tmp_path), SKILL, frozenset(), PROMPTS).dim8
                for _ in range(2)]
    assert readings[0].score == round((8 * 5 + 5 * 10 + 5 * 9) / 18, 2)
    assert any(r.startswith("this reading: Accuracy 5 is below the baseline's 7") for r in readings[0].reasons)
    one = Measured.of({"dim8": [readings[0].score]} | dim8_parts(readings[0]))
    both = one.plus(Measured.of({"dim8": [readings[1].score]} | dim8_parts(readings[1])))
    assert not one.veto().holds and one.value("dim8") == readings[0].score
    assert both.veto().holds and both.value("dim8") == 0.0 and "over 2 readings" in both.veto().reasons[0]


def test_unparseable_grades_leave_dim8_unscored_not_zero(server: ScriptedOpenAI, client: LLMClient, tmp_path: Path):
    from tests.support.openai_server import reply

    server.responder = lambda request: reply("I cannot grade this.")
    m = measure_full(client, make_settings(server), BaselineCache(tmp_path), SKILL, frozenset(), PROMPTS[:1])
    assert m.dim8.score is None and m.dim8.source == "unscored"


def test_dry_run_is_one_call_and_halved(server: ScriptedOpenAI, client: LLMClient, responder: LubanResponder):
    m = measure_dry_run(client, make_settings(server), SKILL, PROMPTS)
    assert responder.kinds == ["dry_run"] and m.eval_mode == "dry_run"
    assert m.dim8.score == round((8 * 7 + 5 * 10 + 5 * 9) / 18 * 0.5, 2)


def test_held_out_is_measured_only_on_held_out_prompts(server: ScriptedOpenAI, client: LLMClient,
                                                       responder: LubanResponder, tmp_path: Path):
    assert held_out_score(client, make_settings(server), BaselineCache(tmp_path), TargetSkill(SKILL), PROMPTS) == 8.0
    assert responder.kinds.count("with_skill") == 1
    assert held_out_score(client, make_settings(server), BaselineCache(tmp_path), TargetSkill(SKILL), PROMPTS[:3]) is None


def f(level: str, section: str, problem: str, role: str = "SRE") -> Finding:
    return Finding("X", role, section, level, problem, "fix")


def test_findings_merge_by_section_and_root_cause_keeping_the_highest_level():
    merged = merge_findings([
        f("P1", "## Rollback", "rollback path is not described for failed migrations"),
        f("P0", "Rollback", "Rollback path is not described for failed migrations", role="security architect"),
        f("P1", "Rollback", "alerting has no owner"),
        f("P2", "Steps", "rollback path is not described for failed migrations"),
    ])
    assert [(m.level, m.section) for m in merged] == [("P0", "Rollback"), ("P1", "Rollback"), ("P2", "Steps")]
    assert [m.id for m in merged] == ["N-01", "N-02", "N-03"]


def test_review_gate_runs_roles_and_gives_dim10(server: ScriptedOpenAI, client: LLMClient, responder: LubanResponder):
    responder.findings = [{"id": "A-01", "section": "Deploy", "level": "P0", "problem": "no rollback", "direction": "add one"},
                          {"id": "A-02", "section": "Docs", "level": "P1", "problem": "terms drift", "direction": "glossary"}]
    skill = "# Deploy service\n\nDeploy the service to production.\n"
    review = run_review(client, "judge-a", skill)
    assert document_type(skill) == "architecture"
    assert responder.kinds.count("review") == 3  # system architect, security architect, SRE
    roles = sorted(r.body["messages"][0]["content"].split("You are the ")[1].split(" on a review")[0] for r in server.chat_requests())
    assert roles == ["SRE", "security architect", "system architect"]
    assert review.dim10.score == 4.0 and review.blocking  # one P0 (merged across roles) locks dim10 at 4
    assert dict(review.dim10.details)["p0"] == 1 and dict(review.dim10.details)["p1"] == 1


def test_three_open_p1_block(client: LLMClient, responder: LubanResponder):
    responder.findings = [{"section": f"S{i}", "level": "P1", "problem": f"problem {i}", "direction": "x"} for i in range(3)]
    review = run_review(client, "judge-a", "# Notes\n")
    assert review.dim10.score == 8.5 and review.blocking


def test_review_that_never_answers_is_unscored(server: ScriptedOpenAI, client: LLMClient):
    from tests.support.openai_server import reply

    server.responder = lambda request: reply("no findings format")
    review = run_review(client, "judge-a", "# Notes\n")
    assert review.dim10.score is None and len(review.failed_roles) == 5


def test_review_trigger():
    assert needs_review(4.9, None) and needs_review(None, 55) and not needs_review(5, 60) and not needs_review(None, None)


def test_the_review_gate_sees_an_edit_as_its_diff(server: ScriptedOpenAI, client: LLMClient, responder: LubanResponder):
    """On a candidate, each reviewer gets the edit's diff beside the skill, as data, told that keywords without
    content are a finding; without a diff (a baseline) no such block is sent."""
    skill = "# Deploy service\n\nDeploy the service to production.\n"
    diff = "--- a\n+++ b\n@@ -1 +1,2 @@\n+- Never skip a step.\n"
    run_review(client, "judge-a", skill, diff)
    sent = [r.body["messages"][1]["content"] for r in server.chat_requests()]
    assert len(sent) == 3 and all("+- Never skip a step." in s and "without content is a finding" in s for s in sent)
    assert all("<diff-" in s and "</diff-" in s for s in sent)
    before = len(server.chat_requests())
    run_review(client, "judge-a", skill)
    assert not any("<diff-" in r.body["messages"][1]["content"] for r in server.chat_requests()[before:])
