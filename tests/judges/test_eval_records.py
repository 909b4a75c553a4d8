"""A measurement as skill-creator's eval workspace: each case's run folders, gradings and timings, and a benchmark that
skill-creator's own aggregator reproduces and its viewer lists (both run here, as published)."""

from __future__ import annotations

import json
from pathlib import Path

from judges.assertions import AssertionGrade
from judges.eval_records import WITH, WITHOUT, benchmark, eval_files, eval_ids, grading, undiscriminating
from judges.performance import PairResult
from tests.support.skill_creator_tools import aggregate, check_shapes, viewer_runs
from workspace.eval_outputs import write_eval_outputs
from workspace.test_prompts import TestPrompt

PAIRS = (
    PairResult(1, accuracy=10.0, baseline_accuracy=5.0, safety=10, compliance=9, tokens_with=900, tokens_baseline=300,
               seconds_with=4.0, seconds_baseline=1.0, files_read=("references/api.md",), access="tool",
               answer_with="Key: 1f, please.", answer_baseline="please, no key",
               assertions=(AssertionGrade("sends a key", True, "Key: 1f", False, "no key"),
                           AssertionGrade("is polite", True, "please", True, "please"),
                           AssertionGrade("cites the doc", None, "", None, "", "its quote is not in the answer",
                                          "the grader could not say"))),
    PairResult(2, accuracy=6.0, baseline_accuracy=6.0, safety=10, compliance=9, tokens_with=700, tokens_baseline=500,
               seconds_with=2.0, seconds_baseline=3.0, access="tool", answer_with="the file", answer_baseline="a file",
               assertions=(AssertionGrade("names the file", False, "", False, ""),)),
    PairResult(3, unscored_reason="prompt 3: judge failed (unavailable): down", answer_with="half", answer_baseline="x"),
    PairResult(4, accuracy=7.0, baseline_accuracy=5.0, safety=10, compliance=9, tokens_with=400, tokens_baseline=200,
               seconds_with=1.5, seconds_baseline=0.5, answer_with="an answer", answer_baseline="another"),
    PairResult(5, accuracy=7.0, baseline_accuracy=5.0, safety=10, compliance=9, tokens_with=400, tokens_baseline=200,
               seconds_with=1.0, seconds_baseline=1.0, answer_with="more", answer_baseline="less",
               assertions=(AssertionGrade("shows a total", None, "", None, "", "unsure", "unsure"),)),
)
PROMPTS = {str(n): TestPrompt(id=n, type="main", prompt=f"case {n}'s request", expected="done") for n in range(1, 6)}


def test_grading_keeps_evidence_and_leaves_the_undecided_unscored_not_failed():
    with_skill, without = grading(PAIRS[0], WITH), grading(PAIRS[0], WITHOUT)
    assert with_skill["expectations"][0] == {"text": "sends a key", "passed": True, "evidence": "Key: 1f"}
    assert with_skill["expectations"][2] == {"text": "cites the doc", "passed": None,
                                             "evidence": "its quote is not in the answer"}
    assert with_skill["assertion_results"] == with_skill["expectations"]  # the Agent Skills guide's name
    assert with_skill["summary"] == {"passed": 2, "failed": 0, "total": 2, "unscored": 1, "pass_rate": 1.0}
    assert without["summary"] == {"passed": 1, "failed": 1, "total": 2, "unscored": 1, "pass_rate": 0.5}
    assert with_skill["luban"]["files_read"] == ["references/api.md"] and without["luban"]["files_read"] == []
    assert with_skill["execution_metrics"]["tool_calls"] == {"read_file": 1}


def test_a_grading_with_no_decided_assertion_has_no_pass_rate_and_says_why():
    """Not the grader's Accuracy / 10 with a total of 0: no pass rate at all, with the reason."""
    none_decided, no_assertions, not_graded = grading(PAIRS[4], WITH), grading(PAIRS[3], WITH), grading(PAIRS[2], WITH)
    for graded in (none_decided, no_assertions, not_graded):
        assert graded["summary"]["pass_rate"] is None and graded["summary"]["total"] == 0
    assert "none of its 1 assertion(s) was decided" in none_decided["summary"]["pass_rate_reason"]
    assert "no assertions" in no_assertions["summary"]["pass_rate_reason"] and no_assertions["luban"]["accuracy"] == 7.0
    assert "judge failed" in not_graded["summary"]["pass_rate_reason"]


