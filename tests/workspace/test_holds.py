"""Holds between runs: every pause, timed freeze, guard and budget tightening ends by itself; a person lifts the rest."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from flows.cli import app
from workspace import profile
from workspace.holds import lift, tick

TS = "2026-12-01T10:00:00+00:00"


def held() -> profile.LubanProfile:
    p = profile.LubanProfile()
    p.paused["alpha"] = profile.PausedSkill(reason="alert edit_outcomes (library) fired 3 times", since=TS)
    p.frozen["beta"] = profile.FrozenSkill(reason="extreme overfitting (Step D)", since=TS, runs_left=2)
    p.frozen["gamma"] = profile.FrozenSkill(reason="alert revert_rate escalated 5 times", since=TS)
    p.oscillation_guard.append(profile.OscillationGuard(dim="dim3", since=TS, skills=["alpha"], runs_left=2))
    p.edit_budget, p.budget_runs_left["*"] = 0.05, 2
    p.skill_edit_budget["delta"], p.budget_runs_left["delta"] = 0.05, 1
    p.alert_counters["revert_rate|gamma"] = {"count": 5, "frozen": True}
    p.alert_counters["edit_outcomes|*"] = {"count": 3, "paused": True}
    return p


def test_a_pause_is_served_for_its_runs_then_the_skill_is_edited_again():
    p, skills = held(), ["alpha", "beta", "gamma", "delta"]
    served = [tick(p, skills) for _ in range(3)]
    assert [sorted(t.measure_only) for t in served] == [["alpha"], ["alpha"], []]
    assert "alpha" not in p.paused and any("alpha: pause over" in line for line in served[2].ended)


def test_every_hold_with_a_length_ends_by_itself_and_an_alert_freeze_waits_for_a_person():
    p, skills = held(), ["alpha", "beta", "gamma", "delta"]
    ended = [line for _ in range(5) for line in tick(p, skills).ended]
    assert "beta" not in p.frozen and p.frozen["gamma"].runs_left is None  # a person lifts that one
    assert p.oscillation_guard == [] and p.edit_budget == 0.10 and p.skill_edit_budget == {} and p.budget_runs_left == {}
    assert any("freeze over" in line for line in ended) and any("guard on dim3" in line for line in ended)
    assert sum("edit budget back to 10%" in line for line in ended) == 2


def test_a_hold_counts_only_the_runs_of_its_skill():
    p = held()
    tick(p, ["zeta"])  # a run of another skill serves nothing of alpha's, beta's or delta's
    assert p.paused["alpha"].runs_left == 2 and p.frozen["beta"].runs_left == 2 and p.budget_runs_left["delta"] == 1
    assert p.oscillation_guard[0].runs_left == 2 and p.budget_runs_left["*"] == 1  # the workspace's budget: every run


def test_lift_ends_the_hold_and_the_counter_that_would_bring_it_back():
    p = held()
    said = lift(p, "gamma")
    assert "gamma" not in p.frozen and "revert_rate|gamma" not in p.alert_counters
    assert said == ["gamma: freeze (alert revert_rate escalated 5 times)", "alert counters reset: revert_rate|gamma"]
    said = lift(p, "alpha")  # the library paused it: the library's counter is reset too
    assert "alpha" not in p.paused and "edit_outcomes|*" not in p.alert_counters and p.oscillation_guard == []
    assert any("oscillation guard on dim3" in line for line in said)
    assert lift(p, None, budget=True) == ["edit budget back to 10% from 5%", "delta: edit budget back to 10% from 5%"]
    assert lift(p, "nobody") == []


def a_held_library(tmp_path: Path) -> tuple[Path, Path]:
    """A skills folder and its workspace's profile, holding what ``held`` holds: (skills, profile path)."""
    skills = tmp_path / "skills"
    (skills / "gamma").mkdir(parents=True)
    (skills / "gamma" / "SKILL.md").write_text("---\nname: gamma\ndescription: d\n---\n")
    path = tmp_path / "luban-workspace" / "luban-profile.json"
    path.parent.mkdir()
    profile.save(path, held())
    return skills, path


def test_luban_lift_says_what_it_lifted_and_unfreeze_still_works(tmp_path: Path):
    skills, path = a_held_library(tmp_path)
    result = CliRunner().invoke(app, ["lift", "gamma", "--skills-dir", str(skills)])
    assert result.exit_code == 0 and "lifted gamma: freeze" in result.output, result.output
    assert "gamma" not in profile.load(path).frozen and "revert_rate|gamma" not in profile.load(path).alert_counters
    result = CliRunner().invoke(app, ["lift", "--guard", "dim3", "--skills-dir", str(skills)])
    assert result.output.strip() == "lifted oscillation guard on dim3"
    result = CliRunner().invoke(app, ["unfreeze", "beta", "--skills-dir", str(skills)])
    assert result.exit_code == 0 and "lifted beta: freeze" in result.output
    again = CliRunner().invoke(app, ["lift", "beta", "--skills-dir", str(skills)])
    assert again.output.strip() == "beta: nothing held it"
    bare = CliRunner().invoke(app, ["lift", "--skills-dir", str(skills)])
    assert bare.exit_code == 2 and "name a skill" in bare.output


def test_an_old_profile_s_rounds_left_is_read_as_runs_left(tmp_path: Path):
    path = tmp_path / "luban-profile.json"
    path.write_text('{"frozen": {"a": {"reason": "r", "since": "t", "rounds_left": 5}}}')
    assert profile.load(path).frozen["a"].runs_left == 5


def test_a_library_hold_lifted_for_one_skill_is_lifted_for_each_and_said():
    """`luban lift pr-review` had left db-migration frozen by the same library-wide hold, with its counter reset."""
    p = held()
    p.paused["epsilon"] = profile.PausedSkill(reason="alert edit_outcomes (library) fired 3 times", since=TS)
    said = lift(p, "alpha")
    assert "epsilon" not in p.paused and "gamma" in p.frozen  # gamma's own freeze is not the library's
    assert "epsilon: pause (alert edit_outcomes (library) fired 3 times) — the library's hold, lifted with alpha's" in said


def test_lift_all_lifts_every_hold_and_says_each(tmp_path: Path):
    skills, path = a_held_library(tmp_path)
    result = CliRunner().invoke(app, ["lift", "--all", "--skills-dir", str(skills)])
    assert result.exit_code == 0, result.output
    for line in ("alpha: pause", "beta: freeze", "gamma: freeze", "delta: edit budget back to 10%"):
        assert f"lifted {line}" in result.output, result.output
    after = profile.load(path)
    assert not after.frozen and not after.paused and not after.skill_edit_budget and not after.oscillation_guard
