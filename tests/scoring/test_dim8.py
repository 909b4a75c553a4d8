"""dim8's formula, its vetoes read over a text's readings, and the eval-mode factors (RUBRIC.md "dim8")."""

from __future__ import annotations

import pytest

from scoring.dim8 import SubScores, dim8_score, needs_full_test, text_veto
from scoring.samples import BASELINE, Measured


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


def test_one_judged_reading_is_never_vetoed_on_its_own():
    """RUBRIC.md: a single noisy reading's sub-scores enter the means as read; it says what it showed, and no 0."""
    s = score(accuracy=5.0, baseline_accuracy=6.0)
    assert s.score == round((8 * 5 + 5 * 10 + 5 * 9) / 18, 2)
    assert any(r.startswith("this reading: Accuracy 5 is below the baseline's 6") for r in s.reasons)
    assert dict(s.details)["vetoed"] is False and dict(s.details)["veto_signs"] == ("Accuracy 5 is below the baseline's 6",)
    assert score(compliance=7.9).score > 0


def test_an_exact_reading_is_its_texts_verdict():
    """A reading no model judged has no noise: it is the text's only reading, and its veto holds at once."""
    exact = score(compliance=7.9, eval_mode="fallback_dry", judge_count=0, baseline_accuracy=None)
    assert exact.score == 0 and exact.reasons[0].startswith("veto: Compliance 7.9/10 is under 80 %")
    assert score(compliance=8.0, eval_mode="fallback_dry", judge_count=0, baseline_accuracy=None).score > 0


def test_the_texts_accuracy_veto_is_read_over_its_readings():
    below = text_veto([5.1, 4.9, 5.0], [6.0, 6.1, 5.9], [9, 9, 9])
    assert below.holds and "below the baseline's 6.00 beyond their noise over 3 readings" in below.reasons[0]
    assert not text_veto([5.0], [6.0], [9.0]).holds  # one reading: never
    assert not text_veto([3.0, 9.0], [6.0, 6.5], [9, 9]).holds  # below on average, within the readings' spread
    assert text_veto([5.0, 5.0], [6.0, 6.0], [9, 9]).holds  # whole-point readings: the rounding is their least noise


def test_the_texts_compliance_veto_is_read_over_its_readings():
    assert text_veto([8, 8], [6, 6], [7.0, 7.2]).reasons[0].startswith("veto: Compliance 7.10/10 is under 80 %")
    assert not text_veto([8, 8], [6, 6], [6.0, 9.9]).holds
    assert not text_veto([8], [6], [2.0]).holds


def test_a_texts_dim8_is_zero_only_when_its_veto_holds():
    one = Measured.of({"dim8": [7.5], "dim8.accuracy": [5.0], BASELINE: [6.0], "dim8.compliance": [9.0]})
    assert one.value("dim8") == 7.5 and one.total(["dim8"]) == 15.0
    two = one.plus(Measured.of({"dim8": [7.4], "dim8.accuracy": [4.9], BASELINE: [6.1], "dim8.compliance": [9.0]}))
    assert two.veto().holds and two.value("dim8") == 0.0 and two.means()["dim8"] == 0.0 and two.total(["dim8"]) == 0.0
    assert two.mean("dim8") == pytest.approx(7.45)  # the readings themselves stay as read


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
