"""The real openai client against the scripted loopback server: retries, refusals, budget, redaction."""

from __future__ import annotations

import threading
import time

import pytest

from judges.llm import LLMClient
from judges.settings import Role
from judges.usage import BudgetExhausted, LLMError
from tests.judges.conftest import TEST_KEY, make_settings
from tests.support.openai_server import Scripted, ScriptedOpenAI, error, reply

MESSAGES = [{"role": "user", "content": "hi"}]


def test_good_answer_is_returned_and_recorded(server: ScriptedOpenAI, client: LLMClient):
    server.queue(reply("hello"))
    answer = client.chat("judge:test", "judge-a", MESSAGES, role=Role.JUDGE)
    assert answer.text == "hello" and answer.tokens_in == 100 and answer.tokens_out == 50
    (record,) = client.usage.records
    assert (record.role, record.model, record.tokens_in, record.tokens_out, record.outcome) == ("judge:test", "judge-a", 100, 50, "ok")
    assert server.chat_requests()[0].body["model"] == "judge-a"
    assert server.chat_requests()[0].headers["authorization"] == f"Bearer {TEST_KEY}"


def test_429_with_retry_after_is_waited_for_then_retried(server: ScriptedOpenAI, client: LLMClient):
    server.queue(error(429, "slow down", {"Retry-After": "1"}), reply("ok"))
    assert client.chat("r", "judge-a", MESSAGES, role=Role.JUDGE).text == "ok"
    first, second = server.chat_requests()
    assert second.at - first.at >= 0.9  # the server's Retry-After was honoured
    assert client.usage.calls == 1  # one logical call, however many attempts


def test_500s_are_retried_with_backoff(server: ScriptedOpenAI, client: LLMClient):
    server.queue(error(500), error(503), reply("ok"))
    assert client.chat("r", "judge-a", MESSAGES, role=Role.JUDGE).text == "ok"
    assert len(server.chat_requests()) == 3


def test_a_429_storm_ends_in_a_labelled_error(server: ScriptedOpenAI, client: LLMClient):
    server.queue(*[error(429, headers={"Retry-After": "0"})] * 5)
    with pytest.raises(LLMError) as caught:
        client.chat("r", "judge-a", MESSAGES, role=Role.JUDGE)
    assert caught.value.kind == "unavailable" and "HTTP 429" in str(caught.value)
    assert len(server.chat_requests()) == 3  # first try + max_retries (2)
    assert client.usage.records[-1].outcome == "unavailable"


def test_auth_error_is_not_retried_and_names_the_variable(server: ScriptedOpenAI, client: LLMClient):
    server.queue(error(401, f"Incorrect API key provided: {TEST_KEY}"))
    with pytest.raises(LLMError) as caught:
        client.chat("r", "judge-a", MESSAGES, role=Role.JUDGE)
    assert caught.value.kind == "auth" and "OPENAI_API_KEY" in str(caught.value)
    assert len(server.chat_requests()) == 1
    assert TEST_KEY not in str(caught.value) and TEST_KEY not in repr(caught.value)


def test_server_echoing_the_key_never_leaks_it(server: ScriptedOpenAI, client: LLMClient):
    server.queue(error(400, f"bad request for key {TEST_KEY}"))
    with pytest.raises(LLMError) as caught:
        client.chat("r", "judge-a", MESSAGES, role=Role.JUDGE)
    assert TEST_KEY not in str(caught.value) and "***" in str(caught.value)


def test_timeout_is_an_unavailable_error(server: ScriptedOpenAI):
    client = LLMClient(make_settings(server, timeout_seconds=0.3, max_retries=1, max_concurrency=1))
    server.queue(Scripted(body={}, delay=1.0), Scripted(body={}, delay=1.0))
    started = time.monotonic()
    with pytest.raises(LLMError) as caught:
        client.chat("r", "judge-a", MESSAGES, role=Role.JUDGE)
    assert caught.value.kind == "unavailable" and "did not answer" in str(caught.value)
    assert time.monotonic() - started < 5


