"""The keep decision in the real flow, against noisy judges on a loopback server: measure more while undecided,
keep on evidence, revert an inconclusive edit and go on, record the evidence, and never share a cached sample."""

from __future__ import annotations

import hashlib
import random
import shutil
import threading
from pathlib import Path

import pytest

from flows.optimize import optimize_skills
from scoring.keep_decision import KeepPolicy
from tests.support.noisy_llm import NoisyJudges
from tests.support.openai_server import ScriptedOpenAI
from tests.support.scripted_llm import kind_of, same_skill, skill_in
from workspace import rejected_edits
from workspace.results_tsv import ResultsFile

pytestmark = pytest.mark.usefixtures("prefect_api")

HELPFUL = "Quote the failing line and the command that reproduces it, with its exit code."
NEUTRAL = "Keep the sections of the review in the order they are listed above."
SECOND = "Name the reviewer who approved the change in the summary's first sentence."
LLM = {"judge_model": "judge-a", "target_model": "target-m", "editor_model": "editor-e", "max_retries": 0}


def optimize(skills: Path, server: ScriptedOpenAI, monkeypatch, **kwargs) -> dict:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-luban-noise-test-0001")
    kwargs.setdefault("approval", "auto")
    return optimize_skills(skills_dir=str(skills), skills=["pr-review"], mode="full", init_git=True, llm=LLM, **kwargs)


def history(skills: Path):
    return ResultsFile(skills.parent / "luban-workspace" / "full" / "pr-review" / "results.tsv").rows()


def test_an_undecided_edit_is_measured_again_then_kept_with_its_evidence_recorded(example_skills: Path, monkeypatch):
    judges = NoisyJudges(sigma=0.6)
    judges.plant(HELPFUL, "dim5", +1.2)  # a real gain, but one look cannot tell it from the noise
    server = ScriptedOpenAI()
    server.responder = judges
    with server:
        result = optimize(example_skills, server, monkeypatch, max_rounds=1)
    keep = next(r for r in history(example_skills) if r.status == "keep")
    evidence = keep.evidence
    assert evidence["verdict"] == "keep" and evidence["basis"] == "dim5" and evidence["look"] >= 2  # measured again
    n_candidate, n_incumbent = evidence["dims"]["dim5"]["n"]
    assert n_candidate > 2 and n_incumbent >= n_candidate  # the incumbent is re-measured, never one lucky sample
    assert evidence["dims"]["dim5"]["lower"] > 0 and keep.bound > 0 and keep.samples == f"{n_candidate}/{n_incumbent}"
    assert keep.llm_calls and keep.llm_calls >= 1 + 8 + KeepPolicy().judges_per_step  # proposal, evaluation, more
    assert 0 < evidence["dims"]["dim5"]["sd"] < 1.2 and evidence["judge_model"] == "judge-a"  # the noise it read
    report = Path(result["report"]).read_text()
    assert "## Keep decisions" in report and "| pr-review | 1 | keep | dim5 |" in report
    assert "judge-a: dim2 σ" in report  # the judges' measured noise, shown


def test_an_inconclusive_edit_is_reverted_and_the_skill_goes_on(example_skills: Path, monkeypatch):
    judges = NoisyJudges(sigma=1.0)
    judges.plant(NEUTRAL, "dim2", 0.0)  # changes nothing: noise alone cannot show a gain within the cap
    judges.plant(SECOND, "dim3", +3.0)
    server = ScriptedOpenAI()
    server.responder = judges
    with server:
        result = optimize(example_skills, server, monkeypatch, max_rounds=2)
    rows = [r for r in history(example_skills) if r.status in ("keep", "revert")]
    first = rows[0]
    assert first.status == "revert" and first.stop == "" and "reason=inconclusive" in first.note
    assert first.evidence["verdict"] == "inconclusive" and first.evidence["look"] == KeepPolicy().max_looks
    buffer = rejected_edits.load(example_skills.parent / "luban-workspace" / "full" / "pr-review" / "rejected_edits.md",
                                 "pr-review", "")
    assert [e.reason for e in buffer.entries] == ["inconclusive"]  # remembered: it is not tried again
    assert len(rows) == 2 and rows[1].round == 2  # not a bottleneck: round 2 tried the next edit
    assert rows[1].status == "keep" and SECOND in (example_skills / "pr-review" / "SKILL.md").read_text()
    assert result["skills"]["pr-review"]["stop"] == "max_rounds"


