"""One record, one kind: routing rounds between `luban optimize` runs change nothing that the rubric's readers say.

Two identical libraries in git; two offline full runs on each; on one of them `luban route --optimize` (the loopback
routing world) tries descriptions between the runs and puts them back — and a results.tsv row as Luban wrote routing
rounds before they had a file of their own, a routing keep of +36 points. A third run on each must raise the same
notices and alerts, and `luban status` must show the same rubric columns; routing (the rounds, and the recall of a
`luban route` run) shows in its own column.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.optimize import optimize_skills
from flows.route.flow import route_library
from flows.route.rounds import optimize_routing
from tests.flows.route.test_route_rounds import THIEF, WORSE
from tests.support.repos import commit_all
from tests.support.routing_world import SKILLS, make_library
from workspace.layout import Mode, Workspace, default_root
from workspace.library_status import library_status, rows_for_table
from workspace.results_tsv import ResultRow, ResultsFile, RowKind

pytestmark = [pytest.mark.usefixtures("prefect_api"), pytest.mark.slow]
LEGACY = ResultRow("2026-12-01T10:00:00Z", "invoices", 1, "keep", "full", old_score=None, new_score=None,
                   dim_changed="routing", delta=36.4, note="confused pair: routing gain", evidence={"proposed": "x"})


def optimize(skills: Path, monkeypatch) -> dict:
    """One offline full run (the rubric loop needs no model here: its records are what is compared)."""
    with monkeypatch.context() as offline:
        for variable in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "LUBAN_ROUTER_MODEL"):
            offline.delenv(variable, raising=False)
        return optimize_skills(skills_dir=str(skills), mode="full", approval="auto")


def said(run: dict) -> list[str]:
    """A run's notices and alerts with what differs between two libraries by construction (paths, times) taken out."""
    lines = [*run.get("notices", ()), *map(str, run.get("alerts", ()))]
    return sorted(re.sub(r"auto-optimize/\S+|/\S*/(plain|routed)/\S*|\d{8}-\d{4}(-\d+)?", "…", line) for line in lines)


def rubric_columns(skills: Path) -> list[dict[str, str]]:
    ws = Workspace.open(skills, Mode.FULL, default_root(skills))
    rows = rows_for_table(library_status(ws, sorted(SKILLS)))
    return [{k: v for k, v in row.items() if k not in ("last run", "routing")} for row in rows]


def test_routing_rounds_between_runs_leave_the_rubric_records_as_they_were(tmp_path, world, monkeypatch):
    router, _ = world
    router.beta, router.proposals = 3.0, WORSE  # every description routes worse: put back, the texts unchanged
    libraries = {}
    for name in ("plain", "routed"):
        skills = libraries[name] = make_library(tmp_path / name / "repo" / "skills")
        text = (skills / "travel/SKILL.md").read_text(encoding="utf-8")  # a thief: a routing problem to take on
        (skills / "travel/SKILL.md").write_text(text.replace(SKILLS["travel"], THIEF), encoding="utf-8")
        commit_all(tmp_path / name / "repo")
    for skills in libraries.values():
        optimize(skills, monkeypatch)
        optimize(skills, monkeypatch)
    routed = libraries["routed"]
    doc = optimize_routing(skills_dir=str(routed), rounds=2, llm={"route_runs": 3})
    assert doc["rounds"][0]["status"] == "revert", doc["rounds"]
    route_library(skills_dir=str(routed), llm={"route_runs": 2})  # `luban route`: the recall status shows
    ws = Workspace.open(routed, Mode.FULL, default_root(routed))
    ResultsFile(ws.results_tsv("invoices")).append(LEGACY)  # as routing rounds were written before routing.tsv
    third = {name: optimize(skills, monkeypatch) for name, skills in libraries.items()}

    assert said(third["routed"]) == said(third["plain"])
    assert rubric_columns(routed) == rubric_columns(libraries["plain"])
    target = doc["rounds"][0]["skill"]
    tried = ResultsFile(ws.routing_tsv(target)).rows(RowKind.ROUTING)
    assert tried and all(r.dim_changed == "routing" for r in tried)
    assert all(r.kind is RowKind.RUBRIC for r in ResultsFile(ws.results_tsv(target)).rows())
    state = {s.skill: s for s in library_status(ws, sorted(SKILLS)).skills}
    assert state[target].routing.tried >= 1 and state[target].routing.recall is not None
    assert state["invoices"].routing.kept >= 1  # the old row is read as routing, not as a kept edit
    table = {row["skill"]: row for row in rows_for_table(library_status(ws, sorted(SKILLS)))}
    assert "kept" in table["invoices"]["routing"] and table[target]["routing"].startswith("recall ")
    # the rejected-edit buffer holds none of the routing descriptions tried
    for folder in SKILLS:
        buffer = ws.rejected_edits(folder)
        text = buffer.read_text(encoding="utf-8") if buffer.exists() else ""
        assert WORSE[folder] not in text and "routing gain" not in text
    # `luban history` shows the rubric's rounds; `--routing` the routing rounds
    rubric = CliRunner().invoke(app, ["history", target, "--skills-dir", str(routed), "--mode", "full"], env={"COLUMNS": "250"})
    rounds = CliRunner().invoke(app, ["history", target, "--skills-dir", str(routed), "--routing"], env={"COLUMNS": "250"})
    assert rubric.exit_code == 0 and "routing" not in rubric.output, rubric.output
    assert rounds.exit_code == 0 and "routing rounds" in rounds.output and "revert" in rounds.output, rounds.output
    # read in a CI log or a cron mail (80 columns): no line wider, every skill's name and state whole on its row
    for args in (["status"], ["history", target, "--mode", "full"], ["history", target, "--routing"]):
        shown = CliRunner().invoke(app, [*args, "--skills-dir", str(routed)], env={"COLUMNS": "80"})
        assert shown.exit_code == 0 and max(map(len, shown.output.splitlines())) <= 80, shown.output
    status = CliRunner().invoke(app, ["status", "--skills-dir", str(routed)], env={"COLUMNS": "80"}).output
    assert all(any(line.startswith(f"│ {name} ") and " ok " in line for line in status.splitlines()) for name in SKILLS), status
    assert f"{target}: routing: recall " in status, status
