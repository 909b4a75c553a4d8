"""Diagnosis by weakness depth, with the dim2/3/4 cluster, guarded and preferred dimensions."""

from __future__ import annotations

from scoring.diagnosis import diagnose
from scoring.model import WEIGHTS, DimensionScore, SkillScore, unscored


def card(**scores) -> SkillScore:
    dims = []
    for dim in WEIGHTS:
        value = scores.get(dim, 10)
        dims.append(unscored(dim, "x") if value is None else DimensionScore(dim, value, "llm", ("x",)))
    return SkillScore("s", tuple(dims), ())


def test_deepest_weakness_first():
    # dim5: (10-6)*18 = 72 beats dim7: (10-5)*12 = 60 beats dim1: 70? (10-0)*7 = 70
    assert diagnose(card(dim5=6, dim7=5, dim1=0)) == ["dim5", "dim1", "dim7"]


def test_cluster_goes_first_when_its_combined_depth_is_largest():
    # dim2 (11*3=33) + dim3 (11*3=33) + dim4 (6*5=30) = 96 > dim5 (18*4=72)
    assert diagnose(card(dim2=7, dim3=7, dim4=5, dim5=6)) == ["dim2", "dim3", "dim4", "dim5"]
    # a shallow cluster does not jump the queue
    assert diagnose(card(dim4=9, dim5=2)) == ["dim5", "dim4"]


def test_guarded_unscored_and_perfect_dims_are_skipped():
    assert diagnose(card(dim5=6, dim7=5, dim8=None), guarded=frozenset({"dim5"})) == ["dim7"]
    assert diagnose(card()) == []


def test_preferred_patterns_break_near_ties():
    # dim9: 6*6 = 36 vs dim6: 4*9 = 36 -> dim6 before dim9 alphabetically; preferring dim9 flips it
    assert diagnose(card(dim9=4, dim6=1))[:2] == ["dim6", "dim9"]
    assert diagnose(card(dim9=4, dim6=1), preferred=frozenset({"dim9"}))[:2] == ["dim9", "dim6"]
