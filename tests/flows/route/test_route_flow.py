"""`luban route` on a loopback world whose routing truth is known: real Prefect, the real openai client over HTTP,
skills on disk. The figures it reports hold the world's true rates; designed queries pass a checkpoint, are saved and
reused; a model-less run says what it needs; a call budget stops it, said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prefect.artifacts import Artifact

from flows.route.flow import route_library
from flows.route.library import read_library
from scoring.route_queries import NONE, Split, split_of
from tests.support.routing_world import TRIGGERS, AffinityRouter, listing_in, make_library

pytestmark = pytest.mark.usefixtures("prefect_api")


def true_recall(world: AffinityRouter, skills_dir: Path, queries: list[tuple[str, str]]) -> float:
    """The world's own recall over (owner, query): the mean probability it picks the owner, from the listing shown."""
    shown = listing_in(read_library(skills_dir).listing.text)
    return sum(world.probabilities(shown, q)[owner] for owner, q in queries) / len(queries)


def test_the_figures_hold_the_worlds_truth_and_designed_queries_are_saved_and_reused(tmp_path, world):
    router, _ = world
    skills = make_library(tmp_path / "skills")
    doc = route_library(skills_dir=str(skills), llm={"route_runs": 12}, workspace=str(tmp_path / "ws"))
    figures = doc["models"]["router-a"]
    assert doc["worst_model"] == "router-a" and doc["partial"] is None
    # the queries that are invoices' (its author's positives, and the designed near-misses that belong to it) that
    # were routed (train and validation), and the world's true recall over them
    saved = json.loads((tmp_path / "ws/routing/queries.json").read_text(encoding="utf-8"))
    invoices = [(owner, q) for owner, q, expected in [("invoices", q, "invoices") for q, t in TRIGGERS["invoices"] if t]
                + [(s["owner"], s["query"], s["expected"]) for s in saved]
                if expected == "invoices" and split_of(owner, q) != Split.TEST]
    measured = figures["skills"]["invoices"]["recall"]
    assert measured["out_of"] == 12 * len(invoices)
    truth = true_recall(router, skills, [("invoices", q) for _, q in invoices])
    assert measured["ci95"][0] <= truth <= measured["ci95"][1], (truth, measured)
    # the designed queries: accepted (auto), saved, split, and their none query measured
    assert doc["queries"]["source"]["recipes"] == "designed now" and router.designs == 2  # recipes and travel
    assert {q["owner"] for q in saved} == {"recipes", "travel"} and len(saved) == 12  # six each
    assert figures["none_accuracy"]["out_of"] % 12 == 0
    assert doc["cost"]["tokens_cached"] > 0 and doc["answers"] == {"tool": doc["cost"]["calls"]}
    report = Path(doc["report"])
    assert report.is_file() and (report.parent / "confusion-1.png").read_bytes()[:4] == b"\x89PNG"
    assert "| invoices |" in report.read_text(encoding="utf-8")
    artifact = Artifact.get("luban-routing")
    assert artifact is not None and "## Router router-a" in str(artifact.data)
    picks = (report.parent / "picks.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(picks) == doc["cost"]["calls"] == 12 * doc["queries"]["routed"]
    again = route_library(skills_dir=str(skills), llm={"route_runs": 1}, workspace=str(tmp_path / "ws"))
    assert router.designs == 2 and again["queries"]["source"]["recipes"].startswith("designed earlier")
    assert again["queries"]["routed"] == doc["queries"]["routed"]  # the same queries, the same split


def test_a_skill_that_takes_anothers_queries_shows_as_a_steal_and_a_confusion(tmp_path, world):
    router, _ = world
    skills = make_library(tmp_path / "skills")
    # the travel skill's description now claims the invoices' words: the world routes their queries to it
    (skills / "travel/SKILL.md").write_text("---\nname: travel\ndescription: Plans trips; also creates and sends "
                                            "customer invoices from billing records for the client.\n---\n\n# travel\n",
                                            encoding="utf-8")
    router.beta = 4.0
    doc = route_library(skills_dir=str(skills), skills=["invoices"], llm={"route_runs": 6}, workspace=str(tmp_path / "ws"))
    figures = doc["models"]["router-a"]
    confused = {(c["asked"], c["took"]): c for c in figures["confusions"]}
    assert confused[("invoices", "travel")]["value"] >= 0.2
    assert figures["skills"]["travel"]["steals"]["hits"] > 0
    assert router.designs == 0  # only invoices was routed, on its author's queries


def test_offline_the_listing_is_checked_and_routing_says_it_needs_a_model(tmp_path, monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    skills = make_library(tmp_path / "skills")
    (skills / "broken").mkdir()
    (skills / "broken/SKILL.md").write_text("---\nname: broken\n---\nno description\n", encoding="utf-8")
    doc = route_library(skills_dir=str(skills), workspace=str(tmp_path / "ws"))
    assert doc["routing"].startswith("not measured: a model") and "models" not in doc
    assert doc["skills"] == 4 and "no description" in doc["unroutable"][0]["why"]
    assert doc["listing"]["routed_with"]["client"] == "claude-code"
    sources = doc["queries"]["source"]
    assert not any(s.startswith("designed") for s in sources.values())  # nothing invented offline
    assert sources["recipes"].startswith("no queries") and "give a model" in sources["recipes"]
    assert not (tmp_path / "ws/routing/queries.json").exists()
    assert "Routing not measured" in Path(doc["report"]).read_text(encoding="utf-8")


def test_the_call_budget_stops_routing_and_the_figures_say_partial(tmp_path, world):
    skills = make_library(tmp_path / "skills")
    doc = route_library(skills_dir=str(skills), skills=["invoices", "weather"], llm={"route_runs": 5},
                        workspace=str(tmp_path / "ws"), max_calls=6)
    assert doc["partial"] and "call budget" in doc["partial"]
    assert doc["cost"]["calls"] <= 5  # one of the six was the tool probe
    assert doc["models"]["router-a"]["runs"] == doc["cost"]["calls"]
    # the cut falls fairly: each skill's queries were routed in turn, not the first skill's whole and the other's none
    recall = doc["models"]["router-a"]["skills"]
    assert all(recall[skill]["recall"]["out_of"] >= 1 for skill in ("invoices", "weather")), recall
    queries = doc["queries"]
    assert queries["routed"] == doc["cost"]["calls"] < queries["planned"]  # one run of each query routed, said
    assert f"{queries['routed']} of {queries['planned']} queries" in Path(doc["report"]).read_text(encoding="utf-8")


def test_errors_are_missing_data_not_none(tmp_path, world):
    router, _ = world
    router.fail_every = 3
    skills = make_library(tmp_path / "skills")
    doc = route_library(skills_dir=str(skills), skills=["invoices"], llm={"route_runs": 6}, workspace=str(tmp_path / "ws"))
    figures = doc["models"]["router-a"]
    assert figures["missing"] > 0 and figures["runs"] + figures["missing"] == doc["cost"]["calls"]
    assert doc["answers"]["no answer"] == figures["missing"]
    assert NONE not in figures["skills"]


def test_retrieve_then_choose_shows_each_request_only_its_nearest_skills(tmp_path, world):
    _, server = world
    skills = make_library(tmp_path / "skills")
    doc = route_library(skills_dir=str(skills), skills=["invoices", "weather"], llm={"route_runs": 2},
                        workspace=str(tmp_path / "ws"), shortlist=2)
    routed = [r for r in server.chat_requests() if "choose_skills" in json.dumps(r.body.get("tools", []))]
    assert routed and all(len(listing_in(r.body["messages"][0]["content"])) == 2 for r in routed)
    assert doc["mode"].startswith("retrieve-then-choose") and doc["shortlist_recall"]["out_of"] > 0
    assert doc["shortlist_recall"]["value"] == 1.0  # each author's query shares its own skill's rarest words


def test_the_corpus_library_is_routed_whole_and_its_listing_cut_is_said(corpus_copy, tmp_path, world):
    """The public skills as one library: Claude Code's listing at a 128k window (5 120 characters) cannot hold every
    description, every skill gets designed queries (none has trigger evals) and figures, the Chinese ones included."""
    doc = route_library(skills_dir=str(corpus_copy), llm={"route_runs": 1}, workspace=str(tmp_path / "ws"))
    listing = doc["listing"]["by_client"]
    assert doc["skills"] >= 30 and listing["claude-code@unknown"]["characters"] <= 8000
    assert listing["claude-code@128k"]["trigger_words_lost"] and listing["claude-code@128k"]["characters"] <= 5120
    shown = doc["listing"]["routed_with"]["skills"]  # claude-code at the unknown window: the corpus fits whole
    assert len(shown) == doc["skills"] and all(s["characters"] == s["of"] and s["listed"] for s in shown.values())
    assert listing["agent-skills@1M"]["dropped"] == []
    figures = doc["models"]["router-a"]
    assert set(figures["skills"]) == {s for s in doc["queries"]["source"]} and figures["runs"] > doc["skills"]
    assert all(source.startswith("designed now") for source in doc["queries"]["source"].values())


def test_run_after_run_only_the_newest_reports_stay(tmp_path, monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LUBAN_KEEP_RUNS", "2")
    skills = make_library(tmp_path / "skills")
    reports = [Path(route_library(skills_dir=str(skills), workspace=str(tmp_path / "ws"))["report"]) for _ in range(4)]
    left = sorted(p.name for p in (tmp_path / "ws/routing/runs").iterdir())
    assert left == sorted(r.parent.name for r in reports[-2:]) and reports[-1].is_file(), (left, [r.parent.name for r in reports])
