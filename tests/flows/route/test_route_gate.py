"""`luban route --changed --base REV` on a real git repository and the loopback routing world: a description that
claims another skill's words fails the gate, naming the pair; a rewording that changes nothing passes; no change
costs no call; offline, or stopped by --max-calls, it decides nothing and says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from prefect.artifacts import Artifact

from flows.route.gate import FAIL, PASS, UNDECIDED, route_changes
from tests.support.repos import commit_all
from tests.support.routing_world import make_library

pytestmark = pytest.mark.usefixtures("prefect_api")
STEALING = ("---\nname: travel\ndescription: Plans trips; also creates and sends customer invoices from billing records "
            "for the client.\n---\n\n# travel\n")
REWORDED = ("---\nname: travel\ndescription: Use when the user asks to plan a journey. Plans train and flight trips "
            "with hotel bookings.\n---\n\n# travel\n")


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    skills = make_library(tmp_path / "repo" / "skills")
    commit_all(tmp_path / "repo")
    return skills


def gate(skills: Path, tmp_path: Path, **options) -> dict:
    return route_changes(skills_dir=str(skills), base="HEAD", workspace=str(tmp_path / "ws"),
                         llm={"route_runs": 6}, **options)


def test_a_description_that_takes_anothers_queries_fails_naming_the_pair(repository, tmp_path, world):
    router, _ = world
    router.beta = 3.0
    (repository / "travel/SKILL.md").write_text(STEALING, encoding="utf-8")
    doc = gate(repository, tmp_path)
    assert doc["gate"] == FAIL and doc["changed"] == ["travel"], doc
    assert "invoices" in doc["routed_skills"]  # the nearest neighbour by the new description's words
    worse = [w["name"] for w in doc["models"]["router-a"]["worse"]]
    assert "invoices → travel" in worse and "invoices → travel" in doc["why"]
    assert doc["cost"]["base"]["calls"] == doc["cost"]["changed"]["calls"] == doc["planned_calls"] // 2
    artifact = Artifact.get("luban-routing-gate")
    assert artifact is not None and "# Luban routing gate: fail" in str(artifact.data)


def test_a_rewording_with_the_same_words_passes(repository, tmp_path, world):
    (repository / "travel/SKILL.md").write_text(REWORDED, encoding="utf-8")
    doc = gate(repository, tmp_path)
    assert doc["gate"] == PASS and doc["models"]["router-a"]["worse"] == [], doc


def test_no_change_costs_no_call(repository, tmp_path, world):
    router, _ = world
    doc = gate(repository, tmp_path)
    assert doc["gate"] == PASS and doc["changed"] == [] and router.calls == 0


def test_offline_or_cut_short_the_gate_decides_nothing(repository, tmp_path, world, monkeypatch):
    (repository / "travel/SKILL.md").write_text(STEALING, encoding="utf-8")
    short = gate(repository, tmp_path, max_calls=5)
    assert short["gate"] == UNDECIDED and "stopped before both libraries were routed" in short["why"]
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name)
    offline = gate(repository, tmp_path)
    assert offline["gate"] == UNDECIDED and "routing needs a model" in offline["why"]


def test_the_command_exits_1_on_a_failed_gate_and_prints_one_json_document(repository, tmp_path, world):
    import json

    from typer.testing import CliRunner

    from flows.cli import app

    router, _ = world
    router.beta = 3.0
    (repository / "travel/SKILL.md").write_text(STEALING, encoding="utf-8")
    result = CliRunner().invoke(app, ["route", "--changed", "--base", "HEAD", "--skills-dir", str(repository),
                                      "--workspace", str(tmp_path / "ws"), "--runs", "6", "--approval", "auto"])
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout)["gate"] == FAIL
    assert "luban route --changed: fail: " in result.stderr and "invoices → travel" in result.stderr
