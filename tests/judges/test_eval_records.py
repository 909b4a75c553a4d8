"""A measurement in skill-creator's shapes: grading.json per case and configuration, benchmark.json per skill."""

from __future__ import annotations

from judges.assertions import AssertionGrade
from judges.eval_records import WITH, WITHOUT, benchmark, grading, undiscriminating
from judges.performance import PairResult

PAIRS = (
    PairResult(1, accuracy=10.0, baseline_accuracy=5.0, safety=10, compliance=9, tokens_with=900, tokens_baseline=300,
               seconds_with=4.0, seconds_baseline=1.0, files_read=("references/api.md",), access="tool",
               assertions=(AssertionGrade("sends a key", True, "Key: 1f", False, "no key"),
                           AssertionGrade("is polite", True, "please", True, "please"),
                           AssertionGrade("cites the doc", None, "", None, "", "its quote is not in the answer",
                                          "the grader could not say"))),
    PairResult(2, accuracy=6.0, baseline_accuracy=6.0, safety=10, compliance=9, tokens_with=700, tokens_baseline=500,
               seconds_with=2.0, seconds_baseline=3.0, access="tool",
               assertions=(AssertionGrade("names the file", False, "", False, ""),)),
    PairResult(3, unscored_reason="prompt 3: judge failed (unavailable): down"),
)


def test_grading_keeps_evidence_and_leaves_the_undecided_unscored_not_failed():
    with_skill, without = grading(PAIRS[0], WITH), grading(PAIRS[0], WITHOUT)
    assert with_skill["expectations"][0] == {"text": "sends a key", "passed": True, "evidence": "Key: 1f"}
    assert with_skill["expectations"][2] == {"text": "cites the doc", "passed": None,
                                             "evidence": "its quote is not in the answer"}
    assert with_skill["summary"] == {"passed": 2, "failed": 0, "total": 2, "unscored": 1, "pass_rate": 1.0}
    assert without["summary"] == {"passed": 1, "failed": 1, "total": 2, "unscored": 1, "pass_rate": 0.5}
    assert with_skill["execution_metrics"]["files_read"] == ["references/api.md"] and without["execution_metrics"][
        "files_read"] == []


def test_the_benchmark_summarises_each_configuration_and_the_delta():
    bench = benchmark("orders", PAIRS, "target-m", "2026-12-07T04:00:00+00:00")
    assert bench["metadata"]["evals_run"] == [1, 2] and len(bench["runs"]) == 4
    summary = bench["run_summary"]
    assert summary[WITH]["pass_rate"] == {"mean": 0.5, "stddev": 0.5, "min": 0.0, "max": 1.0}
    assert summary[WITHOUT]["pass_rate"]["mean"] == 0.25
    assert summary["delta"] == {"pass_rate": "+0.25", "time_seconds": "+1.0", "tokens": "+400"}
    assert any("case 3 unscored" in n for n in bench["notes"])


def test_assertions_that_cannot_tell_the_skill_apart_are_named():
    assert undiscriminating(PAIRS) == [
        "case 1: assertion 'is polite' passes with and without the skill (it measures nothing)",
        "case 2: assertion 'names the file' fails with and without the skill (the skill does not help it)"]
