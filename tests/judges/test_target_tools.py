"""The target model reads a skill as a client does: SKILL.md in context, its files through read_file, or inline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judges import fallbacks
from judges.llm import LLMClient
from judges.performance import measure_pair
from judges.target_tools import INLINE, TOOL, TargetSkill, read_in_skill
from scoring.skill_view import SourceFile
from tests.judges.conftest import make_settings
from tests.support.openai_server import ScriptedOpenAI, error
from tests.support.scripted_llm import LubanResponder, kind_of
from workspace.baseline_cache import BaselineCache
from workspace.test_prompts import TestPrompt

API = "# API\n\nCall `POST /v1/orders` with an idempotency key.\n"
SKILL = TargetSkill(
    "---\nname: orders\ndescription: d\n---\n# Orders\n\n1. Read references/api.md before calling the API.\n",
    (SourceFile("references/api.md", API), SourceFile("references/old.md", "# Old notes\n"),
     SourceFile("assets/logo.png", None, "binary"), SourceFile("evals/evals.json", '{"evals": []}'),
     SourceFile("evals/files/orders.csv", "id,qty\n1,2\n")),
    ("references/api.md",))
PROMPT = TestPrompt(id=1, type="main", prompt="place an order", expected="uses the idempotency key")


def test_a_path_is_read_inside_the_skill_only():
    assert read_in_skill(SKILL, "references/api.md") == (API, True)
    assert read_in_skill(SKILL, "./references//api.md") == (API, True)
    assert read_in_skill(SKILL, "SKILL.md") == (SKILL.text, True)
    for outside in ("../secrets.txt", "/etc/passwd", "references/../../x", "~/.ssh/id_rsa"):
        text, found = read_in_skill(SKILL, outside)
        assert not found and "not a path inside the skill" in text, outside
    text, found = read_in_skill(SKILL, "references/missing.md")
    assert not found and "references/api.md" in text  # the model is told what it may read
    assert read_in_skill(SKILL, "assets/logo.png") == ("error: assets/logo.png cannot be read as text (binary)", False)
    # the author's evals are the test, never the skill: hidden, but for the files the case itself names
    assert not read_in_skill(SKILL, "evals/evals.json")[1]
    assert not read_in_skill(SKILL, "evals/files/orders.csv")[1]
    assert read_in_skill(SKILL, "evals/files/orders.csv", ("evals/files/orders.csv",))[1]


def _pair(server: ScriptedOpenAI, tmp_path: Path, prompt: TestPrompt = PROMPT, **settings):
    chosen = make_settings(server, **settings)
    client = LLMClient(chosen)
    return client, measure_pair(client, chosen, BaselineCache(tmp_path), SKILL, prompt)


def test_the_target_reads_references_through_its_tool_and_the_grader_is_told(
        server: ScriptedOpenAI, responder: LubanResponder, tmp_path: Path):
    responder.reads = ["references/api.md", "../outside.txt", "evals/evals.json"]
    client, pair = _pair(server, tmp_path)
    assert pair.access == TOOL and pair.unscored_reason is None
    assert pair.files_read == ("references/api.md", "../outside.txt (not found)", "evals/evals.json (not found)")
    runs = [r for r in server.chat_requests() if kind_of(r) == "with_skill"]
    assert len(runs) == 4 and all(r.body["tools"][0]["function"]["name"] == "read_file" for r in runs)
    answered = [m for m in runs[-1].body["messages"] if m["role"] == "tool"]
    assert answered[0]["content"] == API and "not a path inside the skill" in answered[1]["content"]
    assert "no file 'evals/evals.json'" in answered[2]["content"]
    assert API not in runs[0].body["messages"][0]["content"]  # read when asked for, not given
    baseline = next(r for r in server.chat_requests() if kind_of(r) == "baseline")
    assert "tools" not in baseline.body  # the baseline gets no tool
    grade = next(r for r in server.chat_requests() if kind_of(r) == "grade")
    assert "through its read_file tool: references/api.md" in grade.body["messages"][1]["content"]
    assert pair.tokens_with == 3 * 320 + 960  # every call of the loop is counted
    assert client.facts()["target_files"] == {"target-m": "read_file tool"}
    assert fallbacks.of_pairs([pair]) == []


def test_reads_stop_at_the_setting_and_the_model_must_answer(server: ScriptedOpenAI, responder: LubanResponder,
                                                             tmp_path: Path):
    responder.reads = ["references/api.md"] * 5
    _client, pair = _pair(server, tmp_path, target_tool_reads=2)
    runs = [r for r in server.chat_requests() if kind_of(r) == "with_skill"]
    assert [r.body["tool_choice"] for r in runs] == ["auto", "auto", "none"]
    assert pair.files_read == ("references/api.md",) * 2 and pair.unscored_reason is None


@pytest.mark.parametrize("refusal", ["text", "http"])
def test_a_model_without_tool_calls_gets_the_referenced_files_inline(server: ScriptedOpenAI, responder: LubanResponder,
                                                                     tmp_path: Path, refusal: str):
    if refusal == "text":
        responder.tools = False
    else:
        server.responder = lambda r: (error(400, "tools param requires --jinja flag") if "tools" in r.body
                                      else responder(r))
    chosen = make_settings(server)
    client = LLMClient(chosen)
    cache = BaselineCache(tmp_path)
    pairs = [measure_pair(client, chosen, cache, SKILL, PROMPT.model_copy(update={"id": i})) for i in range(3)]
    probes = [r for r in server.chat_requests() if "tools" in r.body]
    assert len(probes) == 1  # asked once per model and run
    run = next(r for r in server.chat_requests() if kind_of(r) == "with_skill")
    system = run.body["messages"][0]["content"]
    assert API in system and "# Old notes" in system and "--- references/api.md ---" in system
    assert system.index("references/api.md ---") < system.index("references/old.md ---")  # referenced first
    assert '{"evals"' not in system and "tools" not in run.body
    assert all(p.access == INLINE and p.files_read == ("references/api.md", "references/old.md") for p in pairs)
    assert fallbacks.of_pairs(pairs).count(fallbacks.TARGET_INLINE) == 3
    assert "files inline" in client.facts()["target_files"]["target-m"]


def test_inline_fallback_keeps_to_its_budget_and_names_what_it_left_out(server: ScriptedOpenAI,
                                                                        responder: LubanResponder, tmp_path: Path):
    responder.tools = False
    big = TargetSkill(SKILL.text, (SourceFile("references/api.md", "word " * 3000),), ("references/api.md",))
    chosen = make_settings(server, target_context_tokens=500)
    measure_pair(LLMClient(chosen), chosen, BaselineCache(tmp_path), big, PROMPT)
    system = next(r for r in server.chat_requests() if kind_of(r) == "with_skill").body["messages"][0]["content"]
    assert "word word" not in system and "Not given (too large for the context): references/api.md" in system


def test_a_cases_files_are_read_through_the_tool_and_given_to_the_baseline(server: ScriptedOpenAI,
                                                                            responder: LubanResponder, tmp_path: Path):
    responder.reads = ["evals/files/orders.csv"]
    case = PROMPT.model_copy(update={"files": ("evals/files/orders.csv",)})
    _client, pair = _pair(server, tmp_path, case)
    assert pair.files_read == ("evals/files/orders.csv",)
    first = next(r for r in server.chat_requests() if kind_of(r) == "with_skill")
    assert "Files for this request (read them with the read_file tool): evals/files/orders.csv" in json.dumps(
        first.body["messages"])
    baseline = next(r for r in server.chat_requests() if kind_of(r) == "baseline")
    assert "id,qty\n1,2" in baseline.body["messages"][0]["content"]


def test_assertions_are_graded_with_quotes_and_accuracy_is_their_pass_share(server: ScriptedOpenAI,
                                                                            responder: LubanResponder, tmp_path: Path):
    responder.graded_assertions = [
        {"n": 1, "with_skill": "pass", "with_evidence": "followed the skill", "baseline": "fail", "baseline_evidence": "no"},
        {"n": 2, "with_skill": "pass", "with_evidence": "a sentence the answer never said", "baseline": "pass",
         "baseline_evidence": "baseline answer"},
        {"n": 3, "with_skill": "fail", "with_evidence": "no key", "baseline": "unsure", "baseline_evidence": ""},
    ]  # the fourth is not graded at all
    case = PROMPT.model_copy(update={"assertions": ("follows the skill", "says why", "uses a key", "is short")})
    _client, pair = _pair(server, tmp_path, case)
    grades = pair.assertions
    assert [g.with_skill for g in grades] == [True, None, False, None]
    assert [g.baseline for g in grades] == [False, True, None, None]
    assert grades[1].why_with == "its quote is not in the answer" and grades[3].why_with == "the grader did not grade it"
    assert pair.accuracy == 5.0 and pair.baseline_accuracy == 5.0  # 1 of 2 decided; 1 of 2 decided
    grade = next(r for r in server.chat_requests() if kind_of(r) == "grade")
    assert "1. follows the skill\n2. says why" in grade.body["messages"][1]["content"]


def test_without_a_decided_assertion_the_graders_reading_stands(server: ScriptedOpenAI, responder: LubanResponder,
                                                               tmp_path: Path):
    responder.graded_assertions = [{"n": 1, "with_skill": "unsure", "with_evidence": "", "baseline": "unsure",
                                    "baseline_evidence": ""}]
    _client, pair = _pair(server, tmp_path, PROMPT.model_copy(update={"assertions": ("anything",)}))
    assert pair.accuracy == 8.0 and pair.baseline_accuracy == 6.0 and pair.assertions[0].why_with == "the grader could not say"


def _with_references(collection: Path, most: int = 5):
    """Skills of the collection whose SKILL.md references a text file that exists, with that file's path."""
    from scoring.document import parse
    from scoring.validation import scan_references
    from workspace.skill_source import list_files, read_sources

    found = []
    for skill_md in sorted(collection.rglob("SKILL.md")):
        text = skill_md.read_text(encoding="utf-8", errors="replace")
        files = list_files(skill_md.parent)
        sources = read_sources(skill_md.parent, files)
        readable = {s.path: s.text for s in sources if s.text and not s.path.startswith("evals/")}
        refs = [r.target for r in scan_references(parse(text), files) if r.status == "exists"]
        first = next((r for r in refs if r in readable), None)
        if first is not None:
            found.append((skill_md.parent.name, text, files, sources, first, readable[first]))
        if len(found) == most:
            break
    return found


def test_real_skills_references_reach_the_judges_and_the_target_reads_them(skill_collection: Path, server: ScriptedOpenAI,
                                                                          responder: LubanResponder, tmp_path: Path):
    from judges.online_backend import OnlineBackend

    skills = _with_references(skill_collection)
    assert skills, f"no skill in {skill_collection} references a text file it ships"
    for name, text, files, sources, reference, content in skills:
        server.requests.clear()
        responder.reads = [reference]
        backend = OnlineBackend(make_settings(server), BaselineCache(tmp_path / name))
        ev = backend.evaluate(text, name, files, "full", [PROMPT], sources=sources)
        judged = [r for r in server.chat_requests() if kind_of(r) == "judge"]
        shown = [content.strip() in r.body["messages"][1]["content"] for r in judged]
        assert ev.panel is not None and len(judged) == 2
        assert all(shown) or f"{reference} (" in ev.panel.unseen, name  # given whole, or named as not shown
        final = [r for r in server.chat_requests() if kind_of(r) == "with_skill"][-1]
        assert [m["content"] for m in final.body["messages"] if m["role"] == "tool"] == [content], name
        assert ev.measurement is not None and ev.measurement.pairs[0].files_read == (reference,), name
