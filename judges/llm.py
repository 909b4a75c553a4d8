"""The one place Luban calls a language model: the `openai` client, bounded and accounted for.

- Every call has a reply cap (``max_tokens``) for its role; a reply cut there
  comes back marked ``truncated`` (its text kept), for the caller to leave unscored.
- Structured output is negotiated per server and model (``structured_output.py``).
- Retries with exponential backoff and jitter on 429/5xx/connection errors,
  honouring ``Retry-After``, are the openai client's own (``max_retries``); an
  error the same request would get again (a validation error, even one a server
  sends as HTTP 500) is marked not to be retried, and is never "unavailable".
- Concurrency: at most ``max_concurrency`` calls in flight, and no more than
  the server's slots where it says how many it has. A server that works on
  fewer calls than are sent queues the rest, so the read timeout allows for
  the queue: ``timeout_seconds`` × ⌈calls in flight / slots⌉ (slots unknown:
  1). A queued call then never times out and is sent again while the server
  is still busy with the calls ahead of it — that resend is what made a
  one-slot llama.cpp server fall further behind with every call.
- A hard budget (calls and tokens) is checked before every call; a call that
  would exceed it raises ``BudgetExhausted`` and is never sent.
- Every call's role, model, tokens, latency and outcome is recorded; the API
  key is scrubbed from every message this module produces.
"""

from __future__ import annotations

import math
import secrets
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from judges.server import ServerFacts
from judges.settings import Role, Settings
from judges.structured_output import (
    Dialect,
    Negotiation,
    StepDown,
    deterministic,
    names_cap_parameter,
    refuses_format,
    response_format,
)
from judges.tool_support import ToolSupport
from judges.usage import CallRecord, LLMError, Usage

CONNECT_TIMEOUT = 10.0


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON, as the model wrote it


@dataclass(frozen=True)
class Reply:
    text: str
    model: str
    tokens_in: int
    tokens_out: int
    finish_reason: str = "stop"
    cap: int | None = None
    tool_calls: tuple[ToolCall, ...] = ()  # the functions the model asked to call (a tool loop answers them)
    seconds: float = 0.0  # the call's latency
    tokens_cached: int = 0  # prompt tokens the server's cache served (OpenAI's cached_tokens, llama.cpp's cache_n)

    @property
    def truncated(self) -> bool:
        """Cut at the reply cap: the text is the model's, but not all of what it meant to say."""
        return self.finish_reason == "length"

    def cut_note(self) -> str:
        return f"reply cut at the cap of {self.cap} tokens (finish_reason 'length')"


def _no_retry_when_deterministic(response: Any) -> None:
    """An httpx response hook: a 5xx whose body is a validation error will be the same on every try, so the openai
    client is told (its own ``x-should-retry`` header) not to retry it."""
    if response.status_code >= 500 and "x-should-retry" not in response.headers:
        response.read()
        if deterministic(response.status_code, response.text):
            response.headers["x-should-retry"] = "false"