def test_the_benchmark_summarises_each_configuration_and_the_delta():
    bench = benchmark("orders", PAIRS, "target-m", "2026-12-07T04:00:00+00:00")
    assert bench["metadata"]["evals_run"] == [1, 2] and len(bench["runs"]) == 4
    summary = bench["run_summary"]
    assert summary[WITH]["pass_rate"] == {"mean": 0.5, "stddev": 0.7071, "min": 0.0, "max": 1.0}  # sample stddev
    assert summary[WITHOUT]["pass_rate"]["mean"] == 0.25
    assert summary["delta"] == {"pass_rate": "+0.25", "time_seconds": "+1.0", "tokens": "+400"}
    assert sum("no pass rate" in n for n in bench["notes"]) == 6  # cases 3, 4 and 5, each configuration


def test_skill_creators_aggregator_reproduces_the_benchmark_and_its_viewer_lists_every_run(tmp_path: Path):
    evals = tmp_path / "orders" / "evals"
    luban = benchmark("orders", PAIRS, "target-m", "2026-12-07T04:00:00+00:00")
    write_eval_outputs(evals, eval_files(PAIRS, PROMPTS, luban))
    assert check_shapes(evals) == 1 + 5 * (1 + 2 * 3)  # benchmark; per case its metadata, per run 3 files

    theirs = aggregate(evals, tmp_path / "aggregated" / "benchmark.json")
    runs = lambda bench: sorted((r["eval_id"], r["configuration"], r["run_number"], r["result"]["pass_rate"],  # noqa: E731 -- a key read twice
                                 r["result"]["tokens"], r["result"]["time_seconds"]) for r in bench["runs"])
    assert runs(theirs) == runs(luban) and len(runs(luban)) == 4
    for configuration in (WITH, WITHOUT):
        assert theirs["run_summary"][configuration] == luban["run_summary"][configuration]
    assert theirs["run_summary"]["delta"] == luban["run_summary"]["delta"]

    listed = viewer_runs(evals, tmp_path / "review.html")
    assert len(listed) == 10 and {r["eval_id"] for r in listed} == {1, 2, 3, 4, 5}
    for run in listed:
        case = run["eval_id"]
        assert run["prompt"] == f"case {case}'s request" and run["grading"] is not None
        answer = next(f["content"] for f in run["outputs"] if f["name"] == "answer.md")
        pair = PAIRS[case - 1]
        assert answer in (pair.answer_with, pair.answer_baseline)
        assert ("unscored-run-1" in run["id"]) == (run["grading"]["summary"]["pass_rate"] is None)


def test_a_rewrite_replaces_the_layout_whole(tmp_path: Path):
    """A case graded on a second report has run-1 only: its unscored-run-1 of the first is gone."""
    evals = tmp_path / "evals"
    ungraded = (PairResult(1, unscored_reason="prompt 1: judge failed", answer_with="a"),)
    write_eval_outputs(evals, eval_files(ungraded, {}, benchmark("s", ungraded, "m", "t")))
    assert (evals / "eval-1" / "with_skill" / "unscored-run-1").is_dir()
    write_eval_outputs(evals, eval_files(PAIRS[:1], {}, benchmark("s", PAIRS[:1], "m", "t")))
    assert not (evals / "eval-1" / "with_skill" / "unscored-run-1").exists()
    assert json.loads((evals / "eval-1" / "with_skill" / "run-1" / "grading.json").read_text())["summary"]["pass_rate"] == 1.0
    assert [p.name for p in tmp_path.iterdir()] == ["evals"]  # nothing left beside it


def test_case_ids_are_the_authors_integers_else_positions():
    assert eval_ids(PAIRS) == {"1": 1, "2": 2, "3": 3, "4": 4, "5": 5}
    named = (PairResult("alpha"), PairResult("7"))
    assert eval_ids(named) == {"alpha": 1, "7": 2}


def test_assertions_that_cannot_tell_the_skill_apart_are_named():
    assert undiscriminating(PAIRS) == [
        "case 1: assertion 'is polite' passes with and without the skill (it measures nothing)",
        "case 2: assertion 'names the file' fails with and without the skill (the skill does not help it)"]
