"""Every LLM backend fault ends in a labelled, recorded outcome — unscored with its reason, a revert at a
checkpoint, or a budget stop — never a silent 0, never a crash, never an inconsistent skills repository."""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from flows.optimize import optimize_skills
from tests.support.openai_server import Scripted, ScriptedOpenAI, completion, error, reply
from tests.support.scripted_llm import LubanResponder, a_quote, skill_in
from workspace.results_tsv import ResultsFile

LLM_DIMS = ("dim2", "dim3", "dim5", "dim6")
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_api")]

JUDGE_FAULTS = {  # what every judge call gets; the other calls are answered normally
    "429-storm": lambda: error(429, "rate limited", {"retry-after": "0"}),
    "500s": lambda: error(500, "internal error"),
    "timeout": lambda: Scripted(body=completion("{}"), delay=2.5),
    "truncated-body": lambda: Scripted(body=completion("{\"dims\": {}}"), truncate=True),
    "malformed-json": lambda: reply("I think it deserves a 10 {not json"),
}


class FaultyJudges(LubanResponder):
    def __init__(self, fault):
        super().__init__()
        self.fault = fault

    def _judge(self, request):
        return self.fault()


def optimize(skills: Path, base_url: str, monkeypatch) -> dict:
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-luban-faults-0001")
    return optimize_skills(skills_dir=str(skills), skills=["pr-review"], mode="full", approval="auto", init_git=True,
                           max_rounds=1, llm={"judge_model": "judge-a", "max_retries": 1, "timeout_seconds": 1,
                                              "max_concurrency": 1})  # one call at a time: its read timeout is 1 s


def rows(skills: Path):
    return ResultsFile(skills.parent / "luban-workspace" / "full" / "pr-review" / "results.tsv").rows()


def assert_consistent(skills: Path) -> None:
    repo = git.Repo(skills)
    assert repo.git.status("--porcelain") == "", "the skills repository was left with changes"
    results = ResultsFile(skills.parent / "luban-workspace" / "full" / "pr-review" / "results.tsv")
    assert results.ensure() is None


def assert_unscored_with_reason(baseline) -> None:
    assert all(baseline.scores[d] is None for d in LLM_DIMS), baseline.scores  # never a silent 0
    assert f"unscored={','.join(LLM_DIMS)}" in baseline.note and "unscored_reason=judge" in baseline.note, baseline.note


@pytest.mark.parametrize("fault", list(JUDGE_FAULTS))
def test_a_judge_fault_leaves_the_dimensions_unscored_with_the_reason(example_skills: Path, monkeypatch, fault):
    server = ScriptedOpenAI()
    server.responder = FaultyJudges(JUDGE_FAULTS[fault])
    with server:
        result = optimize(example_skills, server.base_url, monkeypatch)
    history = rows(example_skills)
    assert history[0].status == "baseline"
    assert_unscored_with_reason(history[0])
    assert all(r.status in ("baseline", "keep", "revert", "skip") for r in history) and len(history) >= 2
    assert result["skills"]["pr-review"]["stop"] in ("bottleneck", "no_edit", "max_rounds", "ceiling")
    assert_consistent(example_skills)
    kind = {"malformed-json": "unparseable", "timeout": "no reply", "500s": "no reply", "429-storm": "no reply",
            "truncated-body": "no reply"}[fault]
    counted = result["fallbacks"].get(f"judge unscored: {kind}", 0)
    assert counted >= 2 and f"fallbacks=judge unscored: {kind} x" in history[0].note, (result["fallbacks"], history[0].note)
    report = Path(result["report"]).read_text(encoding="utf-8")
    assert "Fallbacks (each counted" in report and f"judge unscored: {kind}: {counted}" in report
    if fault == "malformed-json":  # a reply that gave no score is kept as received
        from workspace.void_replies import load

        void = load(example_skills.parent / "luban-workspace" / "full" / "pr-review" / "void-replies.jsonl")
        assert void and all(v["raw"] == "I think it deserves a 10 {not json" and v["kind"] == "unparseable" for v in void)


