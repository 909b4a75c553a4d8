"""The real flow against the scripted loopback LLM server: full mode, and the held-out gate's Steps A–D."""

from __future__ import annotations

import logging
from pathlib import Path

import git
import pytest

from flows.optimize import optimize_skills
from flows.ratchet.measure import HELD_OUT_SAMPLES
from tests.support.openai_server import ScriptedOpenAI, reply
from tests.support.repos import commit_subjects
from tests.support.scripted_llm import LubanResponder, kind_of, messages_json, same_skill, skill_in
from tests.support.scripted_runs import HELD_OUT, STOP_LINE, GateResponder, run_online
from workspace import meta_learnings, profile, rejected_edits
from workspace.results_tsv import ResultsFile

pytestmark = pytest.mark.usefixtures("prefect_api")


def history(example_skills: Path):
    return ResultsFile(example_skills.parent / "luban-workspace" / "full" / "pr-review" / "results.tsv").rows()


def test_full_mode_over_http_judges_twice_and_measures(example_skills: Path, monkeypatch):
    result, server = run_online(example_skills, monkeypatch, GateResponder(held_after=8))
    rows = history(example_skills)
    assert rows[0].status == "baseline" and rows[0].eval_mode == "full_test" and rows[0].judge_count == 2
    assert rows[0].held_out_score == 8.0
    keep = next(r for r in rows if r.status == "keep")
    # the STOP adds dim4's 6 points, and the judges see substance in it (+1 on each of their dimensions): kept on
    # the judges' gain, since an edit that writes words does not count on keyword dimensions alone
    assert keep.dim_changed == "dim4" and keep.delta == pytest.approx(6.0 + 4.4)
    assert keep.evidence["basis"] in ("dim2", "dim3", "dim5", "dim6")
    # the same STOP again repeats a line the skill now has: refused by the guards before it is ever measured
    assert result["skills"]["pr-review"]["stop"] == "no_edit" and "repeated-line" in rows[-1].note
    kinds = [r for r in server.chat_requests() if "You have this skill loaded" not in str(r.body)]
    assert any("independent judge" in str(r.body) for r in kinds)
    assert (example_skills / "pr-review" / "SKILL.md").read_text().rstrip().endswith(STOP_LINE)


def test_step_b_overfitting_rolls_back_rejects_and_tightens(example_skills: Path, monkeypatch):
    original = (example_skills / "pr-review" / "SKILL.md").read_text()
    result, server = run_online(example_skills, monkeypatch, GateResponder(held_after=7))
    repo = git.Repo(example_skills)
    assert any(s.startswith("held-out-rollback: pr-review") for s in commit_subjects(repo))
    assert result["branch"] is None and not repo.active_branch.name.startswith("auto-optimize/")  # no net change: no branch
    # Step B measures the restored version afresh: judge calls on it after Phase 3's first held-out grade
    requests = server.chat_requests()
    phase_3 = next(i for i, r in enumerate(requests) if kind_of(r) == "grade" and HELD_OUT in messages_json(r)
                   and "[edited]" in messages_json(r))
    assert any(kind_of(r) == "judge" and same_skill(skill_in(r), original) for r in requests[phase_3:])
    assert (example_skills / "pr-review" / "SKILL.md").read_text() == original
    workspace = example_skills.parent / "luban-workspace"
    buffer = rejected_edits.load(workspace / "full" / "pr-review" / "rejected_edits.md", "pr-review", "")
    assert [e.reason for e in buffer.entries].count("held_out_degraded") == 1
    assert profile.load(workspace / "luban-profile.json").skill_edit_budget["pr-review"] == 0.05
    rows = history(example_skills)
    assert any("step=B" in r.note for r in rows)
    assert rows[-1].status == "skip"  # the limited extra round found nothing new: the edit is rejected for good
    assert result["skills"]["pr-review"]["held_out_fail"] is True


class Declining(GateResponder):
    """Held-out grades fall after the baseline's while the main ones stay: Step C's systemic decline."""

    def __init__(self, held_after: float):
        super().__init__(held_after)
        self.held_calls = 0

    def _grade(self, request):
        if HELD_OUT in request.body["messages"][1]["content"]:
            self.held_calls += 1
            baseline = self.held_calls <= HELD_OUT_SAMPLES  # the baseline's graded calls come first
            return reply({"accuracy": 8 if baseline else 5, "baseline_accuracy": 6, "safety": 10,
                          "compliance": 9, "safety_red_line": False})
        return super()._grade(request)

    def _propose(self, request):  # an edit that cannot raise the total: nothing is kept, main Δ = 0
        return reply({"target_dim": "dim5", "old": "Link to the line.", "new": "Link to the exact line.", "rationale": "r"})