class LLMClient:
    """Chat completions against any OpenAI-compatible server."""

    def __init__(self, settings: Settings, usage: Usage | None = None,
                 gate: Callable[[], AbstractContextManager[object]] | None = None, facts: ServerFacts | None = None):
        """``usage``: the budget calls are counted against (one per run unless a batch shares one across its
        processes); ``gate``: a slot every call holds besides this process's own, e.g. a cluster-wide limit;
        ``facts``: what the server said about itself (its slots), from ``judges.server.probe``."""
        import openai  # heavy: imported only when a model is really used

        self.settings = settings
        self.usage = usage or Usage(settings.max_llm_calls, settings.max_tokens)
        self.slots = settings.server_slots or (facts.slots if facts else None)
        self.concurrency = min(settings.max_concurrency, self.slots) if self.slots else settings.max_concurrency
        self.read_timeout = settings.timeout_seconds * math.ceil(self.concurrency / (self.slots or 1))
        self.formats = Negotiation(settings.structured_output)
        self.tool_support = ToolSupport()  # whether each target model makes tool calls, asked once per run
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self._gate = gate or nullcontext
        self._cap_parameter: dict[str, str] = {}
        self._client = openai.OpenAI(
            api_key=settings.api_key.reveal() or "not-needed",  # local servers accept any key
            base_url=settings.base_url,
            timeout=openai.Timeout(self.read_timeout, connect=CONNECT_TIMEOUT),
            max_retries=settings.max_retries,
            http_client=openai.DefaultHttpxClient(event_hooks={"response": [_no_retry_when_deterministic]}),
        )

    def scrub(self, text: str) -> str:
        key = self.settings.api_key.reveal()
        return text.replace(key, "***") if key else text

    def facts(self) -> dict[str, Any]:
        """How this run talks to the server: dialects learned, slots, concurrency, timeout (run.json, the report)."""
        return self.formats.facts() | {"fallbacks": self.formats.fallbacks(), "slots": self.slots, "concurrency": self.concurrency,
                                       "read_timeout_s": self.read_timeout,
                                       "target_files": self.tool_support.facts(),
                                       "reply_caps": {r.value: self.settings.reply_cap(r) for r in Role}}

    def chat(self, label: str, model: str, messages: list[dict[str, Any]], *, role: Role, schema: dict | None = None,
             temperature: float = 0.0, reply_cap: int | None = None, tools: list[dict] | None = None,
             tool_choice: str | None = None) -> Reply:
        """One completion, its reply capped at ``reply_cap`` (default: the role's). Raises LLMError (never returns a
        half reply without saying so: a reply cut at the cap is ``truncated``). ``tools``: functions the model may
        call (the OpenAI tools API), asked for in ``Reply.tool_calls``."""
        cap = reply_cap or self.settings.reply_cap(role)
        self.usage.reserve()
        with self._slots, self._gate():
            started = time.monotonic()
            try:
                extra = {"tools": tools} | ({"tool_choice": tool_choice} if tool_choice else {}) if tools else {}
                response = self._create(model, messages, schema, temperature, cap, extra)
            except LLMError as err:
                self.usage.record(CallRecord(label, model, 0, 0, time.monotonic() - started, err.kind, cap))
                raise
        latency = time.monotonic() - started
        usage = getattr(response, "usage", None)
        tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        choices = getattr(response, "choices", None) or []
        text = (choices[0].message.content or "") if choices else ""
        finish = str(getattr(choices[0], "finish_reason", None) or "stop") if choices else "stop"
        calls = tuple(ToolCall(str(c.id), str(c.function.name), str(c.function.arguments or ""))
                      for c in (getattr(choices[0].message, "tool_calls", None) or []) if getattr(c, "function", None)
                      ) if choices else ()
        reply = Reply(text, model, tokens_in, tokens_out, finish, cap, calls, latency, _cached_tokens(response))
        self.usage.record(CallRecord(label, model, tokens_in, tokens_out, latency, "truncated" if reply.truncated else "ok", cap))
        return reply

    def _create(self, model: str, messages: list[dict[str, Any]], schema: dict | None, temperature: float, cap: int,
                extra: dict[str, Any]):
        request: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature} | extra
        if schema is None:
            return self._send(request, cap)
        dialect = self.formats.decided(model)
        if dialect is not None:
            return self._send(_formatted(request, dialect, schema), cap)
        with self.formats.negotiating(model):  # one thread asks; the others wait for its answer
            dialect = self.formats.decided(model)
            if dialect is not None:
                return self._send(_formatted(request, dialect, schema), cap)
            return self._negotiate(model, request, schema, cap)

    def _negotiate(self, model: str, request: dict[str, Any], schema: dict, cap: int):
        """The ladder, richest first; a rung is left only when the server's answer refuses its format."""
        import openai

        ladder = self.formats.ladder
        for rung, dialect in enumerate(ladder):
            try:
                response = self._send(_formatted(request, dialect, schema), cap, raw_errors=True)
            except openai.APIStatusError as err:
                body = _body(err)
                if rung + 1 < len(ladder) and refuses_format(err.status_code, body):
                    self.formats.step_down(StepDown(model, dialect, err.status_code, self.scrub(body)))
                    continue
                raise self._classify(err) from None
            except openai.OpenAIError as err:
                raise self._classify(err) from None
            self.formats.settle(model, dialect)
            return response
        raise AssertionError("the ladder ends with a rung that sends no response_format")  # pragma: no cover

    def _send(self, request: dict[str, Any], cap: int, raw_errors: bool = False):
        """One request with its cap, in the parameter this model takes (max_tokens, or max_completion_tokens for
        OpenAI's reasoning models, learned from its refusal like a dialect)."""
        import openai

        model = request["model"]
        parameter = self._cap_parameter.get(model, "max_tokens")
        capped: dict[str, Any] = request | {parameter: cap}
        try:
            try:
                return self._client.chat.completions.create(**capped)
            except openai.BadRequestError as err:
                if parameter != "max_tokens" or not names_cap_parameter(_body(err)):
                    raise
                self._cap_parameter[model] = "max_completion_tokens"
                retried: dict[str, Any] = request | {"max_completion_tokens": cap}
                return self._client.chat.completions.create(**retried)
        except openai.OpenAIError as err:
            if raw_errors and isinstance(err, openai.APIStatusError):
                raise
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
        if isinstance(err, openai.APIStatusError) and deterministic(err.status_code, _body(err)):
            return LLMError("bad_request", self.scrub(f"{where} rejected the request (HTTP {err.status_code}, not "
                                                      f"retried: the same request gets the same answer): {_body(err)[:300]}"))
        if isinstance(err, (openai.APITimeoutError, openai.APIConnectionError)):
            return LLMError("unavailable", f"{where} did not answer ({type(err).__name__}) within {self.read_timeout:g} s, "
                                           f"after {self.settings.max_retries} retries; check the server is up "
                                           "(luban doctor)")
        if isinstance(err, openai.APIStatusError):
            return LLMError("unavailable", self.scrub(f"{where} kept failing with HTTP {err.status_code} after "
                                                      f"{self.settings.max_retries} retries"))
        return LLMError("unavailable", self.scrub(f"{where}: {type(err).__name__}: {err}"))


