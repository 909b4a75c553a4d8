"""Structured output as each server speaks it, negotiated once per server, model and run.

OpenAI-compatible servers disagree on ``response_format``: OpenAI, vLLM, Ollama,
LM Studio and llama.cpp's ``llama-server`` take ``{"type": "json_schema", ...}``;
llama-cpp-python's server answers that with HTTP 500 (a pydantic validation
error) and takes ``{"type": "json_object", "schema": ...}``; some take neither.
So the first structured call to a model tries the richest dialect and steps down
the ladder only when the server's answer says it cannot take the format (a
validation error, or a message that names ``response_format``) — never on a
timeout or an overloaded server. The answer is remembered for the rest of the run:
at most one failed call per step down, and the step down is a recorded fallback.

The prompts always describe the JSON they want, so the last rung (no
``response_format`` at all: instructions, then parse) reads the same replies.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Dialect(StrEnum):
    JSON_SCHEMA = "json_schema"  # {"type": "json_schema", "json_schema": {"name", "schema"}}: OpenAI, vLLM, llama-server
    JSON_OBJECT_SCHEMA = "json_object+schema"  # {"type": "json_object", "schema": ...}: llama-cpp-python, llama-server
    INSTRUCTIONS = "instructions"  # no response_format: the prompt asks for the JSON and the reply is parsed


LADDER: tuple[Dialect, ...] = (Dialect.JSON_SCHEMA, Dialect.JSON_OBJECT_SCHEMA, Dialect.INSTRUCTIONS)
SETTING_VALUES: dict[str, tuple[Dialect, ...]] = {
    "auto": LADDER,
    "json_schema": (Dialect.JSON_SCHEMA,),
    "on": (Dialect.JSON_SCHEMA,),  # the older spelling of json_schema
    "json_object": (Dialect.JSON_OBJECT_SCHEMA,),
    "off": (Dialect.INSTRUCTIONS,),
}


def response_format(dialect: Dialect, schema: dict[str, Any]) -> dict[str, Any] | None:
    if dialect is Dialect.JSON_SCHEMA:
        return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
    if dialect is Dialect.JSON_OBJECT_SCHEMA:
        return {"type": "json_object", "schema": schema}
    return None


# A server's answer that says the *request* is wrong, whatever the moment: pydantic's and FastAPI's validation
# errors (llama-cpp-python, vLLM, LM Studio), and plain "not supported" messages. Matched on the error body.
_VALIDATION = re.compile(r"validation error|input should be|field required|extra inputs are not permitted|"
                         r"value_error|literal_error|unprocessable|invalid_request_error|not supported|unsupported|"
                         r"must be one of|is not one of|unknown (field|parameter|variant)|unrecognized", re.IGNORECASE)
_NAMES_FORMAT = re.compile(r"response_format|json_schema|json_object|structured output|guided_json|grammar", re.IGNORECASE)
DETERMINISTIC_STATUS = frozenset({400, 401, 403, 404, 405, 413, 415, 422})


def deterministic(status: int | None, body: str) -> bool:
    """An error the same request would get again: a 4xx that is not about time or load, or a 5xx whose body is a
    validation error (llama-cpp-python answers a request it cannot parse with 500). Never worth a retry."""
    if status in DETERMINISTIC_STATUS:
        return True
    return status is not None and status >= 500 and bool(_VALIDATION.search(body) or _NAMES_FORMAT.search(body))


def refuses_format(status: int | None, body: str) -> bool:
    """The server cannot take this ``response_format``: a deterministic error whose body names the format. Any other
    refusal (a prompt over the context, a bad key) is the request's own problem, and stepping down would not help."""
    return status not in (401, 403) and deterministic(status, body) and bool(_NAMES_FORMAT.search(body))


def names_cap_parameter(body: str) -> bool:
    """OpenAI's reasoning models refuse ``max_tokens`` and ask for ``max_completion_tokens``."""
    return "max_completion_tokens" in body and "max_tokens" in body


@dataclass(frozen=True)
class StepDown:
    """One rung the server refused, and its words for it (shown in run.json and the report)."""

    model: str
    refused: Dialect
    status: int | None
    said: str

    def describe(self) -> str:
        status = f"HTTP {self.status}" if self.status else "an error"
        return f"{self.model}: {self.refused.value} refused ({status}: {self.said[:160]})"


class Negotiation:
    """Which dialect each model takes, learned on its first structured call and kept for the run (thread-safe).

    While one thread negotiates for a model, the others wait for its answer instead of each paying a failed call.
    """

    def __init__(self, setting: str = "auto"):
        if setting not in SETTING_VALUES:
            raise ValueError(f"structured output must be one of {', '.join(SETTING_VALUES)}, not {setting!r}")
        self.ladder = SETTING_VALUES[setting]
        self._decided: dict[str, Dialect] = {}
        self._steps: list[StepDown] = []
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def decided(self, model: str) -> Dialect | None:
        if len(self.ladder) == 1:  # set, not negotiated: nothing to learn
            return self.ladder[0]
        with self._guard:
            return self._decided.get(model)

    @contextmanager
    def negotiating(self, model: str) -> Iterator[None]:
        with self._guard:
            lock = self._locks.setdefault(model, threading.Lock())
        with lock:
            yield

    def settle(self, model: str, dialect: Dialect) -> None:
        with self._guard:
            self._decided[model] = dialect

    def step_down(self, step: StepDown) -> None:
        with self._guard:
            self._steps.append(step)

    def facts(self) -> dict[str, Any]:
        """What was learned: each model's dialect and every refusal on the way (run.json, the report, doctor)."""
        with self._guard:
            return {"dialects": {m: d.value for m, d in sorted(self._decided.items())},
                    "step_downs": [s.describe() for s in self._steps]}

    def fallbacks(self) -> list[str]:
        """A model that ended below json_schema, as a fallback to count."""
        with self._guard:
            return [f"structured output for {m}: {d.value}" for m, d in sorted(self._decided.items())
                    if d is not Dialect.JSON_SCHEMA and len(self.ladder) > 1]
