"""`luban route --optimize` on a real git repository and the loopback routing world, whose truth is known: a
description that really routes better is kept (a commit, a keep row, the file changed); one that routes worse is put
back by git and remembered, so the editor is told and never tries it again; the validation queries choose, and the
sealed test is read once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prefect.artifacts import Artifact

from flows.route.rounds import optimize_routing
from scoring.document import parse
from tests.support.repos import commit_all
from tests.support.routing_world import SKILLS, make_library
from workspace.results_tsv import ResultsFile, RowKind

pytestmark = pytest.mark.usefixtures("prefect_api")
THIEF = ("Plans trips; also creates and sends customer invoices from billing records for the client, and bills a "
         "client.")
# worse for every skill in the world's truth: each keeps nothing of its own and claims another's purpose (travel, the
# thief, keeps all it claims and adds the weather's)
WORSE = {"travel": THIEF + " Also forecasts tomorrow's weather for a city from station data.",
         "invoices": SKILLS["weather"], "weather": SKILLS["recipes"], "recipes": SKILLS["invoices"]}


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    skills = make_library(tmp_path / "repo" / "skills")
    text = (skills / "travel/SKILL.md").read_text(encoding="utf-8")
    (skills / "travel/SKILL.md").write_text(text.replace(SKILLS["travel"], THIEF), encoding="utf-8")
    commit_all(tmp_path / "repo")
    return skills


def description(skills: Path, folder: str) -> str:
    return parse((skills / folder / "SKILL.md").read_text(encoding="utf-8")).frontmatter["description"]


def rows(tmp_path: Path, folder: str):
    assert not (tmp_path / "ws" / "full" / folder / "results.tsv").exists()  # the rubric's records are not touched
    return ResultsFile(tmp_path / "ws" / "full" / folder / "routing.tsv").rows(RowKind.ROUTING)


def test_a_description_that_routes_better_is_kept_on_the_branch(repository, tmp_path, world):
    router, _ = world
    router.beta = 3.0
    router.proposals = {"travel": SKILLS["travel"], "invoices": SKILLS["invoices"] + " Bills customers, invoices."}
    doc = optimize_routing(skills_dir=str(repository), rounds=2, workspace=str(tmp_path / "ws"), llm={"route_runs": 6})
    kept = [r for r in doc["rounds"] if r["status"] == "keep"]
    assert kept, doc["rounds"]
    first = kept[0]
    assert first["skill"] in ("travel", "invoices") and first["proposed"] == router.proposals[first["skill"]]
    row = next(r for r in rows(tmp_path, first["skill"]) if r.status == "keep")
    assert row.dim_changed == "routing" and row.delta and row.delta > 0 and row.evidence["decisions"][0]["kept"]
    assert doc["branch"].startswith("auto-optimize/") and doc["validation"]["chosen"] != ""
    assert doc["sealed_test"]["read"] in (True, False) and doc["queries"]["train"] > 0
    artifact = Artifact.get("luban-routing-rounds")
    assert artifact is not None and f"| 1 | {doc['rounds'][0]['skill']} |" in str(artifact.data)
    if doc["validation"]["chosen"] != "original" and not doc["sealed_test"].get("restored_original"):
        assert description(repository, first["skill"]) == router.proposals[first["skill"]]


def test_a_description_that_routes_worse_is_put_back_and_never_tried_again(repository, tmp_path, world):
    router, _ = world
    router.beta = 3.0
    before = {name: description(repository, name) for name in SKILLS}
    router.proposals = WORSE
    doc = optimize_routing(skills_dir=str(repository), rounds=2, workspace=str(tmp_path / "ws"), llm={"route_runs": 6})
    assert [r["status"] for r in doc["rounds"]] in (["revert", "revert"], ["revert", "skip"]), doc["rounds"]
    assert doc["rounds"][1]["status"] == "revert" or "already tried" in doc["rounds"][1]["why"]
    assert {name: description(repository, name) for name in SKILLS} == before
    target = doc["rounds"][0]["skill"]
    reverted = [r for r in rows(tmp_path, target) if r.status == "revert"]
    assert reverted and reverted[0].evidence["proposed"] == WORSE[target] and reverted[0].evidence["decisions"]
    assert doc["branch"] is None  # nothing kept: the run's branch is dropped, the repository as it was
    # a later run on the same workspace reads the rejected description back from routing.tsv: the editor is told,
    # and the same proposal is not routed again
    calls = router.calls
    again = optimize_routing(skills_dir=str(repository), rounds=1, workspace=str(tmp_path / "ws"), llm={"route_runs": 2})
    told = [r for r in router.edit_requests if WORSE[target] in r.split("already tried and not better:")[-1]]
    assert told, json.dumps(doc["rounds"])
    if again["rounds"][0]["skill"] == target:
        assert again["rounds"][0]["status"] == "skip" and "already tried" in again["rounds"][0]["why"]
        assert router.calls - calls <= 2 * again["queries"]["train"] + 2  # the train routing once, no candidate


def test_outside_git_the_rounds_are_refused_before_any_call(tmp_path, world):
    router, _ = world
    skills = make_library(tmp_path / "plain")
    with pytest.raises(Exception, match="git") as refused:
        optimize_routing(skills_dir=str(skills), rounds=1, workspace=str(tmp_path / "ws"))
    assert router.calls == 0 and router.designs == 0, str(refused.value)
