"""The backends end to end (online over HTTP, offline), and proposals checked in code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from judges.backend import ProposalRequest
from judges.offline_backend import OfflineBackend
from judges.online_backend import OnlineBackend
from judges.proposer import RefusalKind, propose_checked
from judges.tokens import count_tokens
from judges.usage import BudgetExhausted
from scoring import score_skill
from scoring.edits import check_budget
from tests.conftest import REPO_ROOT
from tests.judges.conftest import make_settings
from tests.support.openai_server import ScriptedOpenAI
from tests.support.scripted_llm import LubanResponder
from workspace.baseline_cache import BaselineCache
from workspace.rejected_edits import Buffer
from workspace.skill_source import read_skill, read_sources
from workspace.test_prompts import TestPrompt

PROMPTS = [TestPrompt(id=1, type="main", prompt="review my PR", expected="review"),
           TestPrompt(id=2, type="main", prompt="held", expected="x", held_out=True)]


def example(name: str):
    source = read_skill(REPO_ROOT / "skills" / name / "SKILL.md")
    return source.data.decode("utf-8"), source.files


def online(server: ScriptedOpenAI, tmp_path: Path, **settings) -> OnlineBackend:
    return OnlineBackend(make_settings(server, **settings), BaselineCache(tmp_path / "cache"))


def test_online_full_evaluation_scores_all_ten_dimensions(server, responder: LubanResponder, tmp_path: Path):
    text, files = example("pr-review")
    ev = online(server, tmp_path).evaluate(text, "pr-review", files, "full", PROMPTS)
    assert ev.eval_mode == "full_test" and ev.judge_count == 2 and ev.score.points_covered == 100
    assert {ev.score.dim(d).source for d in ("dim2", "dim3", "dim5", "dim6", "dim8")} == {"llm"}
    assert responder.kinds.count("judge") == 2 and responder.kinds.count("review") == 0  # Safety 10: no review
    assert ev.score.warnings == ()


def test_low_safety_triggers_the_review_gate(server, responder: LubanResponder, tmp_path: Path):
    responder.grade = {"accuracy": 8, "baseline_accuracy": 6, "safety": 3, "compliance": 9}
    responder.findings = [{"section": "Approving", "level": "P0", "problem": "merges without review", "direction": "STOP first"}]
    text, files = example("pr-review")
    ev = online(server, tmp_path).evaluate(text, "pr-review", files, "full", PROMPTS)
    assert ev.review is not None and ev.review_blocking and ev.score.dim("dim10").score == 4.0


def test_same_model_for_editor_and_judge_warns_on_every_score(server, responder, tmp_path: Path):
    text, files = example("pr-review")
    ev = online(server, tmp_path, editor_model="judge-a").evaluate(text, "pr-review", files, "quick", PROMPTS)
    assert any("same-source warning" in w for w in ev.score.warnings)
    assert any("same-source warning" in r for r in ev.score.dim("dim2").reasons)


def test_orthogonality_recheck_uses_the_second_model_and_is_not_counted(server, responder, tmp_path: Path):
    text, files = example("pr-review")
    text = text.replace("Do not nitpick", "🛑 STOP before merging. Do not nitpick")  # dim4 = 10, never reverted
    ev = online(server, tmp_path, judge_model_2="judge-b").evaluate(text, "pr-review", files, "full", PROMPTS)
    assert ev.orthogonality is not None and ev.orthogonality.judge == "orthogonality"
    assert ev.judge_count == 2
    assert [r.body["model"] for r in server.chat_requests() if "independent judge" in str(r.body)].count("judge-b") == 1


def test_budget_stop_raises_with_calls_recorded(server, responder, tmp_path: Path):
    text, files = example("pr-review")
    backend = online(server, tmp_path, max_llm_calls=3)
    with pytest.raises(BudgetExhausted):
        backend.evaluate(text, "pr-review", files, "full", PROMPTS)
    assert backend.usage.calls == 3 and len(server.chat_requests()) == 3
    assert backend.usage.totals()["calls"] == 3


def test_offline_evaluation_says_what_it_is():
    text, files = example("db-migration")
    ev = OfflineBackend().evaluate(text, "db-migration", files, "full", PROMPTS)
    assert ev.eval_mode == "fallback_dry" and ev.judge_count == 0
    for dim in ("dim2", "dim3", "dim5", "dim6", "dim8"):
        assert ev.score.dim(dim).source == "heuristic"
        assert any("offline heuristic" in r for r in ev.score.dim(dim).reasons)
    assert any("runtime" in r for r in ev.score.dim("dim6").reasons)  # ~/.claude/skills without a neutral path
    assert ev == OfflineBackend().evaluate(text, "db-migration", files, "full", PROMPTS)  # deterministic


def test_offline_prompts_cover_main_edge_error_and_one_held_out():
    for name in ("pr-review", "weekly-report-zh"):
        text, _ = example(name)
        prompts, how = OfflineBackend().design_prompts(text, name)
        assert [p.type for p in prompts] == ["main", "edge", "error", "main"] and "offline" in how
        assert [p.held_out for p in prompts] == [False, False, False, True]
    assert re.search(r"[\u4e00-\u9fff]", prompts[0].prompt)  # the Chinese skill gets Chinese prompts


@pytest.mark.parametrize("name", ["pr-review", "weekly-report-zh", "api-changelog", "db-migration"])
def test_offline_proposer_raises_each_example_skill_within_three_edits(name):
    assert _three_edits(*example(name), name) > 0


def _three_edits(text: str, files: frozenset[str], name: str) -> float:
    """Deterministic-subtotal gain after up to three offline edits, each checked against the 10 % budget."""
    backend = OfflineBackend()
    start = score_skill(text, name, files).deterministic_subtotal
    for _ in range(3):
        card = backend.evaluate(text, name, files, "quick", []).score
        order = sorted(("dim1", "dim4", "dim7", "dim9", "dim3", "dim6", "dim5"),
                       key=lambda d: -(10 - (card.dim(d).score or 0)) * card.dim(d).weight)
        proposal = next((p for d in order if (p := propose_checked(backend, ProposalRequest(text, name, files, d))).edit), None)
        if proposal is None:
            break
        assert check_budget(text, proposal.edited_text, 0.10).within
        text = proposal.edited_text
    return score_skill(text, name, files).deterministic_subtotal - start


def test_offline_proposals_on_the_corpus_are_mechanical_fixes_that_pass_every_guard(skill_collection: Path):
    """Offline, over real public skills: every edit proposed for any dimension is one of the mechanical fixes, passes
    the structural guards, and inserts no block (a mechanical fix removes or re-points; it writes nothing new)."""
    from judges.offline_strategies import MECHANICAL
    from scoring.boilerplate import inserted_units
    from scoring.edit_guards import check_edit

    proposed = 0
    for path in sorted(skill_collection.rglob("SKILL.md")):
        text, files = _read(path)
        name = path.parent.name
        for dim in ("dim1", "dim2", "dim3", "dim4", "dim5", "dim6", "dim7", "dim8", "dim9"):
            proposal = propose_checked(OfflineBackend(), ProposalRequest(text, name, files, dim))
            if proposal.edit is None:
                continue
            proposed += 1
            edit = proposal.edit
            assert edit.strategy in MECHANICAL and edit.target_dim in ("dim1", "dim6", "dim7"), (name, edit)
            assert check_edit(text, proposal.edited_text, edit, files) == []
            assert inserted_units(text, edit, name) == ()
    assert proposed >= 1  # the corpus has mechanical defects too (a heading jump, a moved path): they are fixed


@pytest.mark.parametrize("seed", [3, 11, 29])
def test_offline_proposals_on_generated_skills_fix_every_planted_defect_and_nothing_else(tmp_path: Path, seed: int):
    """Other seeds than the fixture's: each planted defect kind is proposed for, and every proposal is mechanical."""
    from judges.offline_strategies import MECHANICAL
    from scoring.boilerplate import inserted_units
    from scoring.edit_guards import check_edit
    from tests.support.generated_skills import write_generated

    strategies: set[str] = set()
    for path in sorted(write_generated(tmp_path, count=16, seed=seed).rglob("SKILL.md")):
        text, files = _read(path)
        for dim in ("dim1", "dim3", "dim4", "dim5", "dim6", "dim7", "dim9"):
            proposal = propose_checked(OfflineBackend(), ProposalRequest(text, path.parent.name, files, dim))
            if proposal.edit is not None:
                assert proposal.edit.strategy in MECHANICAL
                assert check_edit(text, proposal.edited_text, proposal.edit, files) == []
                assert inserted_units(text, proposal.edit) == ()
                strategies.add(proposal.edit.strategy)
    assert strategies == set(MECHANICAL)


