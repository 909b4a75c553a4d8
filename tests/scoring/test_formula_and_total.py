"""Weights, the total, the deterministic subtotal, dim10 and the strict-improvement rule."""

from __future__ import annotations

import pytest

from scoring import WEIGHTS, DimensionScore, is_improvement, round1
from scoring.formula import dim10_score
from scoring.model import DETERMINISTIC_DIMS, LLM_DIMS
from tests.scoring.helpers import score, skill_text

PERFECT_BODY = (
    "# T\n\n## Overview\n\n## Workflow\n\n## Rules\n\nDo not a.\nNever b.\nAvoid c.\n\n🛑 STOP before deleting.\n"
)


def test_weights_sum_to_100_and_deterministic_part_is_31():
    assert sum(WEIGHTS.values()) == 100
    assert sum(WEIGHTS[d] for d in DETERMINISTIC_DIMS) == 31
    assert sum(WEIGHTS[d] for d in LLM_DIMS) == 64
    assert WEIGHTS["dim10"] == 5


def test_perfect_deterministic_skill_scores_31_plus_dim10():
    s = score(skill_text(PERFECT_BODY))
    assert [s.dim(d).score for d in DETERMINISTIC_DIMS] == [10, 10, 10, 10]
    assert s.deterministic_subtotal == 31.0
    assert s.total == 36.0 and s.points_covered == 36
    assert all(s.dim(d).source == "unscored" and s.dim(d).score is None for d in LLM_DIMS)


def test_total_with_llm_dims_supplied():
    llm = {d: DimensionScore(d, 7.5, "llm", ("judge",)) for d in LLM_DIMS}
    s = score(skill_text(PERFECT_BODY), llm_dims=llm)
    assert s.points_covered == 100
    assert s.total == round1(31 + 5 + 7.5 * 64 / 10) == 84.0
    assert s.llm_scored


def test_total_uses_half_up_rounding_on_exact_decimals():
    # Everything scores 0 except dim10 = 8.5 (three P1): 8.5 × 5 / 10 = 4.25 exactly,
    # which is 4.3 half-up, where Python's round() would give 4.2.
    s = score("# a\n### b\n", mode="full", review_findings=(0, 3))
    assert [s.dim(d).score for d in DETERMINISTIC_DIMS] == [0, 0, 0, 0]
    assert s.dim("dim10").score == 8.5
    assert round(4.25, 1) == 4.2
    assert s.total == 4.3


@pytest.mark.parametrize("value, expected", [(4.25, 4.3), (4.35, 4.4), (0.05, 0.1), (2.675, 2.7), (-1.25, -1.3), (7.0, 7.0)])
def test_round1_half_up(value, expected):
    assert round1(value) == expected


@pytest.mark.parametrize(
    "p0, p1, expected",
    [(0, 0, 10.0), (0, 1, 9.5), (0, 4, 8.0), (1, 0, 4.0), (1, 5, 4.0), (2, 0, 4.0), (3, 0, 1.0), (0, 20, 1.0), (0, 18, 1.0), (0, 17, 1.5)],
)
def test_dim10_formula(p0, p1, expected):
    assert dim10_score(p0, p1) == expected


def test_dim10_rejects_negative_counts():
    with pytest.raises(ValueError):
        dim10_score(-1, 0)


def test_dim10_defaults_to_ten_labelled_in_quick_mode_and_without_review():
    quick = score(skill_text("b"), mode="quick").dim("dim10")
    norev = score(skill_text("b"), mode="full").dim("dim10")
    assert quick.score == norev.score == 10
    assert "quick mode" in quick.reasons[0] and "no review ran" in norev.reasons[0]
    assert score(skill_text("b"), mode="full", review_findings=(1, 0)).dim("dim10").score == 4.0


@pytest.mark.parametrize(
    "old, new, better",
    [(50.0, 50.1, True), (50.0, 50.0, False), (50.04, 50.0, False), (50.0, 50.04, False), (50.0, 50.05, True), (51, 50, False)],
)
def test_is_improvement_compares_at_one_decimal(old, new, better):
    assert is_improvement(old, new) is better


def test_dimension_score_refuses_incoherent_values():
    with pytest.raises(ValueError):
        DimensionScore("dim2", None, "llm", ())
    with pytest.raises(ValueError):
        DimensionScore("dim2", 3, "unscored", ())
    with pytest.raises(ValueError):
        DimensionScore("dim2", 11, "llm", ())
    with pytest.raises(ValueError):
        DimensionScore("dim11", 1, "llm", ())


def test_llm_dims_only_accept_llm_dimensions():
    with pytest.raises(ValueError, match="llm_dims"):
        score(skill_text("b"), llm_dims={"dim1": DimensionScore("dim1", 5, "llm", ())})


def test_results_are_frozen():
    s = score(skill_text("b"))
    with pytest.raises(AttributeError):
        s.total = 99  # type: ignore[misc]
    with pytest.raises(AttributeError):
        s.dims[0].score = 1  # type: ignore[misc]


def test_json_shape_of_a_score():
    d = score(skill_text(PERFECT_BODY)).to_dict()
    assert set(d["dims"]) == set(WEIGHTS)
    assert d["dims"]["dim1"]["checks"] == {
        "frontmatter": True, "name": True, "description": True, "what": True,
        "when": True, "triggers": True, "no_filler": True,
    }
    assert {"score", "weight", "source", "reasons"} <= set(d["dims"]["dim7"])
    assert d["dims"]["dim2"]["score"] is None and d["dims"]["dim2"]["source"] == "unscored"
