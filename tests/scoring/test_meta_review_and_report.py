"""Meta-review on a synthetic multi-skill history, mode feedback, and the report."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd

from scoring.governance.charts import chart_png
from scoring.governance.meta_review import meta_review
from scoring.governance.mode_feedback import mode_feedback
from scoring.governance.report import RunFacts, latest_runs, render
from workspace.results_tsv import ResultRow, ResultsFile


def scores(**dims) -> dict:
    base = {"dim1": 10, "dim2": 6, "dim3": 5, "dim4": 5, "dim7": 7, "dim9": 3}
    base.update(dims)
    return base


def history(tmp_path: Path) -> pd.DataFrame:
    rows = []
    for skill, held_fail in (("alpha", True), ("beta", True), ("gamma", False)):
        rows += [
            ResultRow("2026-12-01T10:00:00+00:00", skill, 0, "baseline", "full", new_score=40.0, scores=scores(), eval_mode="full_test"),
            ResultRow("2026-12-01T10:01:00+00:00", skill, 1, "keep", "full", old_score=40.0, new_score=44.0, delta=4.0,
                      dim_changed="dim4", edit_pct=3.0, note="strategy=stop-before-irreversible; expected=3.0; added STOP",
                      scores=scores(dim4=10), eval_mode="full_test"),
            ResultRow("2026-12-01T10:02:00+00:00", skill, 2, "revert", "full", old_score=44.0, new_score=43.0, delta=-1.0,
                      dim_changed="dim5", edit_pct=5.0, note="strategy=add-examples" + ("; held_out_fail=true" if held_fail else ""),
                      scores=scores(dim4=10, dim5=4), eval_mode="full_test"),
            ResultRow("2026-12-01T10:03:00+00:00", skill, 3, "keep", "full", old_score=44.0, new_score=45.0, delta=1.0,
                      dim_changed="dim9", edit_pct=2.0, note="strategy=counter-examples; expected=2.0",
                      scores=scores(dim4=9, dim9=10), eval_mode="full_test"),
        ]
    frames = []
    for skill in ("alpha", "beta", "gamma"):
        results = ResultsFile(tmp_path / skill / "results.tsv")
        for row in rows:
            if row.skill == skill:
                results.append(row)
        frames.append(results.frame())
    return pd.concat(frames, ignore_index=True)


def test_meta_review_finds_patterns_reverts_overfitting_and_oscillation(tmp_path: Path):
    review = meta_review(history(tmp_path))
    assert review is not None
    by_section: dict[str, list] = {}
    for lesson in review.lessons:
        by_section.setdefault(lesson.section, []).append(lesson)
    high = by_section["高收益改动"]
    assert [(entry.title, entry.fields["count"], entry.fields["mean_delta"]) for entry in high] == [
        ("stop-before-irreversible", "3", "+4.0"), ("counter-examples", "3", "+1.0")]
    assert [(e.title, e.fields["reverts"]) for e in by_section["低收益/拒绝改动"]] == [("add-examples", "3")]
    assert [e.fields["skills"] for e in by_section["过拟合模式库"]] == ["alpha, beta"]
    # dim4's recorded scores went 5 -> 10 -> 9, but no kept edit established a gain that a later one undid
    assert review.oscillating_dims == {}
    assert review.preferred_strategies == ("stop-before-irreversible", "counter-examples")


def test_meta_review_needs_two_skills(tmp_path: Path):
    frame = history(tmp_path)
    assert meta_review(frame[frame["skill"] == "alpha"]) is None


def test_mode_feedback():
    assert "there is gold" in mode_feedback("quick", [[1.0, 2.0, 2.5]])
    assert mode_feedback("quick", [[1.0, 2.0, 2.0]]) is None
    assert "quick mode is enough" in mode_feedback("full", [[1.0], [0.5, 1.0], [2.9]])
    assert mode_feedback("full", [[1.0], [3.5], [0.2]]) is None


def test_report_renders_from_records_and_its_chart_is_a_png(tmp_path: Path):
    frame = history(tmp_path)
    text = render(frame, RunFacts(mode="full", branch="auto-optimize/20261201-1000", usage={"calls": 42, "tokens_in": 9, "tokens_out": 3},
                                  alerts=("revert_rate beyond μ − 2.50σ",)))
    assert "- Experiments: 9" in text and "- Kept: 6 (67 %)" in text and "- Rollbacks: 3" in text
    assert "| alpha | 40.0 | 45.0 | +5.0 |" in text and "| **mean** | | | +5.0 |" in text
    assert "### dim4 Checkpoint design" in text and "[beta] stop-before-irreversible +4.0: added STOP" in text
    assert "| LLM calls | 42 |" in text and "Branch: auto-optimize/20261201-1000" in text
    png = chart_png(frame)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image

    image = matplotlib.image.imread(io.BytesIO(png), format="png")
    assert image.shape[0] == 400 and image.shape[1] == 700


def test_latest_runs_keeps_only_the_last_run_of_each_skill(tmp_path: Path):
    frame = history(tmp_path)
    again = frame[frame["skill"] == "alpha"].head(1).assign(timestamp="2026-12-02T00:00:00+00:00")
    combined = pd.concat([frame, again], ignore_index=True)
    latest = latest_runs(combined)
    assert len(latest[latest["skill"] == "alpha"]) == 1 and len(latest[latest["skill"] == "beta"]) == 4
    assert json.loads(latest.iloc[0]["scores"])["dim1"] == 10


def _one_skill(tmp_path: Path, undo: ResultRow) -> pd.DataFrame:
    results = ResultsFile(tmp_path / "gamma.tsv")
    results.append(ResultRow("2026-12-01T10:00:00+00:00", "gamma", 0, "baseline", "full", new_score=40.0))
    results.append(ResultRow("2026-12-01T10:01:00+00:00", "gamma", 1, "keep", "full", old_score=40.0, new_score=42.0,
                             delta=2.0, dim_changed="dim7", note="strategy=heading-jump; fixed a jump"))
    results.append(ResultRow("2026-12-01T10:02:00+00:00", "gamma", 2, "keep", "full", old_score=42.0, new_score=43.0,
                             delta=1.0, dim_changed="dim1", note="strategy=filler-ending; removed 'etc.'"))
    results.append(undo)
    return results.frame()


def test_a_person_s_reject_takes_back_every_keep_of_the_run_in_the_report(tmp_path: Path):
    """Before: the report listed the rolled-back edits as gains after the skill's checkpoint said 'not good'."""
    frame = _one_skill(tmp_path, ResultRow("2026-12-01T10:03:00+00:00", "gamma", 3, "revert", "full", old_score=43.0,
                                           new_score=40.0, stop="user_rejected", note="restored the original: no"))
    text = render(frame, RunFacts(mode="full"))
    assert "- Kept: 0" in text and "No edit was kept." in text and "| gamma | 40.0 | 40.0 | +0.0 |" in text


def test_the_held_out_rollback_takes_back_only_the_last_keep(tmp_path: Path):
    frame = _one_skill(tmp_path, ResultRow("2026-12-01T10:03:00+00:00", "gamma", 3, "revert", "full", old_score=43.0,
                                           new_score=42.0, dim_changed="dim1", note="step=B; held_out_fail=true; rolled back"))
    text = render(frame, RunFacts(mode="full"))
    assert "- Kept: 1" in text and "[gamma] heading-jump +2.0" in text and "filler-ending" not in text.split("## Keep")[0]
    assert "| gamma | 40.0 | 42.0 | +2.0 |" in text