def test_step_c_systemic_decline_keeps_the_version_and_queues_it(example_skills: Path, monkeypatch):
    result, _ = run_online(example_skills, monkeypatch, Declining(held_after=8))
    workspace = example_skills.parent / "luban-workspace"
    assert result["skills"]["pr-review"]["kept"] == 0 and result["skills"]["pr-review"]["held_out_fail"] is True
    queue = meta_learnings.load(workspace / "meta_learnings.md").sections["L1 待处理队列"]
    assert queue and queue[0].title == "pr-review: held_out_fail"
    assert any("held_out_fail; kept the current version" in n for n in result["notices"])


def test_step_d_strong_overfitting_tightens_the_global_budget(example_skills: Path, monkeypatch):
    # main: +6 (dim4) + judges 7→9 on dim2/3/5/6 (≈ +8) ≥ 8; held-out 8 → 5 (−3)
    run_online(example_skills, monkeypatch, GateResponder(held_after=5, judge_after=9))
    workspace = example_skills.parent / "luban-workspace"
    assert profile.load(workspace / "luban-profile.json").edit_budget == 0.05


def test_step_d_extreme_overfitting_freezes_and_blocks_permanently(example_skills: Path, monkeypatch):
    run_online(example_skills, monkeypatch, GateResponder(held_after=3))
    workspace = example_skills.parent / "luban-workspace"
    frozen = profile.load(workspace / "luban-profile.json").frozen["pr-review"]
    assert frozen.runs_left == 5 and "extreme overfitting" in frozen.reason
    buffer = rejected_edits.load(workspace / "full" / "pr-review" / "rejected_edits.md", "pr-review", "")
    assert buffer.entries[-1].status == "permanent_block"


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record)


def test_budget_stop_ends_cleanly_and_keeps_the_records(example_skills: Path, monkeypatch):
    server = ScriptedOpenAI()
    server.responder = GateResponder(held_after=8)
    records = Records()
    loggers = [logging.getLogger(name) for name in ("prefect.task_runs", "prefect.flow_runs")]
    for logger in loggers:
        logger.addHandler(records)
    try:
        with server:
            monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
            monkeypatch.setenv("OPENAI_API_KEY", "sk-luban-test-online-0002")
            result = optimize_skills(skills_dir=str(example_skills), skills=["pr-review"], mode="full", approval="auto",
                                     init_git=True, llm={"judge_model": "judge-a", "max_llm_calls": 38, "max_retries": 0})
    finally:
        for logger in loggers:
            logger.removeHandler(records)
    budget = [r for r in records.seen if "BudgetExhausted" in r.getMessage()]
    assert budget and all(r.levelno < logging.WARNING for r in budget), [(r.levelname, r.getMessage()[:200]) for r in budget]
    rows = history(example_skills)
    assert result["stopped"] and result["stopped"].startswith("budget")
    assert rows[0].status == "baseline" and len(server.chat_requests()) <= 38
    assert git.Repo(example_skills).git.status("--porcelain") == ""  # the unscored edit was rolled back
    assert "run stopped early: budget" in Path(result["report"]).read_text()


def test_budget_reached_by_the_proposal_asked_ahead_stops_after_the_kept_round(example_skills: Path, tmp_path: Path,
                                                                              monkeypatch):
    """Round 2's proposal is asked while round 1's keep is committed: its budget stop must end the run as cleanly."""
    import shutil

    fresh = tmp_path / "again" / "skills"
    shutil.copytree(example_skills, fresh)
    counting = GateResponder(held_after=8)
    run_online(example_skills, monkeypatch, counting)
    second_proposal = [i for i, kind in enumerate(counting.kinds) if kind == "propose"][1]
    result, server = run_online(fresh, monkeypatch, GateResponder(held_after=8),
                                llm={"judge_model": "judge-a", "target_model": "target-m", "editor_model": "editor-e",
                                     "max_retries": 0, "max_llm_calls": second_proposal})
    rows = ResultsFile(fresh.parent / "luban-workspace" / "full" / "pr-review" / "results.tsv").rows()
    assert result["stopped"] and result["stopped"].startswith("budget")
    assert [r.status for r in rows if r.status != "error"][:2] == ["baseline", "keep"]
    assert len(server.chat_requests()) == second_proposal  # the refused call was never sent
    assert (fresh / "pr-review" / "SKILL.md").read_text().rstrip().endswith(STOP_LINE)  # the kept edit stays
    assert git.Repo(fresh).git.status("--porcelain") == ""


