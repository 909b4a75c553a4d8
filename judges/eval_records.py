"""A measurement as the files skill authors' tools read: skill-creator's eval workspace and the Agent Skills guide's.

One folder per case, ``eval-<id>/``, with the case's ``eval_metadata.json``; in it one folder per configuration
(``with_skill``, ``without_skill``) holding the run: ``outputs/answer.md`` (the answer the grader read),
``grading.json`` (each assertion with ``passed`` and its ``evidence``, under both names the ecosystem uses:
skill-creator's ``expectations`` and the guide's ``assertion_results``), ``timing.json`` (tokens and duration)
and the metadata again (skill-creator's viewer looks for it beside the run). Beside the cases, ``benchmark.json``:
every run with a pass rate, and per configuration the mean, sample stddev, min and max of its pass rate, time and
tokens, with the deltas — what skill-creator's ``scripts/aggregate_benchmark.py`` computes from the same folders.

A pass rate is the share of a case's *decided* assertions that passed. A run with no decided assertion — the case
has none (the grader's 0–10 Accuracy is no pass rate), or the grader decided none — has no pass rate: its grading
says ``null`` with the reason, its folder is ``unscored-run-1`` (the viewer lists it; the aggregator, which adds
pass rates up, reads only ``run-*``), and the benchmark's notes name it. An assertion that passes with and without
the skill alike measures nothing, and one that fails in both cannot show the skill helps: both are named.
"""

from __future__ import annotations

import json
from statistics import mean, stdev
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judges.performance import PairResult
    from workspace.test_prompts import TestPrompt

WITH, WITHOUT = "with_skill", "without_skill"
CONFIGURATIONS = (WITH, WITHOUT)
ANSWER = "outputs/answer.md"


def eval_ids(pairs: tuple[PairResult, ...]) -> dict[str, int]:
    """Each case's integer id, as the tools sort and group by: its own where every case's is a distinct integer
    (an author's evals.json), else its position from 1."""
    ids = [str(p.prompt_id) for p in pairs]
    if all(i.isdigit() for i in ids) and len(set(map(int, ids))) == len(ids):
        return {i: int(i) for i in ids}
    return {i: n for n, i in enumerate(ids, 1)}


def grading(pair: PairResult, configuration: str) -> dict[str, Any]:
    """One case's grading.json for one configuration; an assertion left unscored has ``passed`` null."""
    baseline = configuration == WITHOUT
    expectations = [{"text": g.text, "passed": g.baseline if baseline else g.with_skill,
                     "evidence": (g.baseline_evidence if baseline else g.with_evidence)
                     or (g.why_baseline if baseline else g.why_with)} for g in pair.assertions]
    decided = [bool(e["passed"]) for e in expectations if e["passed"] is not None]
    summary: dict[str, Any] = {"passed": sum(decided), "failed": len(decided) - sum(decided), "total": len(decided),
                               "unscored": len(expectations) - len(decided),
                               "pass_rate": round(sum(decided) / len(decided), 4) if decided else None}
    if not decided:
        summary["pass_rate_reason"] = _no_rate(pair)
    seconds = pair.seconds_baseline if baseline else pair.seconds_with
    answer = pair.answer_baseline if baseline else pair.answer_with
    tools = {"read_file": len(pair.files_read)} if not baseline and pair.access == "tool" else {}
    accuracy = pair.baseline_accuracy if baseline else pair.accuracy
    return {
        "expectations": expectations,
        "assertion_results": expectations,  # the Agent Skills evaluation guide's name for the same list
        "summary": summary,
        "timing": {"executor_duration_seconds": seconds} if seconds is not None else {},
        "execution_metrics": {"tool_calls": tools, "total_tool_calls": sum(tools.values()), "errors_encountered": 0,
                              "output_chars": len(answer)},
        "luban": {"accuracy": accuracy, "accuracy_scale": "the grader's 0-10 (RUBRIC.md dim8)",
                  "files_read": [] if baseline else list(pair.files_read),
                  "skill_access": "" if baseline else pair.access, "unscored_reason": pair.unscored_reason},
    }


def _no_rate(pair: PairResult) -> str:
    if pair.unscored_reason is not None:
        return f"the case was not graded: {pair.unscored_reason}"
    if not pair.assertions:
        return "the case has no assertions (evals/evals.json): the grader's Accuracy is in 'luban', not a pass rate"
    return f"none of its {len(pair.assertions)} assertion(s) was decided (each one's evidence says why)"


def timing(pair: PairResult, configuration: str) -> dict[str, Any]:
    """timing.json: the tokens and duration of the run (the Agent Skills guide's fields, and skill-creator's)."""
    baseline = configuration == WITHOUT
    seconds = pair.seconds_baseline if baseline else pair.seconds_with
    out: dict[str, Any] = {"total_tokens": pair.tokens_baseline if baseline else pair.tokens_with}
    if seconds is not None:
        out |= {"duration_ms": round(seconds * 1000), "total_duration_seconds": round(seconds, 3),
                "executor_duration_seconds": round(seconds, 3)}
    return out


def metadata(pair: PairResult, eval_id: int, prompt: TestPrompt | None) -> dict[str, Any]:
    """eval_metadata.json: the case as skill-creator writes it (its id, name, prompt and assertions)."""
    return {"eval_id": eval_id, "eval_name": f"case {pair.prompt_id}", "prompt": prompt.prompt if prompt else "",
            "expected_output": prompt.expected if prompt else "", "assertions": [g.text for g in pair.assertions]}