def _read(path: Path):
    source = read_skill(path)
    return source.data.decode("utf-8"), source.files


def test_proposals_never_add_files_or_references_to_missing_files():
    moved = 0
    for name in ("pr-review", "weekly-report-zh", "api-changelog", "db-migration"):
        text, files = example(name)
        before = {r.target for r in score_skill(text, name, files).references}
        for dim in ("dim1", "dim3", "dim4", "dim5", "dim6", "dim7", "dim9"):
            for edit in OfflineBackend().candidates(ProposalRequest(text, name, files, dim), None):
                after = score_skill(text.replace(edit.old, edit.new, 1) if edit.old else text + edit.new, name, files)
                added = {r.target for r in after.references} - before
                assert added <= files  # a reference is only ever re-pointed at a file the skill has
                moved += bool(added)
    assert moved == 1  # api-changelog's path to the file that moved into references/examples/


def test_rejected_edits_are_never_proposed_again():
    text, files = example("pr-review")
    first = propose_checked(OfflineBackend(), ProposalRequest(text, "pr-review", files, "dim7")).edit
    assert first is not None
    buffer, _, _ = Buffer("pr-review", "t").add("t", "dim7", first.old, first.new, "score_regression")
    second = propose_checked(OfflineBackend(), ProposalRequest(text, "pr-review", files, "dim7", is_rejected=buffer.is_rejected)).edit
    assert second is not None and (second.old, second.new) != (first.old, first.new)