def test_an_open_p0_at_baseline_blocks_the_skill(example_skills: Path, monkeypatch):
    responder = GateResponder(held_after=8)
    responder.grade = {"accuracy": 8, "baseline_accuracy": 6, "safety": 3, "compliance": 9}
    responder._grade = LubanResponder._grade.__get__(responder)  # the plain grader: Safety 3 triggers the review
    responder.findings = [{"section": "Approving", "level": "P0", "problem": "merges unreviewed code", "direction": "STOP"}]
    result, _ = run_online(example_skills, monkeypatch, responder)
    rows = history(example_skills)
    assert [r.status for r in rows] == ["baseline", "skip"] and rows[1].stop == "review_blocked"
    assert rows[0].scores["dim10"] == 4.0 and result["skills"] == {}


@pytest.mark.parametrize("capability, response", [(5, "quick"), (3, "lite"), (1, "block")])
def test_consumer_baseline_degrades_or_blocks_the_run(example_skills: Path, monkeypatch, capability, response):
    """The target model's bare capability (no skill) decides: ≥ 6 continue, ≥ 4 quick, ≥ 2 lite, else block."""
    original = (example_skills / "pr-review" / "SKILL.md").read_bytes()
    responder = GateResponder(held_after=8)
    responder.grade = {"accuracy": 8, "baseline_accuracy": capability, "safety": 10, "compliance": 9}
    responder._grade = LubanResponder._grade.__get__(responder)
    result, server = run_online(example_skills, monkeypatch, responder)
    report = Path(result["report"]).read_text()
    assert f"{float(capability)}/10 → {response}" in report
    rows = history(example_skills)
    if response == "block":
        assert "consumer capability insufficient" in result["stopped"] and rows == []
        assert (example_skills / "pr-review" / "SKILL.md").read_bytes() == original
        assert "run stopped early: consumer capability insufficient" in report
        return
    assert rows[0].status == "baseline"
    if response == "quick":  # quick evaluation inside a full-mode run: a dry-run dim8 and one judge
        assert any("degraded to quick" in n for n in result["notices"])
        assert rows[0].eval_mode == "dry_run" and rows[0].judge_count == 1
    else:  # lite: format fixes only (dim7), one round, at most 3 % of the file
        assert any("degraded to lite" in n for n in result["notices"])
        proposals = [r for r in server.chat_requests() if kind_of(r) == "propose"]
        assert proposals and all("dim7" in messages_json(r) for r in proposals)
        attempts = [r for r in rows if r.status in ("keep", "revert")]
        assert all(r.dim_changed == "dim7" and r.edit_pct <= 3.0 for r in attempts)
        assert max(r.round for r in rows) <= 1


def test_step_d_two_skills_overfitting_in_a_row_tighten_the_global_budget(example_skills: Path, monkeypatch):
    result, _ = run_online(example_skills, monkeypatch, GateResponder(held_after=7), skills=["pr-review", "api-changelog"])
    workspace = example_skills.parent / "luban-workspace"
    assert all(result["skills"][s]["held_out_fail"] for s in ("pr-review", "api-changelog"))
    budgets = profile.load(workspace / "luban-profile.json")
    assert budgets.edit_budget == 0.05  # global: the second Step B in a row
    assert budgets.skill_edit_budget == {"pr-review": 0.05, "api-changelog": 0.05}  # each skill's own Step B
    assert any("two skills in a row overfitted" in n for n in result["notices"])


def test_step_b_then_held_out_still_below_is_a_double_fail(example_skills: Path, monkeypatch):
    class StillDeclining(GateResponder):
        """Held-out grades 8 (baseline), 7 (after the kept edit), 6 (after Step B's rollback and limited round),
        each version graded HELD_OUT_SAMPLES times."""
        held = iter([8] * HELD_OUT_SAMPLES + [7] * HELD_OUT_SAMPLES + [6] * 4 * HELD_OUT_SAMPLES)

        def _grade(self, request):
            if HELD_OUT in request.body["messages"][1]["content"]:
                return reply({"accuracy": next(StillDeclining.held), "baseline_accuracy": 6, "safety": 10,
                              "compliance": 9, "safety_red_line": False})
            return super()._grade(request)

    result, _ = run_online(example_skills, monkeypatch, StillDeclining(held_after=7))
    workspace = example_skills.parent / "luban-workspace"
    assert any("held_out_double_fail; kept the current version" in n for n in result["notices"])
    queue = meta_learnings.load(workspace / "meta_learnings.md").sections["L1 待处理队列"]
    assert [e.title for e in queue] == ["pr-review: held_out_double_fail"]
    assert any("step=B" in r.note for r in history(example_skills))  # it went through Step B first


class NoGain(GateResponder):
    """An edit that cannot raise the total in pr-review, and that does not apply to any other skill."""

    def _propose(self, request):
        return reply({"target_dim": "dim5", "old": "Link to the line.", "new": "Link to the exact line.", "rationale": "r"})