def run_folder(pair: PairResult, configuration: str) -> str:
    """``run-1`` for a run with a pass rate, ``unscored-run-1`` for one without (see the module docstring)."""
    return "run-1" if grading(pair, configuration)["summary"]["pass_rate"] is not None else "unscored-run-1"


def eval_files(pairs: tuple[PairResult, ...], prompts: dict[str, TestPrompt], benchmark_json: dict[str, Any]
               ) -> dict[str, str]:
    """Every file of the layout, by its path under the skill's ``evals/`` folder."""
    ids, files = eval_ids(pairs), {"benchmark.json": _json(benchmark_json)}
    for pair in pairs:
        case = f"eval-{ids[str(pair.prompt_id)]}"
        about = _json(metadata(pair, ids[str(pair.prompt_id)], prompts.get(str(pair.prompt_id))))
        files[f"{case}/eval_metadata.json"] = about
        for configuration in CONFIGURATIONS:
            run = f"{case}/{configuration}/{run_folder(pair, configuration)}"
            answer = pair.answer_baseline if configuration == WITHOUT else pair.answer_with
            files[f"{run}/{ANSWER}"] = answer or f"(no answer: {pair.unscored_reason or 'none was given'})\n"
            files[f"{run}/grading.json"] = _json(grading(pair, configuration))
            files[f"{run}/timing.json"] = _json(timing(pair, configuration))
            files[f"{run}/eval_metadata.json"] = about
    return files


def benchmark(skill: str, pairs: tuple[PairResult, ...], model: str, timestamp: str) -> dict[str, Any]:
    """The skill's benchmark.json: one run per case and configuration with a pass rate (this run's measurement of
    its kept text), summarised as skill-creator's aggregator does."""
    ids = eval_ids(pairs)
    runs = []
    for pair in pairs:
        for configuration in CONFIGURATIONS:
            graded = grading(pair, configuration)
            if graded["summary"]["pass_rate"] is not None:
                runs.append({"eval_id": ids[str(pair.prompt_id)], "eval_name": f"case {pair.prompt_id}",
                             "configuration": configuration, "run_number": 1, "result": _result(pair, configuration),
                             "expectations": graded["expectations"]})
    summary: dict[str, Any] = {c: _summary([r["result"] for r in runs if r["configuration"] == c]) for c in CONFIGURATIONS}
    summary["delta"] = {k: _delta(summary[WITH][k]["mean"], summary[WITHOUT][k]["mean"], k)
                        for k in ("pass_rate", "time_seconds", "tokens")}
    notes = [f"case {p.prompt_id} ({c}): no pass rate — {grading(p, c)['summary']['pass_rate_reason']}; its answer is in "
             f"eval-{ids[str(p.prompt_id)]}/{c}/unscored-run-1" for p in pairs for c in CONFIGURATIONS
             if grading(p, c)["summary"]["pass_rate"] is None]
    notes += undiscriminating(pairs)
    return {"metadata": {"skill_name": skill, "executor_model": model, "timestamp": timestamp,
                         "evals_run": sorted({r["eval_id"] for r in runs}), "runs_per_configuration": 1},
            "runs": runs, "run_summary": summary, "notes": notes}


def undiscriminating(pairs: tuple[PairResult, ...]) -> list[str]:
    """The assertions that pass, or fail, with and without the skill alike: they cannot show what the skill does."""
    found = []
    for pair in pairs:
        for grade in pair.assertions:
            if grade.with_skill is not None and grade.with_skill == grade.baseline:
                both = "passes" if grade.with_skill else "fails"
                found.append(f"case {pair.prompt_id}: assertion {grade.text!r} {both} with and without the skill"
                             + (" (it measures nothing)" if grade.with_skill else " (the skill does not help it)"))
    return found


def _result(pair: PairResult, configuration: str) -> dict[str, Any]:
    summary = grading(pair, configuration)["summary"]
    baseline = configuration == WITHOUT
    return {"pass_rate": summary["pass_rate"], "passed": summary["passed"], "failed": summary["failed"],
            "total": summary["total"], "time_seconds": timing(pair, configuration).get("total_duration_seconds"),
            "tokens": pair.tokens_baseline if baseline else pair.tokens_with,
            "tool_calls": 0 if baseline or pair.access != "tool" else len(pair.files_read), "errors": 0}


def _summary(results: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Mean, sample stddev (0 for one run), min and max at four decimals: the aggregator's own arithmetic."""
    out: dict[str, dict[str, float | None]] = {}
    for key in ("pass_rate", "time_seconds", "tokens"):
        values = [float(r[key]) for r in results if r[key] is not None]
        out[key] = ({"mean": round(mean(values), 4), "stddev": round(stdev(values), 4) if len(values) > 1 else 0.0,
                     "min": round(min(values), 4), "max": round(max(values), 4)} if values
                    else {"mean": None, "stddev": None, "min": None, "max": None})
    return out


def _delta(with_skill: float | None, without: float | None, key: str) -> str | None:
    if with_skill is None or without is None:
        return None
    difference = with_skill - without
    return f"{difference:+.2f}" if key == "pass_rate" else f"{difference:+.1f}" if key == "time_seconds" else f"{difference:+.0f}"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"
