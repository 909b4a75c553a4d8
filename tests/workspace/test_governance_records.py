"""Governance results on disk: escalation counters in the profile, the meta-review in meta_learnings."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from flows.cli import app
from scoring.governance.alerts import Alert
from scoring.governance.meta_review import Lesson, MetaReview
from workspace import meta_learnings, profile
from workspace.governance_records import apply_escalation, mode_history, write_meta_review
from workspace.layout import Workspace
from workspace.results_tsv import ResultRow, ResultsFile


def ws(tmp_path: Path) -> Workspace:
    return Workspace.open(tmp_path / "skills", "full")


def alert(fired: bool, skill: str = "alpha", run: str = "", escalates: bool = True, name: str = "revert_rate") -> Alert:
    return Alert(name, skill, 0.0, 0.1, fired, True, "m", escalates, run)


def test_escalation_counters_persist_across_runs_and_freeze_at_five(tmp_path: Path):
    w = ws(tmp_path)
    actions = [apply_escalation(w, [alert(True, run=f"r{i}"), alert(False, "beta", f"r{i}")], ["alpha", "beta"])
               for i in range(5)]
    assert [a[0] for a in actions] == [("revert_rate", "alpha", a) for a in ("record", "record", "pause", "pause", "freeze")]
    p = profile.load(w.profile)
    assert p.alert_counters["revert_rate|alpha"]["count"] == 5 and "alpha" in p.frozen and "alpha" not in p.paused
    assert p.alert_counters["revert_rate|beta"]["count"] == 0


def test_a_run_is_observed_once_however_often_its_alerts_are_computed(tmp_path: Path):
    """The same records checked again (a paused skill added none) neither climb the ladder nor rest it."""
    w = ws(tmp_path)
    for _ in range(6):
        apply_escalation(w, [alert(True, run="the-same-run")], ["alpha"])
    p = profile.load(w.profile)
    assert p.alert_counters["revert_rate|alpha"]["count"] == 1 and not p.paused and not p.frozen


def test_each_mode_counts_on_its_own_and_a_first_firing_keeps_its_reference(tmp_path: Path):
    """Quick and full runs read their own records: a quick run's alert must not climb full mode's ladder."""
    full, quick = ws(tmp_path), Workspace.open(tmp_path / "skills", "quick")
    first = Alert("edit_outcomes", "*", -0.5, 0.2, True, True, "m", run="r0", history_until="h0")
    apply_escalation(full, [first], ["alpha"])
    apply_escalation(quick, [alert(True, run="q0")], ["alpha"])
    counters = profile.load(full.profile).alert_counters
    assert counters["edit_outcomes|*"]["reference"] == "h0" and counters["edit_outcomes|*"]["last_fired"] == "r0"
    assert counters["revert_rate@quick|alpha"]["count"] == 1 and "revert_rate|alpha" not in counters


def test_a_fixed_check_is_noted_and_never_counted(tmp_path: Path):
    w = ws(tmp_path)
    for i in range(6):
        actions = apply_escalation(w, [alert(True, run=f"r{i}", escalates=False, name="flat_ratio")], ["alpha"])
        assert actions == [("flat_ratio", "alpha", "note")]
    p = profile.load(w.profile)
    assert p.alert_counters == {} and not p.paused and not p.frozen


def test_a_library_alert_pauses_every_skill_of_the_run_and_its_recovery_lifts_them(tmp_path: Path):
    w = ws(tmp_path)
    for i in range(3):
        apply_escalation(w, [alert(True, "*", f"r{i}")], ["alpha", "beta"])
    p = profile.load(w.profile)
    assert sorted(p.paused) == ["alpha", "beta"] and "(library)" in p.paused["alpha"].reason
    for i in range(3, 8):
        actions = apply_escalation(w, [alert(False, "*", f"r{i}")], ["alpha", "beta"])
    assert actions == [("revert_rate", "*", "recover")] and profile.load(w.profile).paused == {}


def test_meta_review_is_appended_with_ids_and_guards_oscillating_dims(tmp_path: Path):
    w = ws(tmp_path)
    review = MetaReview((Lesson("高收益改动", "stop-before-irreversible", {"count": "3", "mean_delta": "+4.0"}),),
                        {"dim5": ("a", "b")}, ("stop-before-irreversible",))
    assert write_meta_review(w, review, 2) == ["HY-0001"]
    assert write_meta_review(w, review, 2) == ["HY-0002"]
    meta = meta_learnings.load(w.meta_learnings)
    assert meta.sections["高收益改动"][0].fields["mean_delta"] == "+4.0" and meta.last_epoch_review != "-"
    guard = profile.load(w.profile).oscillation_guard
    assert [(g.dim, g.skills, g.runs_left) for g in guard] == [("dim5", ["a"], 5), ("dim5", ["b"], 5)]  # not added twice


def record(w: Workspace) -> None:
    for skill in ("alpha", "beta"):
        results = ResultsFile(w.results_tsv(skill))
        results.append(ResultRow("2026-12-01T10:00:00+00:00", skill, 0, "baseline", "full", new_score=40.0))
        results.append(ResultRow("2026-12-01T10:05:00+00:00", skill, 1, "keep", "full", old_score=40.0, new_score=43.5,
                                 delta=3.5, dim_changed="dim4", note="strategy=stop; added a STOP"))


def test_history_command_shows_newest_first(tmp_path: Path):
    w = ws(tmp_path)
    record(w)
    result = CliRunner().invoke(app, ["history", "alpha", "--skills-dir", str(w.skills_dir)], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.stdout
    assert result.stdout.index("keep") < result.stdout.index("baseline")
    missing = CliRunner().invoke(app, ["history", "nope", "--skills-dir", str(w.skills_dir)])
    assert missing.exit_code == 2 and "no full-mode records for 'nope'" in missing.stderr
    other_mode = CliRunner().invoke(app, ["history", "alpha", "--skills-dir", str(w.skills_dir), "--mode", "quick"])
    assert other_mode.exit_code == 2


def test_report_command_rebuilds_from_records_alone(tmp_path: Path):
    w = ws(tmp_path)
    record(w)
    assert len(mode_history(w)) == 4
    result = CliRunner().invoke(app, ["report", "--skills-dir", str(w.skills_dir)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.stdout
    reports = sorted((w.mode_dir / "reports").iterdir())
    md = next(p for p in reports if p.suffix == ".md")
    png = next(p for p in reports if p.suffix == ".png")
    assert "| alpha | 40.0 | 43.5 | +3.5 |" in md.read_text() and png.read_bytes()[:4] == b"\x89PNG"
    assert f"report: {md}" in result.stdout