def test_online_proposal_that_does_not_apply_is_sent_back_with_the_reason(server, responder: LubanResponder, tmp_path: Path):
    text, files = example("pr-review")
    replies = iter([
        {"target_dim": "dim7", "old": "Link every comment to the exact line of the diff it is about.",
         "new": "Keep comments short.", "rationale": "dedupe"},
        {"target_dim": "dim7", "old": "", "anchor": "", "new": "x" * 5000, "rationale": "too big"},
        {"target_dim": "dim7", "old": "### Steps", "new": "## Steps", "rationale": "fix the heading jump"},
    ])

    def scripted(request):
        from tests.support.openai_server import reply

        return reply(next(replies))

    server.responder = scripted
    proposal = propose_checked(online(server, tmp_path), ProposalRequest(text, "pr-review", files, "dim7"))
    assert proposal.edit is not None and proposal.edit.new == "## Steps" and proposal.attempts == 3
    assert "occurs 2 time(s)" in str(proposal.refusals[0]) and "over the budget" in str(proposal.refusals[1])
    assert [r.kind for r in proposal.refusals] == [RefusalKind.UNAPPLICABLE, RefusalKind.OVER_BUDGET]
    sent = [r.body["messages"][1]["content"] for r in server.chat_requests()]
    assert "refused: 'old' must occur exactly once" in sent[1] and "over the budget" in sent[2]


def test_online_proposer_gives_up_after_three_refusals(server, tmp_path: Path):
    from tests.support.openai_server import reply

    server.responder = lambda request: reply({"target_dim": "dim4", "old": "not in the skill", "new": "y", "rationale": "r"})
    text, files = example("pr-review")
    proposal = propose_checked(online(server, tmp_path), ProposalRequest(text, "pr-review", files, "dim4"))
    assert proposal.edit is None and len(proposal.refusals) == 3 and len(server.chat_requests()) == 3


def test_offline_rewrite_restructures_within_the_size_cap():
    text, files = example("pr-review")
    rewritten = OfflineBackend().rewrite(text, "pr-review", files)
    assert rewritten is not None and len(rewritten) <= 1.5 * len(text)
    assert score_skill(rewritten, "pr-review", files).total > score_skill(text, "pr-review", files).total


def test_online_rewrite_reads_the_marked_reply(server, tmp_path: Path):
    from tests.support.openai_server import reply

    server.queue(reply("thinking...\n<rewritten>\n---\nname: pr-review\n---\n# New\n</rewritten>"), reply("no markers"))
    backend = online(server, tmp_path)
    assert backend.rewrite("# Old\n", "pr-review", frozenset()) == "---\nname: pr-review\n---\n# New\n"
    assert backend.rewrite("# Old\n", "pr-review", frozenset()) is None


def test_the_editor_is_told_that_keywords_without_content_are_refused():
    from judges.proposer import build_messages

    text, files = example("pr-review")
    system = build_messages(ProposalRequest(text, "pr-review", files, "dim9"), None, "n0nce")[0]["content"]
    assert "keyword insertions without content" in system and "are refused" in system
    assert "inside code blocks, tables, links or inline code" in system and "rename the skill" in system


def test_judges_read_the_references_and_name_what_did_not_fit(server, responder, tmp_path: Path):
    text, files = example("api-changelog")
    sources = read_sources(REPO_ROOT / "skills" / "api-changelog", files)
    classification = (REPO_ROOT / "skills" / "api-changelog" / "references" / "classification.md").read_text()
    ev = online(server, tmp_path).evaluate(text, "api-changelog", files, "quick", PROMPTS, sources=sources)
    judged = [r for r in server.chat_requests() if "independent judge" in str(r.body)]
    assert judged and all(classification.strip() in r.body["messages"][1]["content"] for r in judged)
    assert ev.panel is not None and ev.panel.unseen == ""
    server.requests.clear()
    alone = count_tokens(text, "judge-a")[0]  # a budget with room for SKILL.md alone
    tight = online(server, tmp_path, judge_context_tokens=alone).evaluate(text, "api-changelog", files, "quick", PROMPTS,
                                                                         sources=sources)
    assert tight.panel is not None and "references/classification.md (" in tight.panel.unseen
    assert any("not shown to the judges: references/" in r for r in tight.score.dim("dim6").reasons)
    user = next(r for r in server.chat_requests() if "independent judge" in str(r.body)).body["messages"][1]["content"]
    assert classification.strip() not in user and "- references/classification.md: " in user
