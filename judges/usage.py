"""What the run's LLM calls cost and how they fail: each call's record, the run's hard budget (calls and tokens,
thread-safe), and the errors a call raises — ``BudgetExhausted`` before a call that would exceed the budget is sent."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any


class LLMError(RuntimeError):
    """A call that did not produce a reply; ``kind`` says what to do about it."""

    def __init__(self, kind: str, message: str):
        self.kind = kind  # auth | budget | unavailable | bad_request | refused
        super().__init__(message)


class BudgetExhausted(RuntimeError):
    """The run's hard LLM budget is spent. Not an LLMError on purpose: a grader handles a failed call by marking its
    dimensions unscored, and a budget that could be caught that way would turn the hard stop into "unscored" — the run
    stops at it instead, every record kept, and says which budget."""

    kind = "budget"


@dataclass(frozen=True)
class CallRecord:
    role: str  # the call's label, e.g. judge:judge-1
    model: str
    tokens_in: int
    tokens_out: int
    latency_s: float
    outcome: str  # ok | truncated | error kind
    cap: int | None = None  # the reply cap it was sent with


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
            records = list(self.records)
        return {
            "calls": self.calls,
            "tokens_in": sum(r.tokens_in for r in records),
            "tokens_out": sum(r.tokens_out for r in records),
            "latency_s": round(sum(r.latency_s for r in records), 3),
            "failed": sum(r.outcome not in ("ok", "truncated") for r in records),
            "truncated": sum(r.outcome == "truncated" for r in records),
            "over_cap": sum(r.cap is not None and r.tokens_out > r.cap for r in records),
            "by_role": _count_by(records),
            "largest_reply_by_role": _largest_by(records),
        }


def _count_by(records: list[CallRecord]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in records:
        counts[r.role] = counts.get(r.role, 0) + 1
    return counts


def _largest_by(records: list[CallRecord]) -> dict[str, dict[str, int | None]]:
    """Each call label's largest reply and the cap it was sent with: a reply over its cap would show here."""
    largest: dict[str, tuple[int, int | None]] = {}
    for r in records:
        if r.role not in largest or r.tokens_out >= largest[r.role][0]:
            largest[r.role] = (r.tokens_out, r.cap)
    return {role: {"tokens": tokens, "cap": cap} for role, (tokens, cap) in sorted(largest.items())}
