"""The router: which skills of a listing a request goes to — build prompt → one call → parse.

The listing is the system message, the same for every query, and the request is the user message: every call begins
with the same tokens, so a server's prompt cache serves the listing after the first call (llama.cpp's server says how
many tokens it reused; ``Reply.tokens_cached``). The router answers by calling ``choose_skills`` with the names to
load, an empty list for none. Whether a model makes tool calls is asked once per model and run (the probe the target
model's file reads use); one that does not answers the same question as a JSON object, in the structured-output
dialect negotiated for it. A reply that names no readable answer, or a failed call, is missing data with the raw
reply kept — never "none chosen".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from judges.llm import LLMClient, Reply
from judges.replies import last_json_object
from judges.settings import Role
from judges.target_tools import tool_calls_refused
from judges.usage import LLMError
from scoring.route_figures import Pick

ROUTER_TEMPERATURE = 1.0  # clients route at their sampling default; at 0 the runs would agree and hide the noise
TOOL_NAME = "choose_skills"
CHOOSE_TOOL = {"type": "function", "function": {
    "name": TOOL_NAME,
    "description": "Load the skills this request needs, by name; an empty list when none of them fits.",
    "parameters": {"type": "object", "properties": {"skills": {"type": "array", "items": {"type": "string"}}},
                   "required": ["skills"]},
}}
CHOICE_SCHEMA = {"type": "object", "properties": {"skills": {"type": "array", "items": {"type": "string"}, "maxItems": 8}},
                 "required": ["skills"]}
ROUTER_SYSTEM = """You are the part of an AI agent that decides which skills to load before it answers a user's
request. A skill is loaded only when the request is what its description says it is for; load several when the
request needs several, and none when no skill fits — a wrong skill misleads the agent. {answer}

The skills available:

{listing}"""
BY_TOOL = "Answer by calling choose_skills with the names of the skills to load (an empty list for none)."
BY_JSON = ('Answer with one JSON object and nothing else: {"skills": [names of the skills to load]} '
           '(an empty list for none).')
TOOL, JSON_REPLY = "tool", "json"


@dataclass(frozen=True)
class Routed:
    """One routing call: the pick, how it was answered, and what it cost."""

    pick: Pick
    channel: str  # TOOL, JSON_REPLY, or "" when the call failed
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    seconds: float = 0.0
    raw: str = ""  # the reply as received, kept when it could not be read


def router_messages(listing: str, query: str, by_tool: bool) -> list[dict[str, Any]]:
    system = ROUTER_SYSTEM.format(answer=BY_TOOL if by_tool else BY_JSON, listing=listing)
    return [{"role": "system", "content": system}, {"role": "user", "content": query}]


def parse_choice(reply: Reply, names: frozenset[str]) -> tuple[tuple[str, ...], tuple[str, ...], str] | None:
    """(skills chosen in order, names given that are no skill, channel), or None when the reply holds no answer.
    The last ``choose_skills`` call counts, else the last JSON object in the text (a model that thinks aloud first)."""
    calls = [c for c in reply.tool_calls if c.name == TOOL_NAME]
    answer: Any = None
    channel = TOOL
    if calls:
        try:
            answer = json.loads(calls[-1].arguments or "{}")
        except json.JSONDecodeError:
            answer = None
    if not isinstance(answer, dict):
        answer, channel = last_json_object(reply.text), JSON_REPLY
    given = answer.get("skills") if isinstance(answer, dict) else None
    if isinstance(given, str):
        given = [given]
    if not isinstance(given, list) or not all(isinstance(g, str) for g in given):
        return None
    stripped = [g.strip() for g in given if g.strip() and g.strip().lower() not in ("none", "(none)")]
    chosen = tuple(dict.fromkeys(g for g in stripped if g in names))
    unknown = tuple(dict.fromkeys(g for g in stripped if g not in names))
    return chosen, unknown, channel


def route_once(client: LLMClient, model: str, listing: str, names: frozenset[str], query_id: str, text: str,
               run: int) -> Routed:
    """Route one request once; a failed call or an unreadable reply is a missing pick, its reason and reply kept."""
    by_tool = tool_calls_refused(client, model) is None
    messages = router_messages(listing, text, by_tool)
    try:
        reply = client.chat("route", model, messages, role=Role.ROUTER, temperature=ROUTER_TEMPERATURE,
                            **({"tools": [CHOOSE_TOOL], "tool_choice": "required"} if by_tool else {"schema": CHOICE_SCHEMA}))
    except LLMError as err:
        return Routed(Pick(query_id, model, run, None, f"no reply: {err.kind}: {err}"), "")
    parsed = parse_choice(reply, names)
    if parsed is None:
        why = reply.cut_note() if reply.truncated else "the reply names no skills (no choose_skills call, no JSON object)"
        return _costed(Pick(query_id, model, run, None, f"unreadable: {why}"), "", reply, reply.text[:2000])
    chosen, unknown, channel = parsed
    return _costed(Pick(query_id, model, run, chosen, unknown=unknown), channel, reply)


def _costed(pick: Pick, channel: str, reply: Reply, raw: str = "") -> Routed:
    return Routed(pick, channel, reply.tokens_in, reply.tokens_out, reply.tokens_cached, reply.seconds, raw)
