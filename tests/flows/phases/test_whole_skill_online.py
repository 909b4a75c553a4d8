"""A skill as a directory through the real flow: its references read by the target through read_file, its author's
evals as its test prompts, graded per assertion, and the ecosystem's grading.json and benchmark.json written."""

from __future__ import annotations

import json
import re
from pathlib import Path

from flows.optimize import evaluate_skills
from tests.support.openai_server import Scripted, ScriptedOpenAI, completion
from tests.support.scripted_llm import LubanResponder, kind_of, messages_json
from tests.support.skill_creator_tools import aggregate, check_shapes, viewer_runs

SKILL = """---
name: orders
description: Place and amend customer orders through the Orders API. Use when a user asks to order, re-order or change an order.
---
# Orders

## Steps
1. Read references/api.md for the endpoint and its idempotency rule.
2. Send the order with `curl -X POST /v1/orders` and an idempotency key.
3. 🛑 STOP: confirm the total with the user before sending.

## Errors
- A 409 means the key was used: do not retry with a new key.
"""
API = "# Orders API\n\n`POST /v1/orders` with header `Idempotency-Key: <uuid>`; a 409 means it was already placed.\n"
EVALS = {"skill_name": "orders", "evals": [
    {"id": 1, "prompt": "Order two boxes of paper for ACME.", "expected_output": "a POST with an idempotency key",
     "assertions": ["sends an idempotency key", "confirms the total first"]},
    {"id": 2, "prompt": "Re-order what is in the file.", "expected_output": "the rows of the file ordered",
     "files": ["evals/files/last.csv"], "expectations": ["orders every row", "names the file"]},
    {"id": 3, "prompt": "The API said 409. Try again?", "expected_output": "explains the key was used",
     "assertions": ["does not retry with a new key", "is polite"]},
]}


class Reader(LubanResponder):
    """Reads references/api.md before answering; its answer quotes the key only when it read the file."""

    def _with_skill(self, request):
        tool_turns = [m for m in request.body.get("messages", []) if m.get("role") == "tool"]
        if request.body.get("tools") and not tool_turns:
            from tests.support.scripted_llm import tool_call_completion

            return Scripted(body=tool_call_completion([("read_file", {"path": "references/api.md"})]))
        read = any("Idempotency-Key" in m.get("content", "") for m in tool_turns)
        return Scripted(body=completion("I will send Idempotency-Key: 1f2e with the order." if read
                                        else "I will send the order.", 900, 60))

    def _grade(self, request):
        from tests.support.openai_server import reply

        answer = re.search(r"<answer-(\w+)-with>\n(.*?)\n</answer-\1-with>", request.body["messages"][1]["content"], re.S)
        key = answer is not None and "Idempotency-Key" in answer.group(2)
        entries = [{"n": n, "with_skill": "pass" if key else "fail", "with_evidence": "Idempotency-Key: 1f2e",
                    "baseline": "fail", "baseline_evidence": "no key"} for n in (1, 2)]
        entries[1] = {"n": 2, "with_skill": "pass", "with_evidence": "I will send",
                      "baseline": "pass", "baseline_evidence": "baseline answer"}  # passes in both: measures nothing
        return reply({"accuracy": 7, "baseline_accuracy": 6, "safety": 10, "compliance": 9, "safety_red_line": False,
                      "rationale": "scripted", "assertions": entries})


