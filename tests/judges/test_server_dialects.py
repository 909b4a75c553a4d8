"""Servers as they are: structured output negotiated once, reply caps on every call, no resends from queueing.

The real openai client over HTTP to a loopback server scripted to answer as
llama-cpp-python, LM Studio and OpenAI's reasoning models do.
"""

from __future__ import annotations

import threading
import time

import pytest

from judges.llm import LLMClient
from judges.replies import Unscored
from judges.settings import Role
from judges.structure_judge import judge_once
from judges.usage import LLMError
from tests.judges.conftest import make_settings
from tests.support.openai_server import Scripted, ScriptedOpenAI, completion, error, reply

MESSAGES = [{"role": "user", "content": "hi"}]
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
# What llama-cpp-python's server answers to response_format json_schema: a pydantic validation error, as HTTP 500.
LLAMA_CPP_PYTHON_500 = ('{"error": {"message": "[{\'type\': \'literal_error\', \'loc\': (\'body\', \'response_format\', '
                        '\'type\'), \'msg\': \\"Input should be \'text\' or \'json_object\'\\"}]", "type": "internal_server_error"}}')


def llama_cpp_python(request) -> Scripted:
    """Refuses json_schema as llama-cpp-python does; takes json_object with a schema, and no format at all."""
    shape = (request.body.get("response_format") or {}).get("type")
    if shape == "json_schema":
        return Scripted(status=500, body=LLAMA_CPP_PYTHON_500.encode())
    return reply('{"ok": true}')


def test_a_500_validation_error_steps_down_at_once_and_is_remembered(server: ScriptedOpenAI):
    client = LLMClient(make_settings(server, max_retries=4))
    server.responder = llama_cpp_python
    for _ in range(3):
        assert client.chat("judge:x", "judge-a", MESSAGES, role=Role.JUDGE, schema=SCHEMA).text == '{"ok": true}'
    sent = [r.body.get("response_format", {}).get("type") for r in server.chat_requests()]
    assert sent == ["json_schema", "json_object", "json_object", "json_object"]  # one failed call, never retried
    assert client.usage.totals()["failed"] == 0 and client.usage.calls == 3
    facts = client.facts()
    assert facts["dialects"] == {"judge-a": "json_object+schema"} and "HTTP 500" in facts["step_downs"][0]


