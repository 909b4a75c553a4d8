"""Routing queries on disk: the author's trigger evals read as skill-creator writes them, every bad file named with
its line and fix, and designed queries saved whole and read back the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoring.route_queries import NONE, Kind, RouteQuery
from workspace import route_sets
from workspace.route_sets import RouteSetError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_skill_creators_eval_set_is_read_as_it_is(tmp_path):
    write(tmp_path / "evals/triggers.json", json.dumps([
        {"query": "ok so my boss sent me Q4 sales final.xlsx", "should_trigger": True},
        {"query": "format this table as markdown", "should_trigger": False, "note": "kept: extra keys are the author's"}]))
    queries = route_sets.read_triggers(tmp_path, "xlsx")
    assert [(q.owner, q.should_trigger, q.kind, q.expected) for q in queries or []] == [
        ("xlsx", True, Kind.AUTHOR, "xlsx"), ("xlsx", False, Kind.AUTHOR, None)]
    assert route_sets.read_triggers(tmp_path / "elsewhere", "xlsx") is None


@pytest.mark.parametrize(("text", "needles"), [
    ('[{"query": "a", "should_trigger": true},\n  {"query": "b" "should_trigger": false}]', ["triggers.json:2:", "not valid JSON"]),
    ('[{"query": "a"}]', ["entry 0.should_trigger", '"should_trigger" (true or false)']),
    ('[{"query": "", "should_trigger": true}]', ["entry 0.query"]),
    ('{"query": "a", "should_trigger": true}', ["the file: Input should be a valid list"]),
])
def test_a_file_that_cannot_be_used_is_named_with_the_fix(tmp_path, text, needles):
    write(tmp_path / "evals/triggers.json", text)
    with pytest.raises(RouteSetError) as caught:
        route_sets.read_triggers(tmp_path, "xlsx")
    said = str(caught.value)
    assert str(tmp_path / "evals/triggers.json") in said and "move the file away" in said
    assert all(n in said for n in needles), said


def test_an_eval_set_is_one_skills_list_or_a_map_of_skills(tmp_path):
    one = write(tmp_path / "one.json", '[{"query": "bill them", "should_trigger": true}]')
    assert [q.owner for q in route_sets.read_eval_set(one, ["invoices"])["invoices"]] == ["invoices"]
    with pytest.raises(RouteSetError, match="name that skill"):
        route_sets.read_eval_set(one, ["invoices", "weather"])
    many = write(tmp_path / "many.json", json.dumps({"weather": [{"query": "rain?", "should_trigger": True}],
                                                     "wether": [{"query": "x", "should_trigger": False}]}))
    with pytest.raises(RouteSetError, match="no skill named 'wether'"):
        route_sets.read_eval_set(many, ["invoices", "weather"])


def test_designed_queries_are_saved_and_read_back_the_same(tmp_path):
    queries = [RouteQuery("invoices", "bill the client for march", True, Kind.IMPLICIT),
               RouteQuery("invoices", "will it rain on billing day", False, Kind.NEAR_MISS, "weather"),
               RouteQuery("invoices", "tell me a joke", False, Kind.NONE, NONE)]
    path = route_sets.save(tmp_path, queries)
    assert path == tmp_path / route_sets.SAVED_FILE
    assert route_sets.load_saved(tmp_path) == queries
    assert [q.split for q in route_sets.load_saved(tmp_path)] == [q.split for q in queries]
    assert route_sets.load_saved(tmp_path / "none-yet") == []


def test_a_saved_file_edited_into_nonsense_is_named(tmp_path):
    write(tmp_path / route_sets.SAVED_FILE, json.dumps([{"owner": "a", "query": "x", "should_trigger": True,
                                                         "kind": "explicit", "expected": "b"}]))
    with pytest.raises(RouteSetError, match="delete it to have the queries designed again"):
        route_sets.load_saved(tmp_path)
