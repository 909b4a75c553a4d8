"""Limits that every process of a batch shares, kept where every worker reaches: the Prefect server.

A batch that fans out (``--fan-out-to``) has a process per skill, on any
machine of the pool, so a limit one process keeps in memory limits nothing.
Prefect's global concurrency limits are counters the server keeps atomically:

- ``llm_limit`` (``LUBAN_LLM_LIMIT``): every LLM call holds one slot of that
  limit while it runs, so all workers together never have more calls in
  flight than the provider allows;
- ``llm_rate_limit`` (``LUBAN_LLM_RATE_LIMIT``): every call first takes a slot
  of a limit whose slots decay (``prefect gcl create NAME --limit 10
  --slot-decay-per-second 2``): calls per second across all workers;
- the batch's hard budget: two limits made for the batch run
  (``luban-calls-<run>``, ``luban-tokens-<run>``), sized to ``max_llm_calls`` and
  ``max_tokens``, whose slots are taken and never given back. A call that
  finds either full is refused (BudgetExhausted) in whichever process asks;
  the tokens, known only after a call, can be overshot by the calls in flight.

``luban setup-server --llm-limit N --llm-rate R`` creates the first two once
per server. None of this is used without a server: a batch on one machine keeps
its limits in its own process (judges/llm.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass

from judges.settings import Settings
from judges.usage import BudgetExhausted, Usage

LLM_LIMIT = "luban-llm"  # what `luban setup-server` creates and LUBAN_LLM_LIMIT names
LLM_RATE_LIMIT = "luban-llm-rate"


def llm_gate(settings: Settings) -> Callable[[], AbstractContextManager[object]] | None:
    """What every call holds besides its process's own slot: the server's limits the settings name (None: none)."""
    if not settings.llm_limit and not settings.llm_rate_limit:
        return None

    @contextmanager
    def gate() -> Iterator[None]:
        from prefect.concurrency.sync import concurrency, rate_limit

        if settings.llm_rate_limit:
            rate_limit(settings.llm_rate_limit, strict=True)
        if settings.llm_limit:
            with concurrency(settings.llm_limit, occupy=1, strict=True):
                yield
        else:
            yield

    return gate


def budget_names(batch_id: str) -> tuple[str, str]:
    return f"luban-calls-{batch_id}", f"luban-tokens-{batch_id}"


def open_batch_budget(settings: Settings, batch_id: str) -> None:
    """The batch's shared budget, created on the server before any process of the batch calls a model."""
    from prefect.client.orchestration import get_client

    calls, tokens = budget_names(batch_id)
    with get_client(sync_client=True) as client:
        client.upsert_global_concurrency_limit_by_name(calls, settings.max_llm_calls)
        client.upsert_global_concurrency_limit_by_name(tokens, settings.max_tokens)


def close_batch_budget(batch_id: str) -> None:
    """The batch's budget limits removed from the server once the batch is over (what it spent is in its report)."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        for name in budget_names(batch_id):
            with suppress(ObjectNotFound):
                client.delete_global_concurrency_limit_by_name(name)


@dataclass
class BatchBudget(Usage):
    """This process's usage, counted against the batch's shared budget too (``open_batch_budget``)."""

    batch_id: str = ""

    def reserve(self) -> None:
        super().reserve()  # this process's own count first: it still says what this process spent
        calls, tokens = budget_names(self.batch_id)
        left = _left(tokens)
        if left is None:  # a process that outlives its batch (a task still in flight when it ended) calls nothing
            raise BudgetExhausted(f"the batch's LLM budget is closed: its batch is over ({self.batch_id})")
        if left <= 0:
            raise BudgetExhausted(self._spent("token", self.max_tokens, "LUBAN_MAX_TOKENS"))
        if not _take(calls, 1):
            raise BudgetExhausted(self._spent("call", self.max_calls, "LUBAN_MAX_LLM_CALLS"))

    @staticmethod
    def _spent(kind: str, size: int, setting: str) -> str:
        return f"the batch's LLM {kind} budget is spent ({size} {kind}s across all of its processes, {setting})"

    def record(self, record) -> None:
        super().record(record)
        spent = record.tokens_in + record.tokens_out
        tokens = budget_names(self.batch_id)[1]
        if spent and not _take(tokens, spent):  # this call overshot: the rest is taken, and every process sees none left
            _take(tokens, max(0, _left(tokens) or 0))


def _left(name: str) -> int | None:
    """What the limit ``name`` has left; None when it is gone (the batch that made it is over)."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            limit = client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            return None
    return limit.limit - limit.active_slots


def _take(name: str, slots: int) -> bool:
    """``slots`` of the limit ``name`` taken for good; False when it has fewer left (the server answers 423, or 422
    when they are more than the whole limit) or when it is gone: the server grants slots of a limit it does not
    have (it acquires every limit it finds, and finds none), and a budget that is gone must not be a budget without
    end."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import PrefectHTTPStatusError

    with get_client(sync_client=True) as client:
        try:
            response = client.increment_concurrency_slots([name], slots, "concurrency")
        except PrefectHTTPStatusError as err:
            if err.response.status_code in (422, 423):  # more than the limit itself; more than it has left
                return False
            raise
    return any(limit.get("name") == name for limit in response.json())
