"""A measurement in the shapes skill authors' tools read: skill-creator's ``grading.json`` and ``benchmark.json``.

Per case and per configuration (``with_skill``, ``without_skill``) the grading — each assertion with ``passed`` and
its ``evidence`` — and per skill a benchmark: every run's result, and per configuration the mean, stddev, min and
max of its pass rate, time and tokens, with the deltas. The field names are the ecosystem's (its viewer reads them
exactly). A case without assertions has no ``expectations``; its ``pass_rate`` is the grader's 0–10 Accuracy / 10,
and the benchmark's notes say so. An assertion that passes with and without the skill alike measures nothing, and
one that fails in both cannot show the skill helps: both are named (``undiscriminating``).
"""

from __future__ import annotations

from statistics import mean, pstdev
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judges.performance import PairResult

WITH, WITHOUT = "with_skill", "without_skill"


def grading(pair: PairResult, configuration: str) -> dict[str, Any]:
    """One case's grading.json for one configuration; unscored assertions are listed with ``passed`` null."""
    baseline = configuration == WITHOUT
    expectations = [{"text": g.text, "passed": g.baseline if baseline else g.with_skill,
                     "evidence": (g.baseline_evidence if baseline else g.with_evidence)
                     or (g.why_baseline if baseline else g.why_with)} for g in pair.assertions]
    decided = [bool(e["passed"]) for e in expectations if e["passed"] is not None]
    accuracy = pair.baseline_accuracy if baseline else pair.accuracy
    return {
        "expectations": expectations,
        "summary": {"passed": sum(decided), "failed": len(decided) - sum(decided), "total": len(decided),
                    "unscored": len(expectations) - len(decided),
                    "pass_rate": round(sum(decided) / len(decided), 2) if decided else _rate(accuracy)},
        "timing": {"executor_duration_seconds": pair.seconds_baseline if baseline else pair.seconds_with},
        "execution_metrics": {"files_read": [] if baseline else list(pair.files_read),
                              "skill_access": "" if baseline else pair.access},
        "unscored_reason": pair.unscored_reason,
    }


def benchmark(skill: str, pairs: tuple[PairResult, ...], model: str, timestamp: str) -> dict[str, Any]:
    """The skill's benchmark.json: one run per case and configuration (this run's measurement of its kept text)."""
    scored = [p for p in pairs if p.unscored_reason is None]
    runs = [{"eval_id": p.prompt_id, "eval_name": f"case {p.prompt_id}", "configuration": configuration,
             "run_number": 1, "result": _result(p, configuration), "expectations": grading(p, configuration)["expectations"]}
            for p in scored for configuration in (WITH, WITHOUT)]
    summary: dict[str, Any] = {c: _summary([r["result"] for r in runs if r["configuration"] == c]) for c in (WITH, WITHOUT)}
    summary["delta"] = {k: _delta(summary[WITH][k]["mean"], summary[WITHOUT][k]["mean"], k)
                        for k in ("pass_rate", "time_seconds", "tokens")}
    notes = [f"case {p.prompt_id}: no assertions; pass_rate is the grader's 0-10 Accuracy / 10" for p in scored
             if not p.assertions]
    notes += undiscriminating(pairs)
    notes += [f"case {p.prompt_id} unscored: {p.unscored_reason}" for p in pairs if p.unscored_reason is not None]
    return {"metadata": {"skill_name": skill, "executor_model": model, "timestamp": timestamp,
                         "evals_run": [p.prompt_id for p in scored], "runs_per_configuration": 1},
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
            "total": summary["total"], "time_seconds": pair.seconds_baseline if baseline else pair.seconds_with,
            "tokens": pair.tokens_baseline if baseline else pair.tokens_with,
            "tool_calls": 0 if baseline or pair.access != "tool" else len(pair.files_read), "errors": 0}


def _summary(results: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    out: dict[str, dict[str, float | None]] = {}
    for key in ("pass_rate", "time_seconds", "tokens"):
        values = [float(r[key]) for r in results if r[key] is not None]
        out[key] = ({"mean": round(mean(values), 4), "stddev": round(pstdev(values), 4), "min": min(values),
                     "max": max(values)} if values else {"mean": None, "stddev": None, "min": None, "max": None})
    return out


def _delta(with_skill: float | None, without: float | None, key: str) -> str | None:
    if with_skill is None or without is None:
        return None
    difference = with_skill - without
    return f"{difference:+.2f}" if key == "pass_rate" else f"{difference:+.1f}" if key == "time_seconds" else f"{difference:+.0f}"


def _rate(accuracy: float | None) -> float | None:
    return round(accuracy / 10, 2) if accuracy is not None else None
