"""The router's one call over real HTTP: a tool call, JSON where the model makes none or the server refuses tools,
and every failure kept as missing data — never as "none chosen"."""

from __future__ import annotations

import json

import pytest

from judges.llm import LLMClient, Reply, ToolCall
from judges.route_design import design_queries, parse_design
from judges.router import JSON_REPLY, TOOL, parse_choice, route_once
from scoring.route_queries import NONE, Kind
from tests.judges.conftest import make_settings
from tests.support.openai_server import ScriptedOpenAI, reply
from tests.support.routing_world import AffinityRouter

LISTING = ("The following skills are available for use with the Skill tool:\n"
           "- invoices: create and send customer invoices from billing records\n"
           "- weather: forecast tomorrow weather for any city")
NAMES = frozenset({"invoices", "weather"})


@pytest.fixture
def world(server: ScriptedOpenAI) -> AffinityRouter:
    router = AffinityRouter(beta=6.0)  # sharp: a request that shares words with one description goes there
    server.responder = router
    return router


def test_a_tool_call_names_the_skill_and_the_listing_is_the_cached_prefix(server, world, client):
    first = route_once(client, "router-m", LISTING, NAMES, "q1", "please create the customer invoices", 0)
    second = route_once(client, "router-m", LISTING, NAMES, "q2", "what is the weather forecast tomorrow", 0)
    assert first.pick.chosen == ("invoices",) and first.channel == TOOL
    assert second.pick.chosen == ("weather",)
    routed = [r for r in server.chat_requests() if "choose_skills" in json.dumps(r.body.get("tools", []))]
    assert len(routed) == 2 and all(r.body["tool_choice"] == "required" for r in routed)
    systems = [r.body["messages"][0]["content"] for r in routed]
    assert systems[0] == systems[1] and LISTING in systems[0]  # the same tokens first, every call
    assert [r.body["messages"][-1]["content"] for r in routed] == ["please create the customer invoices",
                                                                    "what is the weather forecast tomorrow"]
    assert first.tokens_cached == 0 and second.tokens_cached > 0  # the server's cache served the listing


@pytest.mark.parametrize("mode", ["json", "refuse_tools"])
def test_without_tool_calls_the_router_answers_in_json(server, world, client, mode):
    world.mode = mode
    routed = route_once(client, "router-m", LISTING, NAMES, "q1", "send the customer invoices now", 0)
    assert routed.pick.chosen == ("invoices",) and routed.channel == JSON_REPLY
    last = server.chat_requests()[-1].body
    assert "tools" not in last and last.get("response_format", {}).get("type") == "json_schema"
    assert "one JSON object" in last["messages"][0]["content"]
    again = route_once(client, "router-m", LISTING, NAMES, "q2", "tomorrow weather", 0)
    assert again.pick.chosen == ("weather",)
    probes = [r for r in server.chat_requests() if "read_file" in json.dumps(r.body.get("tools", []))]
    assert len(probes) == 1  # asked once per model and run


def test_none_is_an_empty_list_and_a_failure_is_missing_with_its_reason(server, world, client):
    world.none_score = 3.0
    none = route_once(client, "router-m", LISTING, NAMES, "q1", "sing me a song", 0)
    assert none.pick.chosen == () and none.pick.first == NONE
    world.fail_every = 1
    failed = route_once(client, "router-m", LISTING, NAMES, "q2", "sing me a song", 1)
    assert failed.pick.chosen is None and failed.pick.why_missing.startswith("no reply: bad_request")
    world.fail_every, world.unreadable_every = 0, 1
    unreadable = route_once(client, "router-m", LISTING, NAMES, "q3", "sing me a song", 2)
    assert unreadable.pick.chosen is None and unreadable.pick.why_missing.startswith("unreadable")
    assert "which one fits" in unreadable.raw  # the reply as received, kept


def _reply(text: str = "", calls: tuple[ToolCall, ...] = ()) -> Reply:
    return Reply(text, "m", 10, 5, tool_calls=calls)


@pytest.mark.parametrize(("given", "expected"), [
    (_reply(calls=(ToolCall("1", "choose_skills", '{"skills": ["weather", "invoices"]}'),)), (("weather", "invoices"), (), TOOL)),
    (_reply(calls=(ToolCall("1", "choose_skills", '{"skills": "weather"}'),)), (("weather",), (), TOOL)),
    (_reply('thinking... {"skills": ["invoice"]} then {"skills": ["invoices", "none"]}'), (("invoices",), (), JSON_REPLY)),
    (_reply('{"skills": ["Weather", "weather"]}'), (("weather",), ("Weather",), JSON_REPLY)),
    (_reply('{"skills": []}'), ((), (), JSON_REPLY)),
    (_reply(calls=(ToolCall("1", "choose_skills", "not json"),), text='{"skills": ["weather"]}'), (("weather",), (), JSON_REPLY)),
    (_reply("no idea"), None),
    (_reply('{"skills": [1, 2]}'), None),
    (_reply('{"skill": "weather"}'), None),
])
def test_the_last_choice_is_read(given, expected):
    assert parse_choice(given, NAMES) == expected


DESIGNED = {"queries": [
    {"kind": "explicit", "query": "create invoices for march", "belongs_to": "invoices"},
    {"kind": "implicit", "query": "the client wants to be billed", "belongs_to": "anything"},
    {"kind": "near_miss", "query": "will it rain on the invoice run", "belongs_to": "weather"},
    {"kind": "near_miss", "query": "bill the moon", "belongs_to": "astrology"},
    {"kind": "none", "query": "tell me a joke", "belongs_to": "none"},
    {"kind": "sideways", "query": "?", "belongs_to": "none"},
]}


def test_a_design_keeps_what_it_can_place_and_says_what_it_dropped():
    queries, dropped = parse_design("invoices", {"weather"}, DESIGNED)
    assert [(q.kind, q.should_trigger, q.expected) for q in queries] == [
        (Kind.EXPLICIT, True, "invoices"), (Kind.IMPLICIT, True, "invoices"), (Kind.NEAR_MISS, False, "weather"),
        (Kind.NONE, False, NONE)]
    assert len(dropped) == 2 and "astrology" in dropped[0]


def test_a_design_without_a_positive_gives_no_queries(server: ScriptedOpenAI):
    client = LLMClient(make_settings(server))
    server.queue(reply({"queries": [{"kind": "none", "query": "tell me a joke", "belongs_to": "none"}]}))
    designed = design_queries(client, "editor-e", "invoices", "create invoices", [("weather", "forecasts")])
    assert designed.queries == () and "no usable positive" in designed.problem and "joke" in designed.raw