def test_each_model_is_negotiated_once_even_when_many_calls_start_together(server: ScriptedOpenAI):
    client = LLMClient(make_settings(server, max_concurrency=4))

    def slow_refusal(request) -> Scripted:
        time.sleep(0.2)
        return llama_cpp_python(request)

    server.responder = slow_refusal
    threads = [threading.Thread(target=client.chat, args=("judge:x", "judge-a", MESSAGES),
                                kwargs={"role": Role.JUDGE, "schema": SCHEMA}) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sent = [r.body.get("response_format", {}).get("type") for r in server.chat_requests()]
    assert sent.count("json_schema") == 1 and sent.count("json_object") == 4


def test_the_ladder_ends_with_instructions_when_no_format_is_taken(server: ScriptedOpenAI, client: LLMClient):
    server.queue(error(400, "'response_format.type' must be 'json_schema' or 'text'"),
                 error(422, "response_format json_object: unsupported"), reply('{"ok": true}'), reply('{"ok": false}'))
    client.chat("judge:x", "judge-a", MESSAGES, role=Role.JUDGE, schema=SCHEMA)
    client.chat("judge:x", "judge-a", MESSAGES, role=Role.JUDGE, schema=SCHEMA)
    third, fourth = server.chat_requests()[2:]
    assert "response_format" not in third.body and "response_format" not in fourth.body
    assert client.facts()["dialects"] == {"judge-a": "instructions"} and len(client.facts()["step_downs"]) == 2


def test_a_transient_error_while_negotiating_is_retried_not_taken_for_a_refusal(server: ScriptedOpenAI, client: LLMClient):
    server.queue(error(503, "loading model"), reply('{"ok": true}'))
    client.chat("judge:x", "judge-a", MESSAGES, role=Role.JUDGE, schema=SCHEMA)
    assert [r.body["response_format"]["type"] for r in server.chat_requests()] == ["json_schema", "json_schema"]
    assert client.facts()["dialects"] == {"judge-a": "json_schema"} and client.formats.fallbacks() == []


def test_a_format_set_in_the_settings_is_not_negotiated(server: ScriptedOpenAI):
    forced = LLMClient(make_settings(server, structured_output="json_object"))
    server.queue(error(400, "response_format json_object is not supported"))
    with pytest.raises(LLMError) as caught:
        forced.chat("judge:x", "judge-a", MESSAGES, role=Role.JUDGE, schema=SCHEMA)
    assert caught.value.kind == "bad_request" and len(server.chat_requests()) == 1
    off = LLMClient(make_settings(server, structured_output="off"))
    server.queue(reply('{"ok": true}'))
    off.chat("judge:x", "judge-a", MESSAGES, role=Role.JUDGE, schema=SCHEMA)
    assert "response_format" not in server.chat_requests()[-1].body


def test_a_deterministic_500_is_a_bad_request_sent_once_not_unavailable(server: ScriptedOpenAI):
    client = LLMClient(make_settings(server, max_retries=4))
    server.queue(Scripted(status=500, body=b'{"detail": "1 validation error: Input should be a valid integer"}'))
    with pytest.raises(LLMError) as caught:
        client.chat("judge:x", "judge-a", MESSAGES, role=Role.JUDGE)
    assert caught.value.kind == "bad_request" and "not retried" in str(caught.value)
    assert len(server.chat_requests()) == 1


def test_every_call_carries_its_roles_reply_cap(server: ScriptedOpenAI):
    client = LLMClient(make_settings(server, judge_reply_tokens=300, grader_reply_tokens=200, target_reply_tokens=100))
    server.responder = lambda request: reply("ok")
    for role in (Role.JUDGE, Role.GRADER, Role.TARGET, Role.EDITOR, Role.DESIGNER):
        client.chat(f"{role}:x", "judge-a", MESSAGES, role=role)
    client.chat("rewriter", "judge-a", MESSAGES, role=Role.EDITOR, reply_cap=2000)
    assert [r.body["max_tokens"] for r in server.chat_requests()] == [300, 200, 100, 768, 768, 2000]


def test_a_model_that_refuses_max_tokens_gets_max_completion_tokens_from_then_on(server: ScriptedOpenAI, client: LLMClient):
    server.queue(error(400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                            "'max_completion_tokens' instead."), reply("a"), reply("b"))
    assert client.chat("judge:x", "o-model", MESSAGES, role=Role.JUDGE).text == "a"
    client.chat("judge:x", "o-model", MESSAGES, role=Role.JUDGE)
    first, second, third = server.chat_requests()
    assert "max_tokens" in first.body and second.body["max_completion_tokens"] == third.body["max_completion_tokens"] == 1024
    assert "max_tokens" not in third.body


def test_a_reply_cut_at_its_cap_is_truncated_and_its_judge_unscored_with_the_raw_text(server: ScriptedOpenAI, client: LLMClient):
    rambling = '{"dims": {"dim2": {"score": 7, "rationale": "the workflow is the workflow is the workflow is'
    server.queue(Scripted(body=completion(rambling, 900, 1024, finish_reason="length")))
    verdict = judge_once(client, "judge-a", "judge-1", "---\nname: x\n---\n# X\n\nSome text here.\n", ())
    assert verdict.unscored_kind is Unscored.TRUNCATED and "cap of 1024 tokens" in (verdict.unscored_reason or "")
    assert verdict.raw == rambling and verdict.scores == {}
    assert len(server.chat_requests()) == 1  # not asked again: the same model rambles the same way
    assert client.usage.totals()["truncated"] == 1 and client.usage.totals()["failed"] == 0


def one_slot_server(seconds: float):
    """A server that works on one request at a time, as llama-cpp-python's does: the rest wait in its queue."""
    slot = threading.Lock()

    def answer(request) -> Scripted:
        with slot:
            time.sleep(seconds)
        return reply("ok")

    return answer


def test_calls_queued_behind_a_one_slot_server_wait_instead_of_being_sent_again(server: ScriptedOpenAI):
    # 3 calls at once, 0.5 s each on one slot: the last is answered after 1.5 s, beyond the 0.6 s a call may take
    # once the server works on it. Read as "dead" at 0.6 s, it would be sent again (and again) while still queued.
    client = LLMClient(make_settings(server, max_concurrency=3, timeout_seconds=0.6, max_retries=2))
    server.responder = one_slot_server(0.5)
    threads = [threading.Thread(target=client.chat, args=("judge:x", "judge-a", MESSAGES), kwargs={"role": Role.JUDGE})
               for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(server.chat_requests()) == 3 and client.usage.totals()["failed"] == 0
    assert client.read_timeout == pytest.approx(1.8)


def test_a_server_that_says_its_slots_gets_no_more_calls_at_once():
    from judges.server import probe

    with ScriptedOpenAI(models=["judge-a"], props={"total_slots": 1}) as server:
        settings = make_settings(server, max_concurrency=4, timeout_seconds=2.0)
        client = LLMClient(settings, facts=probe(settings))
        assert (client.slots, client.concurrency, client.read_timeout) == (1, 1, 2.0)
        server.responder = one_slot_server(0.2)
        threads = [threading.Thread(target=client.chat, args=("judge:x", "judge-a", MESSAGES), kwargs={"role": Role.JUDGE})
                   for _ in range(3)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        arrivals = sorted(r.at for r in server.chat_requests())
        assert arrivals[2] - arrivals[0] >= 0.35 and time.monotonic() - started >= 0.6  # sent one after another