def test_connection_refused_is_an_unavailable_error():
    from judges.settings import Secret, Settings

    client = LLMClient(Settings(api_key=Secret("k"), base_url="http://127.0.0.1:9/v1", max_retries=1, timeout_seconds=2))
    with pytest.raises(LLMError) as caught:
        client.chat("r", "m", MESSAGES, role=Role.JUDGE)
    assert caught.value.kind == "unavailable"


def test_truncated_body_is_retried_then_reported(server: ScriptedOpenAI, client: LLMClient):
    server.queue(Scripted(body=b'{"id": "x", "choices": [', truncate=True), reply("ok"))
    assert client.chat("r", "judge-a", MESSAGES, role=Role.JUDGE).text == "ok"


def test_budget_refuses_the_call_before_sending(server: ScriptedOpenAI):
    client = LLMClient(make_settings(server, max_llm_calls=2))
    server.queue(reply("1"), reply("2"), reply("3"))
    client.chat("r", "judge-a", MESSAGES, role=Role.JUDGE)
    client.chat("r", "judge-a", MESSAGES, role=Role.JUDGE)
    with pytest.raises(BudgetExhausted, match="LUBAN_MAX_LLM_CALLS"):
        client.chat("r", "judge-a", MESSAGES, role=Role.JUDGE)
    assert len(server.chat_requests()) == 2


def test_token_budget(server: ScriptedOpenAI):
    client = LLMClient(make_settings(server, max_tokens=120))
    server.queue(reply("1"), reply("2"))
    client.chat("r", "judge-a", MESSAGES, role=Role.JUDGE)  # 150 tokens used
    with pytest.raises(BudgetExhausted, match="LUBAN_MAX_TOKENS"):
        client.chat("r", "judge-a", MESSAGES, role=Role.JUDGE)


def test_structured_output_steps_down_once_when_the_server_refuses_it(server: ScriptedOpenAI, client: LLMClient):
    server.queue(error(400, "response_format json_schema is not supported"), reply('{"a": 1}'), reply('{"a": 2}'))
    schema = {"type": "object"}
    assert client.chat("r", "judge-a", MESSAGES, role=Role.JUDGE, schema=schema).text == '{"a": 1}'
    client.chat("r", "judge-a", MESSAGES, role=Role.JUDGE, schema=schema)
    first, second, third = server.chat_requests()
    assert first.body["response_format"]["type"] == "json_schema"
    assert second.body["response_format"] == {"type": "json_object", "schema": schema} == third.body["response_format"]
    assert client.facts()["dialects"] == {"judge-a": "json_object+schema"}
    assert client.formats.fallbacks() == ["structured output for judge-a: json_object+schema"]


def test_concurrency_is_bounded(server: ScriptedOpenAI):
    client = LLMClient(make_settings(server, max_concurrency=2))
    in_flight, peak, lock = [0], [0], threading.Lock()

    def slow(request):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(0.2)
        with lock:
            in_flight[0] -= 1
        return reply("ok")

    server.responder = slow
    threads = [threading.Thread(target=client.chat, args=("r", "judge-a", MESSAGES), kwargs={"role": Role.JUDGE}) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] == 2 and client.usage.calls == 6


def test_the_hard_budget_is_not_an_llm_error_a_grader_could_mark_unscored():
    """Graders turn an LLMError into unscored dimensions; a spent budget must stop the run instead, whichever grader
    meets it first — so it is outside that tree, and no grader has to remember to re-raise it."""
    try:
        raise BudgetExhausted("LLM call budget reached (3/3 calls, LUBAN_MAX_LLM_CALLS)")
    except LLMError:  # what every grader catches
        pytest.fail("a grader's `except LLMError` caught the hard budget")
    except BudgetExhausted as err:
        assert err.kind == "budget" and "LUBAN_MAX_LLM_CALLS" in str(err)
