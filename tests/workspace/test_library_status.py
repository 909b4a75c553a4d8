"""`luban status`: the library at a glance, from the records alone."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from flows.cli import app
from tests.conftest import write_skill
from tests.support.repos import commit_all
from workspace import profile
from workspace.layout import Workspace
from workspace.library_status import library_status, rows_for_table
from workspace.results_tsv import ResultRow, ResultsFile

TS = "2026-12-0{day}T10:0{minute}:00+00:00"


def library(tmp_path: Path) -> Workspace:
    skills = tmp_path / "skills"
    for name in ("alpha", "beta", "gamma", "delta"):
        write_skill(skills, name, f"---\nname: {name}\ndescription: Does {name}. Use when asked.\n---\n# {name}\n")
    repo = commit_all(skills)
    repo.create_head("auto-optimize/20261201-1000")
    ws = Workspace.open(skills, "full")
    for day in (1, 2, 3):
        results = ResultsFile(ws.results_tsv("alpha"))
        results.append(ResultRow(TS.format(day=day, minute=0), "alpha", 0, "baseline", "full", new_score=50.0 + day))
        results.append(ResultRow(TS.format(day=day, minute=1), "alpha", 1, "keep", "full", old_score=50.0 + day,
                                 new_score=52.0 + day, delta=2.0))
    ResultsFile(ws.results_tsv("beta")).append(ResultRow(TS.format(day=1, minute=0), "beta", 0, "baseline", "full",
                                                         new_score=40.0))
    ResultsFile(ws.results_tsv("gamma")).append(ResultRow(TS.format(day=1, minute=0), "gamma", 0, "baseline", "full",
                                                          new_score=60.0))
    ResultsFile(ws.results_tsv("gamma")).append(ResultRow(TS.format(day=1, minute=1), "gamma", 0, "skip", "full",
                                                          stop="roi", note="the last three runs kept no edit"))

    def held(p: profile.LubanProfile) -> None:
        p.frozen["beta"] = profile.FrozenSkill(reason="Safety red line hit by a judge", since="2026-12-01T10:00:00")
        p.paused["alpha"] = profile.PausedSkill(reason="alert edit_outcomes (library) fired 3 times", since="2026-12-03",
                                                runs_left=1)
        p.alert_counters["edit_outcomes|*"] = {"count": 3}
        p.alert_counters["revert_rate|alpha"] = {"count": 1}
        p.oscillation_guard.append(profile.OscillationGuard(dim="dim3", since="t", skills=["alpha"], runs_left=4))
        p.skill_edit_budget["alpha"], p.budget_runs_left["alpha"] = 0.05, 3

    profile.update(ws.profile, held)
    return ws


def test_each_skill_with_its_runs_score_and_what_holds_it(tmp_path: Path):
    ws = library(tmp_path)
    status = library_status(ws, ["alpha", "beta", "gamma", "delta"], recent=2)
    alpha, beta, gamma, delta = status.skills
    assert (alpha.runs, alpha.score, alpha.change, alpha.kept) == (3, 55.0, 3.0, 2)  # 52 at two runs ago → 55 now
    assert alpha.state.startswith("paused: alert edit_outcomes (library)") and "1 more run(s)" in alpha.state
    assert alpha.alerts == ("revert_rate ×1",) and alpha.guards == ("dim3 (4 run(s) left)",)
    assert alpha.budget == "5% (3 run(s) left)"
    assert beta.state.startswith("frozen: Safety red line") and "until 'luban lift beta'" in beta.state
    assert gamma.state.startswith("resting") and (delta.runs, delta.score, delta.state) == (0, None, "ok")
    assert status.branches == ("auto-optimize/20261201-1000",) and status.library_alerts == ("edit_outcomes ×3",)
    assert [r["Δ last 2"] for r in rows_for_table(status)] == ["+3.0", "+0.0", "+0.0", "—"]


def test_luban_status_prints_the_table_or_one_json_document(tmp_path: Path):
    ws = library(tmp_path)
    shown = CliRunner().invoke(app, ["status", "--skills-dir", str(ws.skills_dir), "--mode", "full"],
                               env={"COLUMNS": "250"})
    assert shown.exit_code == 0, shown.output
    assert "4 skill(s), 3 held back" in shown.output and "auto-optimize/20261201-1000" in shown.output
    document = json.loads(CliRunner().invoke(app, ["status", "--skills-dir", str(ws.skills_dir), "--mode", "full",
                                                   "--json"]).output)
    assert [s["skill"] for s in document["skills"]] == ["alpha", "beta", "delta", "gamma"]
    missing = CliRunner().invoke(app, ["status", "--skills-dir", str(tmp_path / "elsewhere" / "skills")])
    assert missing.exit_code == 2 and "no Luban workspace" in missing.output
