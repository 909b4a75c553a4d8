"""Luban against a real model server: llama-cpp-python's, serving SmolLM2-135M-Instruct, with default settings.

What a user does: point OPENAI_BASE_URL and the three model variables at the
server, run `luban doctor`, then `luban evaluate` and `luban optimize`. The
server speaks its own dialect (it answers response_format json_schema with
HTTP 500, takes json_object with a schema), works on one request at a time, and
its model rambles. A 135M model is no judge of quality: these tests prove the
protocol and the robustness — one failed call per negotiation, no reply over
its cap, nothing judged without its raw reply kept, nothing kept on unscored
evidence — not that a score means anything.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.support.llama_server import ALIAS, SUITE_CAPS, RealServer, environment, llama_cpp_python, llama_server
from tests.support.skill_creator_tools import aggregate, check_shapes, viewer_runs
from workspace.results_tsv import ResultsFile
from workspace.void_replies import load

pytestmark = [pytest.mark.usefixtures("prefect_api"), pytest.mark.real_model]
LUBAN = str(Path(sys.executable).parent / "luban")
SKILLS = ("api-changelog", "pr-review")  # the two smallest shipped examples (doctor's estimate covers both)
SKILL = SKILLS[0]  # what evaluate and optimize run on: every minute of the 135M model's is the pass's time
OPTIMIZE_CALLS = 26  # the optimize test's cap: about Phases 0–1, bounding the pass when the consumer gate lets it through
JUDGED = ("dim2", "dim3", "dim5", "dim6", "dim8")


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> RealServer:
    with llama_cpp_python(tmp_path_factory.mktemp("llama")) as running:
        yield running


@pytest.fixture(scope="module")
def skills_dir(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("real") / "skills"
    for skill in SKILLS:
        shutil.copytree(REPO_ROOT / "skills" / skill, target / skill)
    return target


def luban(server: RealServer, *args: str, timeout: float = 1100, caps: dict[str, str] | None = None,
          ) -> tuple[subprocess.CompletedProcess, float]:
    from prefect.settings import PREFECT_API_URL

    started = time.monotonic()
    env = environment(server, PREFECT_API_URL=str(PREFECT_API_URL.value()), **(caps or {}))
    done = subprocess.run([LUBAN, *args], env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)
    return done, time.monotonic() - started


def test_doctor_passes_and_says_what_the_server_speaks(server: RealServer, skills_dir: Path):
    done, took = luban(server, "doctor", "--skills-dir", str(skills_dir), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "ok   structured output: json_object+schema" in out and "json_schema refused (HTTP 500" in out, out
    assert "ok   reply cap: max_tokens 16 honoured" in out and "tokens/s" in out and "ok   judge:" in out, out
    assert "estimate: 2 skill(s), full mode" in out and out.rstrip().endswith("all checks passed"), out
    assert "ok   target files: inline: asked to call read_file, the model answered in text" in out, out
    print(f"\nluban doctor against llama-cpp-python + SmolLM2: {took:.0f} s\n{out}")


def check_run(server: RealServer, run: dict, before: int) -> None:
    """What holds for any run against this server: the dialect negotiated with one failed call, no reply over its
    cap, and every fallback counted."""
    refused = [s for s in server.statuses()[before:] if s != 200]
    assert refused == [500], f"one failed call (json_schema refused) and no other: {refused}"
    usage = run["usage"]
    assert usage["over_cap"] == 0 and usage["failed"] == 0, usage
    assert all(r["tokens"] <= r["cap"] for r in usage["largest_reply_by_role"].values()), usage["largest_reply_by_role"]
    assert run["server"]["dialects"] == {"smollm2": "json_object+schema"}, run["server"]
    assert run["fallbacks"]["structured output for smollm2: json_object+schema"] == 1, run["fallbacks"]


def check_rows(workspace: Path) -> list:
    """Every judged dimension of every row is scored, or unscored with its reason in the row; each reply that gave
    no score is kept as received in void-replies.jsonl."""
    rows = []
    for skill in (SKILL,):
        found = ResultsFile(workspace / "full" / skill / "results.tsv").rows()
        void = load(workspace / "full" / skill / "void-replies.jsonl")
        assert all(entry["raw"] and entry["reason"] for entry in void), void
        for row in found:
            if row.scores is None:
                continue
            missing = [d for d in JUDGED if row.scores.get(d) is None]
            if missing:
                assert "unscored=" in row.note and "unscored_reason=" in row.note, row.note
        rows += found
    return rows


@pytest.mark.timeout(1200)
def test_evaluate_full_scores_an_example_within_minutes(server: RealServer, skills_dir: Path, tmp_path: Path):
    workspace = tmp_path / "ws"
    before = len(server.statuses())
    done, took = luban(server, "evaluate", SKILL, "--skills-dir", str(skills_dir), "--mode", "full",
                       "--workspace", str(workspace), caps=SUITE_CAPS)
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads(done.stdout)
    check_run(server, run, before)
    rows = check_rows(workspace)
    assert {r.skill for r in rows if r.status == "baseline"} == {SKILL}
    assert sum("structured output for smollm2: json_object+schema x1" in r.note for r in rows) == 1  # once, where it fell
    # SmolLM2 on llama-cpp-python answers a read_file probe in text (llama.cpp's own server, with or without --jinja,
    # does the same): the target is given each skill's referenced files inline, and every such answer is counted
    assert run["server"]["target_files"] == {"smollm2": "files inline: asked to call read_file, the model answered in text"}
    assert run["fallbacks"]["target given the skill's files inline (it makes no tool calls)"] >= 1, run["fallbacks"]  # one per answer given
    assert took < 400, f"evaluate took {took:.0f} s"  # about 2½ minutes at the suite's caps on 2 cores
    # what the real model answered opens in skill-creator's own tools: its viewer lists each run with the answer, its
    # aggregator finds the runs Luban's benchmark holds (none with a pass rate: this skill has no assertions)
    evals = max((workspace / "full" / "evaluations").iterdir()) / SKILL / "evals"
    assert check_shapes(evals) >= 3
    listed = viewer_runs(evals, tmp_path / "review.html")
    assert listed and all(r["grading"] and any(f["name"] == "answer.md" for f in r["outputs"]) for r in listed), listed
    ours = json.loads((evals / "benchmark.json").read_text(encoding="utf-8"))
    theirs = aggregate(evals, tmp_path / "aggregated" / "benchmark.json")
    assert sorted((r["eval_id"], r["configuration"], r["result"]["pass_rate"]) for r in theirs["runs"]) == sorted(
        (r["eval_id"], r["configuration"], r["result"]["pass_rate"]) for r in ours["runs"])
    print(f"\nluban evaluate --mode full, 1 skill, against SmolLM2: {took:.0f} s, {run['usage']['calls']} calls, "
          f"fallbacks {run['fallbacks']}")


@pytest.mark.timeout(1500)
def test_optimize_full_keeps_nothing_on_unscored_evidence_and_stops_at_its_call_cap(server: RealServer, skills_dir: Path,
                                                                                     tmp_path: Path):
    """One round a skill and a call cap: the consumer gate stops a 135M target model on some runs and lets it through on
    others (the server samples), and a round on unscored evidence measures until its looks run out — the cap bounds
    the run either way and proves the budget stop against a real server."""
    work = tmp_path / "skills"
    shutil.copytree(skills_dir, work)
    before = len(server.statuses())
    done, took = luban(server, "optimize", SKILL, "--skills-dir", str(work), "--mode", "full", "--approval", "auto",
                       "--max-rounds", "1", "--max-llm-calls", str(OPTIMIZE_CALLS), "--init-git", timeout=1400,
                       caps=SUITE_CAPS)
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads(done.stdout)
    check_run(server, run, before)
    rows = check_rows(work.parent / "luban-workspace")
    for row in (r for r in rows if r.status == "keep"):
        evidence = row.evidence or {}
        basis = evidence.get("dims", {}).get(evidence.get("basis") or "", {})
        assert basis and min(basis["n"]) > 0, f"a keep decided on a dimension measured on one side only: {row}"
        assert row.scores and row.scores.get(evidence["basis"]) is not None, row
    assert run["usage"]["calls"] <= OPTIMIZE_CALLS, run["usage"]
    if run["stopped"] and "consumer" in run["stopped"]:  # a 135M target model is below every threshold the design sets
        assert not any(r.status == "keep" for r in rows), run["stopped"]
    else:  # through the gate: the round ran, ended by its decision or by the cap
        assert not run["stopped"] or run["stopped"].startswith("budget"), run["stopped"]
    assert took < 400, f"optimize took {took:.0f} s"
    print(f"\nluban optimize --mode full --max-rounds 1 --max-llm-calls {OPTIMIZE_CALLS}, 1 skill, against SmolLM2: {took:.0f} s, "
          f"{run['usage']['calls']} calls, stopped: {run['stopped']}, rows: {[(r.skill, r.status) for r in rows]}")


@pytest.mark.timeout(1200)
def test_llama_cpp_own_server_speaks_json_schema_and_says_its_slots(tmp_path: Path, skills_dir: Path):
    """The second real dialect: llama.cpp's llama-server takes json_schema at the first try and says at /props how
    many requests it works on at once; Luban sends that many, and no call fails. (Quick mode: the full-mode path
    against a real server is the test above; here what differs is the dialect and the slots.)"""
    with llama_server(tmp_path) as other:
        done, took_doctor = luban(other, "doctor", "--skills-dir", str(skills_dir), timeout=300)  # at the default caps
        assert done.returncode == 0, done.stdout + done.stderr
        assert "ok   structured output: json_schema (taken at the first try)" in done.stdout, done.stdout
        assert "ok   concurrency: 4 slot(s) (the server says); Luban sends 4 at once" in done.stdout, done.stdout
        done, took = luban(other, "evaluate", "api-changelog", "--skills-dir", str(skills_dir), "--mode", "quick",
                           "--workspace", str(tmp_path / "ws"), caps=SUITE_CAPS)
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads(done.stdout)
    assert run["server"]["dialects"] == {"smollm2": "json_schema"} and run["server"]["step_downs"] == []
    assert (run["server"]["slots"], run["server"]["concurrency"]) == (4, 4)
    assert run["usage"]["failed"] == 0 and run["usage"]["over_cap"] == 0, run["usage"]
    assert "structured output for smollm2: json_object+schema" not in run["fallbacks"]
    print(f"\nllama-server: doctor {took_doctor:.0f} s; evaluate --mode quick, 1 skill: {took:.0f} s, "
          f"{run['usage']['calls']} calls")


ROUTE_TRIGGERS = {
    "api-changelog": [("write the changelog for the v2 API release", True), ("what changed in the API since 1.4", True),
                      ("review my pull request", False)],
    "pr-review": [("review this pull request diff for bugs", True), ("can you do a code review of my branch", True),
                  ("write the changelog", False)],
}


@pytest.mark.timeout(900)
def test_route_against_llama_server_reads_every_answer_and_says_what_the_cache_saved(tmp_path: Path, skills_dir: Path):
    """`luban route` end to end against llama.cpp's server: SmolLM2 makes no tool calls, so it answers in JSON under
    the json_schema it is given; every call gets a reply, the listing prefix comes from the server's cache after the
    first call (its cached_tokens), and every figure carries its counts and interval. Protocol, not quality."""
    library = tmp_path / "skills"
    shutil.copytree(skills_dir, library)
    for skill, cases in ROUTE_TRIGGERS.items():
        (library / skill / "evals").mkdir(exist_ok=True)
        (library / skill / "evals" / "triggers.json").write_text(
            json.dumps([{"query": q, "should_trigger": t} for q, t in cases]), encoding="utf-8")
    with llama_server(tmp_path) as other:
        done, took = luban(other, "route", "--skills-dir", str(library), "--workspace", str(tmp_path / "ws"),
                           "--runs", "2", "--approval", "auto", caps={"LUBAN_ROUTER_MODEL": ALIAS}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout)
    figures = doc["models"][ALIAS]
    assert doc["answers"].get("json", 0) > 0 and "tool" not in doc["answers"], doc["answers"]
    assert figures["runs"] + figures["missing"] == doc["cost"]["calls"] == 2 * doc["queries"]["routed"]
    assert doc["cost"]["tokens_cached"] > 0, doc["cost"]
    assert all(s["recall"]["ci95"] is None or 0 <= s["recall"]["ci95"][0] <= s["recall"]["ci95"][1] <= 1
               for s in figures["skills"].values())
    assert Path(doc["report"]).is_file()
    print(f"\nluban route, 2 skills × 2 runs against llama-server + SmolLM2: {took:.0f} s, {doc['cost']['calls']} calls, "
          f"cached {100 * doc['cost']['cached_share']:.0f} % of prompt tokens, answers {doc['answers']}, "
          f"top-1 {figures['top1_accuracy']['value']}")