def test_a_server_that_stops_answering_mid_run_is_unscored_with_the_reason_and_the_run_ends_cleanly(example_skills: Path,
                                                                                                         monkeypatch):
    """A server that answers the preflight (its model list), then hangs up on every completion: the run does not stop,
    and every judged dimension is unscored with why. (A server that is not there at all is refused before any work:
    flows/test_server_preflight.py.)"""
    server = ScriptedOpenAI(models=["judge-a", "gpt-4o-mini"])
    server.responder = lambda request: Scripted(body=completion("{}"), truncate=True)
    with server:
        optimize(example_skills, server.base_url, monkeypatch)
    baseline = rows(example_skills)[0]
    assert_unscored_with_reason(baseline)
    assert "did not answer" in baseline.note and "check the server is up" in baseline.note
    assert_consistent(example_skills)


def test_fabricated_quotes_void_the_judges_answers(example_skills: Path, monkeypatch):
    server = ScriptedOpenAI()
    server.responder = LubanResponder(fabricate_quotes=10**6)
    with server:
        optimize(example_skills, server.base_url, monkeypatch)
    baseline = rows(example_skills)[0]
    assert_unscored_with_reason(baseline)
    assert "quote" in baseline.note.lower()
    assert_consistent(example_skills)


def test_judges_that_always_disagree_are_measured_further_in_batch_then_the_edit_is_inconclusive(example_skills: Path,
                                                                                                 monkeypatch):
    """Batch mode: a gap over 3 points asks for more samples instead of reverting at once; judges 2 and 9 in turn
    never settle, so the edit (a STOP: a gain on a rule dimension only) goes back as inconclusive, and the skill
    is not stopped as a bottleneck or a disagreement."""
    server = ScriptedOpenAI()
    server.responder = DisagreeingJudges()
    original = (example_skills / "pr-review" / "SKILL.md").read_bytes()
    with server:
        result = optimize(example_skills, server.base_url, monkeypatch)
    attempt = next(r for r in rows(example_skills) if r.status != "baseline")
    assert attempt.status == "revert" and "reason=inconclusive" in attempt.note and attempt.stop == ""
    # Measured beyond one evaluation: more judge calls, or more dim8 runs, depending on which side the alternating
    # 2s and 9s fell (threads decide the order); either way the edit is not judged on a single panel.
    dims = attempt.evidence["dims"]
    assert attempt.evidence["look"] >= 2 and (dims["dim2"]["n"][0] > 2 or dims["dim8"]["n"][0] > 1), json.dumps(dims)[:2000]
    assert result["skills"]["pr-review"]["stop"] == "max_rounds"  # max_rounds=1: the skill would have gone on
    assert (example_skills / "pr-review" / "SKILL.md").read_bytes() == original
    assert_consistent(example_skills)


class DisagreeingJudges(LubanResponder):
    """2 and 9 in turn on each version's own judge calls, whatever order the threads send them in: in one shared turn,
    a version's two calls could both fall on 9 while the other's fell on 2 — a gain the judges agree on."""

    def __init__(self) -> None:
        super().__init__()
        self.turns: dict[str, int] = {}

    def _judge(self, request):
        version = " ".join(skill_in(request).split())  # its null variants differ in whitespace alone
        with self._lock:
            turn = self.turns[version] = self.turns.get(version, -1) + 1
        score = (2, 9)[turn % 2]
        dims = {d: {"score": score, "rationale": f"{d} looks like {score}", "quotes": [a_quote(skill_in(request))]}
                for d in LLM_DIMS}
        return reply({"dims": dims, "safety_red_line": False, "safety_reason": ""})


class UnreachableEditor(LubanResponder):
    def _propose(self, request):
        return error(500, "internal error")


def test_an_unreachable_editor_stops_the_skill_with_its_own_label_and_reason(example_skills: Path, monkeypatch):
    server = ScriptedOpenAI()
    server.responder = UnreachableEditor()
    with server:
        result = optimize(example_skills, server.base_url, monkeypatch)
    assert result["skills"]["pr-review"]["stop"] == "proposer_unavailable"  # not "no_edit": nothing was judged
    skip = rows(example_skills)[-1]
    assert skip.status == "skip" and skip.round == 1
    assert skip.stop == "proposer_unavailable" and "proposer unavailable (unavailable)" in skip.note, skip.note
    assert "HTTP 500" in skip.note and "sk-luban-faults-0001" not in skip.note
    assert_consistent(example_skills)