def _cached_tokens(response: Any) -> int:
    """The prompt tokens a server's cache served: OpenAI's ``usage.prompt_tokens_details.cached_tokens`` (llama.cpp's
    server fills it too), else llama.cpp's own ``timings.cache_n``; 0 where the server says neither."""
    details = getattr(getattr(response, "usage", None), "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None)
    if cached is None:
        timings = (getattr(response, "model_extra", None) or {}).get("timings") or {}
        cached = timings.get("cache_n") if isinstance(timings, dict) else None
    return int(cached) if isinstance(cached, int | float) else 0


def _formatted(request: dict[str, Any], dialect: Dialect, schema: dict) -> dict[str, Any]:
    shaped = response_format(dialect, schema)
    return request | {"response_format": shaped} if shaped is not None else request


def _body(err: Exception) -> str:
    """The server's own words for an error (its JSON body, else the message)."""
    response = getattr(err, "response", None)
    try:
        text = response.text if response is not None else ""
    except Exception:  # noqa: BLE001 - a body that cannot be read leaves the message to speak
        text = ""
    return text or str(err)


def call_markers(nonce: str, *markers: str) -> str:
    """The system message's last line: this call's data markers (``markers`` with ``{nonce}`` in them).

    The nonce is new on every call, so text inside the data cannot close its
    block and speak as the instructions (prompt injection). It stands after the
    instructions, never inside them: every call then begins with the same
    tokens, and a server's prompt cache (llama.cpp, vLLM, OpenAI) reuses them
    instead of reading the rubric again on every judge call.
    """
    shown = ", ".join(m.format(nonce=nonce) for m in markers)
    return f"\n\nThis call's data markers: {shown}."


SKILL_MARKERS = ("<skill-{nonce}> … </skill-{nonce}>",)


def skill_messages(system: str, skill_text: str) -> list[dict[str, str]]:
    """The instructions as the system message, the skill as data inside a fresh random delimiter (``call_markers``)."""
    nonce = secrets.token_hex(8)
    return [{"role": "system", "content": system + call_markers(nonce, *SKILL_MARKERS)},
            {"role": "user", "content": f"<skill-{nonce}>\n{skill_text}\n</skill-{nonce}>"}]