def test_phase_2_5_rewrite_waits_for_consent_and_is_declined_in_batch(example_skills: Path, monkeypatch):
    result, server = run_online(example_skills, monkeypatch, NoGain(held_after=8), skills=["pr-review", "api-changelog"])
    assert all(o["rounds"] <= 1 for o in result["skills"].values())
    assert any(n.startswith("exploratory rewrite of") and "not approved (auto)" in n for n in result["notices"])
    assert not any(kind_of(r) == "rewrite" for r in server.chat_requests())  # no consent: not even asked for


def test_phase_2_5_rewrite_with_consent_is_kept_only_because_it_beats_the_best(example_skills: Path, monkeypatch):
    from tests.support.scripted_runs import answer_checkpoints

    server = ScriptedOpenAI()
    server.responder = NoGain(held_after=8)
    box: dict = {}
    with server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-luban-test-online-0003")

        def target():
            box["result"] = optimize_skills(skills_dir=str(example_skills), skills=["pr-review", "api-changelog"],
                                            mode="full", approval="ui", init_git=True, approval_timeout=120,
                                            llm={"judge_model": "judge-a", "max_retries": 0})

        import threading

        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        seen = answer_checkpoints(thread, lambda name: {"comment": f"yes to {name}"})
    result = box["result"]
    rewritten = next(name.removeprefix("rewrite-") for name in seen if name.startswith("rewrite-"))
    rows = ResultsFile(example_skills.parent / "luban-workspace" / "full" / rewritten / "results.tsv").rows()
    keep = next(r for r in rows if r.dim_changed == "rewrite")
    assert keep.status == "keep" and keep.delta > 0 and "strategy=exploratory-rewrite" in keep.note
    assert (example_skills / rewritten / "SKILL.md").read_text().rstrip().endswith(STOP_LINE)
    assert result["skills"][rewritten]["after"] == keep.new_score
    saved = next((example_skills.parent / "luban-workspace" / "full" / "backups").glob(f"*/{rewritten}/best-pre-rewrite.md"))
    assert STOP_LINE not in saved.read_text()  # the saved best, kept in case the rewrite is not wanted


def test_step_c_a_persons_yes_runs_the_rewrite_it_asked_about(example_skills: Path, monkeypatch):
    """Step C asks whether to rewrite a skill whose held-out and main both declined: a yes used to do nothing."""
    from tests.support.scripted_runs import answer_checkpoints, run_in_thread

    server = ScriptedOpenAI()
    server.responder = Declining(held_after=8)
    with server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-luban-test-online-0004")
        thread, box = run_in_thread(skills_dir=str(example_skills), skills=["pr-review"], mode="full", approval="ui",
                                    init_git=True, approval_timeout=120, llm={"judge_model": "judge-a", "max_retries": 0})
        seen = answer_checkpoints(thread, lambda name: {"comment": f"yes to {name}"})
    assert "error" not in box, box.get("error")
    assert "held-out-pr-review" in seen
    assert any(kind_of(r) == "rewrite" for r in server.chat_requests())
    assert any("held_out_fail; the rewrite a person approved was" in n for n in box["result"]["notices"])


def test_this_modes_lessons_reach_the_proposer_and_the_manifest_holds_files_and_answers(example_skills: Path, monkeypatch):
    import json

    workspace = example_skills.parent / "luban-workspace"

    def lessons(meta: meta_learnings.MetaLearnings) -> None:
        meta.add("高收益改动", "2026-12-01", "stop-before-irreversible", {"count": "3", "mean_delta": "+4.0", "dim": "dim4",
                                                                         "mode": "full"})
        meta.add("高收益改动", "2026-12-01", "quick-only-heuristic", {"count": "2", "mean_delta": "+1.0", "mode": "quick"})

    meta_learnings.update(workspace / "meta_learnings.md", lessons, created="2026-12-01")
    result, server = run_online(example_skills, monkeypatch, LubanResponder())
    proposals = [str(r.body) for r in server.chat_requests() if kind_of(r) == "propose"]
    assert proposals and all("Lessons from other skills:" in p and "stop-before-irreversible" in p for p in proposals)
    assert not any("quick-only-heuristic" in p for p in proposals)  # a quick run's lesson does not steer a full run
    manifest = json.loads(next((workspace / "full" / "backups").glob("*/version_manifest.json")).read_text())
    assert {a["checkpoint"].split(":")[0] for a in manifest["approvals"]} >= {"test-prompts", "baseline"}
    assert all(a["answered_by"] for a in manifest["approvals"])
    assert result["skills"]["pr-review"]["kept"] >= 1  # the default proposal's STOP is kept: a file to account for
    entry = {f["path"]: f for f in manifest["files"]}["pr-review/SKILL.md"]
    assert entry["sha256_before"] != entry["sha256_after"] and len(entry["sha256_after"]) == 64