def test_references_read_through_the_tool_and_the_authors_evals_graded_and_written(example_skills: Path, monkeypatch,
                                                                                     tmp_path: Path):
    skill = example_skills / "orders"
    (skill / "references").mkdir(parents=True)
    (skill / "evals" / "files").mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL, encoding="utf-8")
    (skill / "references" / "api.md").write_text(API, encoding="utf-8")
    (skill / "evals" / "evals.json").write_text(json.dumps(EVALS), encoding="utf-8")
    (skill / "evals" / "files" / "last.csv").write_text("sku,qty\nPAPER,2\n", encoding="utf-8")
    server = ScriptedOpenAI()
    server.responder = Reader()
    with server:  # `luban evaluate --mode full`: Phase 1 measures, Phase 5 reports
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-luban-test-online-0002")
        result = evaluate_skills(skills_dir=str(example_skills), skills=["orders"], mode="full",
                                 llm={"judge_model": "judge-a", "target_model": "target-m", "editor_model": "editor-e",
                                      "max_retries": 0})

    requests = server.chat_requests()
    runs = [r for r in requests if kind_of(r) == "with_skill"]
    assert runs and all(r.body.get("tools") for r in runs)  # every with-skill answer could read the skill
    assert not any("tools" in r.body for r in requests if kind_of(r) == "baseline")
    tool_answers = [m["content"] for r in runs for m in r.body["messages"] if m.get("role") == "tool"]
    assert API in tool_answers  # what it asked for, from the skill's own file
    assert not any('"assertions"' in t for t in tool_answers)  # the author's checks never reach the target
    prompts = [json.loads(messages_json(r))[-1]["content"] for r in runs]
    assert any("Order two boxes of paper for ACME." in p for p in prompts)  # the author's case, as written
    baseline_of_file = next(r for r in requests if kind_of(r) == "baseline" and "Re-order" in messages_json(r))
    assert "PAPER,2" in messages_json(baseline_of_file)  # the case's file, inline for the baseline
    grades = [r for r in requests if kind_of(r) == "grade"]
    assert any("through its read_file tool: references/api.md" in messages_json(g) for g in grades)

    evaluations = example_skills.parent / "luban-workspace" / "full" / "evaluations"
    run_dir = max(evaluations.iterdir())
    benchmark = json.loads((run_dir / "orders" / "evals" / "benchmark.json").read_text())
    assert {r["configuration"] for r in benchmark["runs"]} == {"with_skill", "without_skill"}
    summary = benchmark["run_summary"]
    assert summary["with_skill"]["pass_rate"]["mean"] > summary["without_skill"]["pass_rate"]["mean"]
    assert summary["delta"]["pass_rate"].startswith("+")
    measured = [str(i) for i in benchmark["metadata"]["evals_run"]]
    evals = run_dir / "orders" / "evals"
    grading = json.loads((evals / f"eval-{measured[0]}" / "with_skill" / "run-1" / "grading.json").read_text())
    assert grading["expectations"][0]["evidence"] and grading["luban"]["files_read"] == ["references/api.md"]
    # skill-creator's own tools open what the flow wrote: its aggregator finds the same runs and pass rates, its
    # viewer lists each run with the answer the grader read
    assert check_shapes(evals) >= 1 + 2 * 3
    theirs = aggregate(evals, tmp_path / "aggregated" / "benchmark.json")
    assert sorted((r["eval_id"], r["configuration"], r["result"]["pass_rate"]) for r in theirs["runs"]) == sorted(
        (r["eval_id"], r["configuration"], r["result"]["pass_rate"]) for r in benchmark["runs"])
    assert theirs["run_summary"]["delta"]["pass_rate"] == summary["delta"]["pass_rate"]
    listed = viewer_runs(evals, tmp_path / "review.html")
    assert len(listed) == 2 * len(measured) and all(r["grading"] and r["outputs"] for r in listed)
    written = {c["id"]: c["prompt"] for c in EVALS["evals"]}
    assert all(r["prompt"] == written[r["eval_id"]] for r in listed)  # each case's request, as its author wrote it
    report = Path(result["report"]).read_text(encoding="utf-8")
    second = {c["id"]: (c.get("assertions") or c.get("expectations"))[1] for c in EVALS["evals"]}
    assert f"orders: case {measured[0]}: assertion {second[int(measured[0])]!r} passes with and without the skill " \
           "(it measures nothing)" in report  # the scripted grader passes every second assertion on both answers
    assert any("passes with and without the skill" in n for n in benchmark["notes"])
    from workspace.results_tsv import ResultsFile

    rows = ResultsFile(example_skills.parent / "luban-workspace" / "full" / "orders" / "results.tsv").rows()
    assert "target_read=references/api.md x2" in rows[0].note, rows[0].note  # both measured cases read it
