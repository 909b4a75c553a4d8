"""Limits every process of a batch shares, kept by a real Prefect server (the test harness): LLM calls in flight
across clients, and one hard call budget for a batch whatever process spends it; the real `openai` client talks to a
loopback server that counts what is in flight at once."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import replace

import pytest

from judges.llm import LLMClient
from judges.settings import Role, Settings, resolve
from judges.usage import BudgetExhausted, CallRecord
from tests.support.openai_server import ScriptedOpenAI, reply

pytestmark = pytest.mark.usefixtures("prefect_api")


class InFlight:
    """A responder that holds each call a while and remembers the most calls it held at once."""

    def __init__(self, hold: float = 0.15):
        self.hold, self.now, self.peak, self._lock = hold, 0, 0, threading.Lock()

    def __call__(self, request):
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(self.hold)
        with self._lock:
            self.now -= 1
        return reply("ok")


def calls_at_once(settings: Settings, clients: int = 2, threads_each: int = 3) -> int:
    """The most calls the server saw at once when ``clients`` clients (each its own process's limit of 4) each make
    ``threads_each`` calls at the same time."""
    from flows.server.limits import llm_gate

    server = ScriptedOpenAI()
    server.responder = counter = InFlight()
    with server:
        settings = replace(settings, base_url=server.base_url, max_retries=0)
        made = [LLMClient(settings, gate=llm_gate(settings)) for _ in range(clients)]
        threads = [threading.Thread(target=client.chat, args=("judge", "m", [{"role": "user", "content": "hi"}]),
                                    kwargs={"role": Role.JUDGE})
                   for client in made for _ in range(threads_each)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert len(server.chat_requests()) == clients * threads_each
    return counter.peak


def test_llm_calls_from_every_client_stay_within_the_servers_limit():
    from prefect.client.orchestration import get_client

    name = f"luban-llm-test-{uuid.uuid4().hex[:8]}"
    with get_client(sync_client=True) as client:
        client.upsert_global_concurrency_limit_by_name(name, 2)
    assert calls_at_once(Settings(max_concurrency=4)) > 2  # without the limit, the clients overlap freely
    assert calls_at_once(Settings(max_concurrency=4, llm_limit=name)) == 2


def test_the_limits_are_settings_like_any_other():
    settings = resolve({}, {"LUBAN_LLM_LIMIT": "luban-llm", "LUBAN_LLM_RATE_LIMIT": "luban-llm-rate"})
    assert (settings.llm_limit, settings.llm_rate_limit) == ("luban-llm", "luban-llm-rate")
    assert dict(settings.sources)["llm_limit"] == "$LUBAN_LLM_LIMIT"


def test_a_batch_budget_is_one_count_whatever_process_spends_it():
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    from flows.server.limits import BatchBudget, budget_names, close_batch_budget, open_batch_budget

    batch = uuid.uuid4().hex
    settings = Settings(max_llm_calls=5, max_tokens=1000)
    open_batch_budget(settings, batch)
    first, second = (BatchBudget(5, 1000, batch_id=batch) for _ in range(2))  # two workers' processes
    for usage in (first, second, first, second, first):
        usage.reserve()
    with pytest.raises(BudgetExhausted, match="batch's LLM call budget is spent"):
        second.reserve()  # its own count is 2 of 5: the batch's is 5 of 5
    assert (first.calls, second.calls) == (3, 3)  # each still says what it asked for

    tokens = uuid.uuid4().hex
    open_batch_budget(settings, tokens)
    first, second = (BatchBudget(5, 1000, batch_id=tokens) for _ in range(2))
    first.reserve(), second.reserve()
    first.record(CallRecord("judge", "m", 500, 100, 0.1, "ok"))
    second.record(CallRecord("judge", "m", 400, 100, 0.1, "ok"))  # 1 100 of 1 000: this call overshot
    for usage in (first, second):  # each has spent under 1 000 itself; the batch has none left
        with pytest.raises(BudgetExhausted, match="batch's LLM token budget is spent"):
            usage.reserve()

    for done in (batch, tokens):
        close_batch_budget(done)
        with get_client(sync_client=True) as client, pytest.raises(ObjectNotFound):
            client.read_global_concurrency_limit_by_name(budget_names(done)[0])


def test_a_budget_that_is_gone_grants_no_call_to_a_process_that_outlives_its_batch():
    """The server grants slots of a limit it does not have. A child's task still in flight when its batch ended
    (and closed its budget, one limit after the other) must find the budget spent, not endless."""
    from prefect.client.orchestration import get_client

    from flows.server.limits import BatchBudget, budget_names, close_batch_budget, open_batch_budget

    batch = uuid.uuid4().hex
    open_batch_budget(Settings(max_llm_calls=5, max_tokens=1000), batch)
    lingering = BatchBudget(5, 1000, batch_id=batch)
    lingering.reserve()
    with get_client(sync_client=True) as client:  # halfway through close_batch_budget: the calls limit is gone
        client.delete_global_concurrency_limit_by_name(budget_names(batch)[0])
    with pytest.raises(BudgetExhausted, match="call budget is spent"):
        lingering.reserve()
    close_batch_budget(batch)
    with pytest.raises(BudgetExhausted, match="budget is closed: its batch is over"):
        lingering.reserve()


def test_setup_server_creates_the_llm_limits_and_resizes_them_when_run_again():
    from prefect.client.orchestration import get_client

    from flows.server.limits import LLM_LIMIT, LLM_RATE_LIMIT
    from flows.server.setup import ensure_llm_limits

    assert len(ensure_llm_limits(3, 2.0)) == 2
    assert ensure_llm_limits(5, None) == [f"{LLM_LIMIT}: at most 5 LLM calls at once (LUBAN_LLM_LIMIT={LLM_LIMIT})"]
    with get_client(sync_client=True) as client:
        assert client.read_global_concurrency_limit_by_name(LLM_LIMIT).limit == 5
        rate = client.read_global_concurrency_limit_by_name(LLM_RATE_LIMIT)
    assert (rate.limit, rate.slot_decay_per_second) == (2, 2.0)