def test_a_person_present_is_asked_when_the_judges_disagree_and_a_no_reverts(example_skills: Path, monkeypatch):
    from tests.support.scripted_runs import answer_checkpoints

    judges = NoisyJudges(sigma=0.0)
    judges.judge_scores = []
    judges.plant(HELPFUL, "dim5", +1.0)
    on_candidate = {"n": 0}
    lock = threading.Lock()

    def split_panel(request):  # every other judge call on the candidate scores dim2 at 1: its two judges split
        answer = NoisyJudges._judge(judges, request)
        if HELPFUL not in skill_in(request):
            return answer
        with lock:
            on_candidate["n"] += 1
            low = on_candidate["n"] % 2
        if low:
            import json

            body = json.loads(answer.body["choices"][0]["message"]["content"])
            body["dims"]["dim2"]["score"] = 1.0
            answer.body["choices"][0]["message"]["content"] = json.dumps(body)
        return answer

    judges._judge = split_panel  # type: ignore[method-assign]
    server = ScriptedOpenAI()
    server.responder = judges
    box: dict = {}
    with server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-luban-noise-test-0002")

        def target():
            box["result"] = optimize_skills(skills_dir=str(example_skills), skills=["pr-review"], mode="full",
                                            init_git=True, approval="ui", approval_timeout=120, max_rounds=1, llm=LLM)

        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        seen = answer_checkpoints(thread, lambda name: {"reject": name.startswith("judges-"), "comment": f"re {name}"})
    assert "judges-pr-review" in seen
    attempt = next(r for r in history(example_skills) if r.status == "revert")
    assert attempt.stop == "disagreement" and "reason=user_manual" in attempt.note
    assert box["result"]["skills"]["pr-review"]["stop"] == "disagreement"


def test_the_measurement_cache_is_not_shared_between_two_runs(example_skills: Path, tmp_path: Path, monkeypatch):
    """Two runs on identical copies with the same settings: the second pays for its own judging (a cached sample
    would be the first run's noise again, not a new measurement)."""
    again = tmp_path / "again" / "skills"
    shutil.copytree(example_skills, again)
    original = (example_skills / "pr-review" / "SKILL.md").read_text()
    server = ScriptedOpenAI()  # one server for both: the same settings, base URL included
    server.responder = NoisyJudges(sigma=0.5)
    counts = []
    with server:
        for skills in (example_skills, again):
            before = len(server.chat_requests())
            optimize(skills, server, monkeypatch, max_rounds=1)
            counts.append(sum(kind_of(r) == "judge" and same_skill(skill_in(r), original)
                              for r in server.chat_requests()[before:]))
    assert counts[0] == counts[1] >= 4


class ReadsEachTextOneWay(NoisyJudges):
    """A judge at temperature 0: each text gets one fixed reading per dimension, the same on every call — N(0, σ)
    from the text's own bytes — and any other text, however little it differs, another. One text it likes by +2 on
    every dimension (the first text it reads with ``marker`` in it): what a re-asked judge would report as a gain
    beyond all noise."""

    def __init__(self, marker: str, sigma: float = 1.0):
        super().__init__(sigma=sigma)
        self.marker, self.lucky = marker, ""

    def _noise(self, text: str) -> float:
        with self._noise_lock:
            if not self.lucky and self.marker in text:
                self.lucky = text
        if text == self.lucky:
            return 2.0
        return random.Random(hashlib.sha256(f"fixed|{text}".encode()).digest()).gauss(0, self.sigma)


def test_a_neutral_edit_whose_very_text_a_fixed_judge_likes_is_not_kept(example_skills: Path, monkeypatch):
    """Before: every re-measurement sent the same bytes, so a judge that reads each text one way returned the same
    lucky +2 each time, the within-text spread was 0, and the edit was kept as a gain far beyond noise. Each reading
    is now of a null variant: the luck of one text's bytes is one sample among many."""
    judges = ReadsEachTextOneWay(NEUTRAL)
    judges.plant(NEUTRAL, "dim2", 0.0)
    server = ScriptedOpenAI()
    server.responder = judges
    with server:
        optimize(example_skills, server, monkeypatch, max_rounds=1)
        read = [skill_in(r) for r in server.chat_requests() if kind_of(r) == "judge"]
    attempt = next(r for r in history(example_skills) if r.status in ("keep", "revert"))
    assert attempt.status == "revert", attempt.evidence
    assert read.count(judges.lucky) == 1 and len(set(read)) == len(read)  # every judge call read a text of its own
    assert sum(same_skill(t, judges.lucky) for t in read) >= 4


def test_a_kept_text_is_compared_next_round_on_samples_taken_after_its_keep(example_skills: Path, monkeypatch):
    """The samples that decided a keep were read until they looked good (they lean high): round 2 compares against
    the kept text's later samples only — every judge call on it, less those that decided round 1."""
    judges = NoisyJudges(sigma=0.6)
    judges.plant(HELPFUL, "dim5", +1.2)
    judges.plant(SECOND, "dim3", 0.0)  # round 2: a neutral edit on top of the kept one
    server = ScriptedOpenAI()
    server.responder = judges
    with server:
        optimize(example_skills, server, monkeypatch, max_rounds=2)
        on_kept = sum(kind_of(r) == "judge" and HELPFUL in skill_in(r) and SECOND not in skill_in(r)
                      for r in server.chat_requests())
    rows = [r for r in history(example_skills) if r.round in (1, 2) and r.evidence]
    first, second = rows[0], rows[1]
    assert first.status == "keep" and second.round == 2, [(r.round, r.status) for r in rows]
    deciding = first.evidence["dims"]["dim5"]["n"][0]  # the kept candidate's samples
    compared = second.evidence["dims"]["dim5"]["n"][1]  # the incumbent's, in round 2
    assert compared == on_kept - deciding and compared >= KeepPolicy().judges_per_step, (on_kept, deciding, compared)
