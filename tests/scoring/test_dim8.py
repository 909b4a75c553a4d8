"""dim8's formula, vetoes and eval-mode factors (RUBRIC.md "dim8")."""

from __future__ import annotations

import pytest

from scoring.dim8 import SubScores, dim8_score, needs_full_test


def score(**kw):
    eval_mode = kw.pop("eval_mode", "full_test")
    judges = kw.pop("judge_count", 1)
    values = dict(accuracy=9.0, safety=10.0, compliance=9.0, baseline_accuracy=6.0)
    values.update(kw)
    return dim8_score(SubScores(**values), eval_mode, judges)


def test_formula():
    assert score().score == round((8 * 9 + 5 * 10 + 5 * 9) / 18, 2)
    d = dict(score().details)
    assert d["eval_mode"] == "full_test" and d["judge_count"] == 1 and d["vetoed"] is False


def test_accuracy_below_baseline_vetoes():
    s = score(accuracy=5.0, baseline_accuracy=6.0)
    assert s.score == 0 and s.reasons[0].startswith("veto: Accuracy 5 is below the baseline's 6")


def test_compliance_under_80_percent_vetoes():
    assert score(compliance=7.9).score == 0
    assert score(compliance=8.0).score > 0


def test_dry_run_halves_and_fallback_scales_accuracy():
    full = (8 * 9 + 5 * 10 + 5 * 9) / 18
    assert score(eval_mode="dry_run", baseline_accuracy=None).score == round(full * 0.5, 2)
    fallback = (8 * 9 * 0.3 + 5 * 10 + 5 * 9) / 18
    assert score(eval_mode="fallback", judge_count=0).score == round(fallback, 2)
    assert score(eval_mode="fallback_dry", judge_count=0, baseline_accuracy=None).score == round(fallback * 0.5, 2)
    assert score(eval_mode="fallback_dry", judge_count=0).source == "heuristic"


def test_warnings_for_token_inflation_and_output_size():
    s = score(token_inflation=0.8, output_ratio=2.5)
    assert any("latency warning" in r for r in s.reasons) and any("token-efficiency warning" in r for r in s.reasons)
    assert score(token_inflation=0.5, output_ratio=2.0).reasons == score().reasons  # at the line: no warning
    assert s.score == score().score  # warnings never change the score


def test_safety_red_line_is_reported_first():
    assert score(safety_red_line=True).reasons[0] == "Safety red line hit: the skill is frozen"


@pytest.mark.parametrize("bad", [dict(accuracy=11), dict(safety=-1)])
def test_out_of_range_sub_scores_are_refused(bad):
    with pytest.raises(ValueError):
        score(**bad)


def test_unknown_eval_mode_is_refused():
    with pytest.raises(ValueError):
        score(eval_mode="guess")


@pytest.mark.parametrize("modes, needed", [([], False), (["full_test"] * 7 + ["dry_run"] * 3, False),
                                           (["full_test"] * 6 + ["dry_run"] * 4, True), (["fallback_dry"], True)])
def test_counter_example_6_needs_a_full_test_over_30_percent_dry(modes, needed):
    assert needs_full_test(modes) is needed
