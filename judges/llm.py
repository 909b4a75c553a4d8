"""The one place Luban calls a language model: the `openai` client, bounded and accounted for.

- Retries with exponential backoff and jitter on 429/5xx/connection errors,
  honouring ``Retry-After``, are the openai client's own (``max_retries``); an
  auth error is not retried and becomes a message that names the variable.
- A hard budget (calls and tokens) is checked before every call; a call that
  would exceed it raises ``BudgetExhausted`` and is never sent.
- Concurrency is bounded by a semaphore of ``max_concurrency``.
- Every call's model, tokens in/out, latency and outcome is recorded.
- The API key is scrubbed from every message this module produces.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from judges.settings import Settings


class LLMError(RuntimeError):
    """A call that did not produce a reply; ``kind`` says what to do about it."""

    def __init__(self, kind: str, message: str):
        self.kind = kind  # auth | budget | unavailable | bad_request | refused
        super().__init__(message)


class BudgetExhausted(LLMError):
    def __init__(self, message: str):
        super().__init__("budget", message)


@dataclass(frozen=True)
class CallRecord:
    role: str
    model: str
    tokens_in: int
    tokens_out: int
    latency_s: float
    outcome: str  # ok | error kind


@dataclass(frozen=True)
class Reply:
    text: str
    model: str
    tokens_in: int
    tokens_out: int


@dataclass
class Usage:
    """Thread-safe totals for a run, and the per-call records the report shows."""

    max_calls: int
    max_tokens: int
    calls: int = 0
    tokens: int = 0
    records: list[CallRecord] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reserve(self) -> None:
        with self._lock:
            if self.calls >= self.max_calls:
                raise BudgetExhausted(f"LLM call budget reached ({self.calls}/{self.max_calls} calls, LUBAN_MAX_LLM_CALLS)")
            if self.tokens >= self.max_tokens:
                raise BudgetExhausted(f"LLM token budget reached ({self.tokens}/{self.max_tokens} tokens, LUBAN_MAX_TOKENS)")
            self.calls += 1

    def remaining_calls(self) -> int:
        with self._lock:
            return self.max_calls - self.calls

    def record(self, record: CallRecord) -> None:
        with self._lock:
            self.tokens += record.tokens_in + record.tokens_out
            self.records.append(record)

    def totals(self) -> dict[str, Any]:
        with self._lock:
            return {
                "calls": self.calls,
                "tokens_in": sum(r.tokens_in for r in self.records),
                "tokens_out": sum(r.tokens_out for r in self.records),
                "latency_s": round(sum(r.latency_s for r in self.records), 3),
                "failed": sum(r.outcome != "ok" for r in self.records),
                "by_role": _count_by(self.records),
            }


def _count_by(records: list[CallRecord]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in records:
        counts[r.role] = counts.get(r.role, 0) + 1
    return counts


class LLMClient:
    """Chat completions against any OpenAI-compatible server."""

    def __init__(self, settings: Settings, usage: Usage | None = None,
                 gate: Callable[[], AbstractContextManager[object]] | None = None):
        """``usage``: the budget calls are counted against (one per run unless a batch shares one across its
        processes); ``gate``: a slot every call holds besides this process's own, e.g. a cluster-wide limit."""
        from openai import OpenAI  # heavy: imported only when a model is really used

        self.settings = settings
        self.usage = usage or Usage(settings.max_llm_calls, settings.max_tokens)
        self._slots = threading.BoundedSemaphore(settings.max_concurrency)
        self._gate = gate or nullcontext
        self._schema_ok = settings.structured_output != "off"
        self._client = OpenAI(
            api_key=settings.api_key.reveal() or "not-needed",  # local servers accept any key
            base_url=settings.base_url,
            timeout=settings.timeout_seconds,
            max_retries=settings.max_retries,
        )

    def scrub(self, text: str) -> str:
        key = self.settings.api_key.reveal()
        return text.replace(key, "***") if key else text

    def chat(self, role: str, model: str, messages: list[dict[str, str]], schema: dict | None = None,
             temperature: float = 0.0) -> Reply:
        """One completion. Raises LLMError (never returns a half reply)."""
        self.usage.reserve()
        with self._slots, self._gate():
            started = time.monotonic()
            try:
                response = self._create(model, messages, schema, temperature)
            except LLMError as err:
                self.usage.record(CallRecord(role, model, 0, 0, time.monotonic() - started, err.kind))
                raise
        latency = time.monotonic() - started
        usage = getattr(response, "usage", None)
        tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        choices = getattr(response, "choices", None) or []
        text = (choices[0].message.content or "") if choices else ""
        self.usage.record(CallRecord(role, model, tokens_in, tokens_out, latency, "ok"))
        return Reply(text, model, tokens_in, tokens_out)

    def _create(self, model: str, messages: list[dict[str, str]], schema: dict | None, temperature: float):
        import openai

        kwargs: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
        if schema is not None and self._schema_ok:
            kwargs["response_format"] = {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
        try:
            return self._client.chat.completions.create(**kwargs)
        except openai.BadRequestError as err:
            if "response_format" in kwargs and self.settings.structured_output == "auto":
                self._schema_ok = False  # this server has no structured output: instruct and parse instead
                kwargs.pop("response_format")
                try:
                    return self._client.chat.completions.create(**kwargs)
                except openai.OpenAIError as again:
                    raise self._classify(again) from None
            raise self._classify(err) from None
        except openai.OpenAIError as err:
            raise self._classify(err) from None

    def _classify(self, err: Exception) -> LLMError:
        import openai

        where = self.settings.base_url or "the OpenAI API"
        if isinstance(err, (openai.AuthenticationError, openai.PermissionDeniedError)):
            return LLMError("auth", f"{where} refused the credentials ({type(err).__name__}); "
                                    "set OPENAI_API_KEY to a valid key (or OPENAI_BASE_URL to your server)")
        if isinstance(err, openai.NotFoundError):
            return LLMError("bad_request", f"{where}: model or endpoint not found; check LUBAN_JUDGE_MODEL / "
                                           "LUBAN_TARGET_MODEL / LUBAN_EDITOR_MODEL and OPENAI_BASE_URL")
        if isinstance(err, openai.BadRequestError):
            return LLMError("bad_request", self.scrub(f"{where} rejected the request: {err}"))
        if isinstance(err, (openai.APITimeoutError, openai.APIConnectionError)):
            return LLMError("unavailable", f"{where} did not answer ({type(err).__name__}) after "
                                           f"{self.settings.max_retries} retries; check the server is up")
        if isinstance(err, openai.APIStatusError):
            return LLMError("unavailable", self.scrub(f"{where} kept failing with HTTP {err.status_code} after "
                                                      f"{self.settings.max_retries} retries"))
        return LLMError("unavailable", self.scrub(f"{where}: {type(err).__name__}: {err}"))


def skill_messages(system_template: str, skill_text: str) -> list[dict[str, str]]:
    """The instructions as the system message, the skill as data inside a fresh random delimiter.

    The nonce is new on every call, so text inside the skill cannot close the
    block and speak as the instructions (prompt injection).
    """
    nonce = secrets.token_hex(8)
    return [{"role": "system", "content": system_template.format(nonce=nonce)},
            {"role": "user", "content": f"<skill-{nonce}>\n{skill_text}\n</skill-{nonce}>"}]
