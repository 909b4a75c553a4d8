"""Oscillation is a kept change undone: an established gain that later kept edits reverse beyond noise."""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest

from scoring.governance.oscillation import ALPHA, oscillations, undone_gains
from scoring.samples import quantile

Z = quantile(ALPHA, None)


def gain(dim: str, delta: float, se: float = 0.3) -> dict:
    return {dim: {"delta": delta, "se": se, "lower": delta - 2 * se, "status": "gain"}}


def within(dim: str, delta: float, se: float = 0.3) -> dict:
    return {dim: {"delta": delta, "se": se, "lower": delta - 2 * se, "upper": delta + 2 * se, "status": "within"}}


def test_a_gain_undone_beyond_noise_by_later_keeps_oscillates():
    assert undone_gains([gain("dim3", 1.5), within("dim3", -0.8), within("dim3", -0.8)]) == {"dim3"}


@pytest.mark.parametrize("later", [
    [within("dim3", -0.5)],  # less than the established part of the gain (1.5 − 0.6 = 0.9)
    [within("dim3", -1.0, se=0.8)],  # as much, but within its noise: the sum's upper bound is above 0
    [within("dim5", -2.0)],  # another dimension
    [],
])
def test_what_does_not_undo_a_gain(later):
    assert undone_gains([gain("dim3", 1.5), *later]) == set()


def test_a_later_difference_is_read_with_its_own_bound_not_a_normal_one():
    """Seen in the many-runs test (then twelve weeks): a neutral edit kept a week after a dim8 'gain' read −0.625 with se 0.115 — an se
    from three df, whose keep decision put the upper bound at +0.466. z·se said undone; its own bound says noise."""
    established = {"dim8": {"delta": 0.695, "se": 0.159, "df": 11, "lower": 0.093, "upper": 1.313, "status": "gain"}}
    later = {"dim8": {"delta": -0.625, "se": 0.115, "df": 3, "lower": -2.807, "upper": 0.466, "status": "within"}}
    assert undone_gains([established, later]) == set()
    sure = {"dim8": later["dim8"] | {"upper": -0.2}}  # the same Δ, bounded below 0 by its own decision: undone
    assert undone_gains([established, sure]) == {"dim8"}


def test_an_exact_dimension_or_an_unestablished_rise_is_not_a_gain_to_undo():
    exact = {"dim4": {"delta": 2.0, "status": "gain"}}  # no se: a rule dimension (its loss would veto a keep)
    assert undone_gains([exact, {"dim4": {"delta": -2.0, "se": 0.1, "status": "within"}}]) == set()
    assert undone_gains([within("dim3", 1.5), within("dim3", -1.0), within("dim3", -1.0)]) == set()


def rows(skill: str, runs: list[list[tuple[str, dict]]]) -> list[dict]:
    out, minute = [], 0
    for run in runs:
        for status, evidence in [("baseline", {}), *run]:
            minute += 1
            out.append({"skill": skill, "status": status, "timestamp": f"2026-12-01T10:{minute:02d}:00",
                        "evidence": json.dumps({"dims": evidence}) if evidence else ""})
    return out


def test_a_rejected_candidates_means_say_nothing():
    """Reverted candidates move both ways under any noise: only kept edits are read."""
    history = rows("alpha", [[("keep", gain("dim3", 1.5)), ("revert", within("dim3", -3.0)), ("revert", within("dim3", -3.0))]])
    assert oscillations(pd.DataFrame(history), window=5) == {}


def test_only_the_last_runs_are_read_so_an_expired_guard_is_not_put_back():
    undone = [[("keep", gain("dim3", 1.5))], [("keep", within("dim3", -1.0))], [("keep", within("dim3", -1.0))]]
    frame = pd.DataFrame(rows("alpha", undone + [[]] * 2))
    assert oscillations(frame, window=5) == {"dim3": ("alpha",)}
    assert oscillations(pd.DataFrame(rows("alpha", undone + [[]] * 3)), window=5) == {}


def test_noise_alone_rarely_makes_an_oscillation():
    """Kept edits that truly change nothing on a dimension: their Δ there is N(0, se). Over 2 000 skills of ten
    keeps each, an established 'gain' (by chance) undone (by chance) is rare: far under one skill in fifty."""
    rng = random.Random(7)
    flagged = 0
    for _ in range(2000):
        edits = []
        for _ in range(10):
            delta = rng.gauss(0, 0.4)
            status = "gain" if delta - Z * 0.4 > 0 else "within"
            edits.append({"dim5": {"delta": delta, "se": 0.4, "lower": delta - Z * 0.4, "status": status}})
        flagged += bool(undone_gains(edits))
    assert flagged / 2000 < 0.02, flagged
