"""The library's checks: the exact outcome tail, a window that fires on a drop, an episode that confirms a change
that persists and not one that passed, and a drift read against the texts' readings before it."""

from __future__ import annotations

import itertools
import math

import pandas as pd
import pytest

from scoring.governance.escalation import Escalation, advance
from scoring.governance.library_alerts import CONFIRM, CONFIRM_ALPHA, check_library, lower_tail
from scoring.governance.roi import roi_precheck


def stamp(run: int, skill: int) -> str:
    return f"2026-03-{run + 1:02d}T10:00:{skill:02d}+00:00"


def runs(outcomes: list[list[tuple[int, int, int]]], shifts: list[list[float]] | None = None) -> pd.DataFrame:
    """One row per (run, skill): ``outcomes[run][skill]`` = (attempts, kept, worse); ``shifts`` the same text's
    baseline readings (skill s reads ``shifts[run][s]`` on an unchanged text)."""
    rows = []
    for run, skills in enumerate(outcomes):
        for skill, (attempts, kept, worse) in enumerate(skills):
            reading = shifts[run][skill] if shifts else math.nan
            rows.append({"skill": f"s{skill}", "started": stamp(run, skill), "attempts": attempts, "keeps": kept,
                         "worse": worse, "sha": "same" if shifts else "", "models": "j/t",
                         "baseline": 70 + reading if shifts else math.nan,
                         "shift": math.nan})
    frame = pd.DataFrame(rows)
    if shifts:  # what run_metrics derives: a baseline minus the skill's previous baseline of the same text
        frame["shift"] = frame.groupby("skill")["baseline"].diff()
    return frame


HEALTHY = [(2, 1, 0), (2, 0, 0), (2, 1, 0)]  # three skills a run: 2 kept, none worse in 6 attempts
BAD = [(2, 0, 1), (2, 0, 1), (2, 0, 2)]  # none kept, 4 worse in 6


def test_the_outcome_tail_is_exact():
    kept, worse = 0.3, 0.2
    for attempts in (1, 3, 5):
        for total in range(-attempts, attempts + 1):
            brute = sum(math.prod(kept if m == 1 else worse if m == -1 else 1 - kept - worse for m in moves)
                        for moves in itertools.product((1, 0, -1), repeat=attempts) if sum(moves) <= total)
            assert lower_tail(kept, worse, attempts, total) == pytest.approx(brute)


def test_the_window_fires_on_a_drop_and_names_the_history_it_read():
    steady = runs([HEALTHY] * 6)
    assert not check_library(steady)[0].fired and check_library(steady)[0].active
    alert = check_library(runs([HEALTHY] * 6 + [BAD]))[0]
    assert alert.fired and alert.value == pytest.approx(-4 / 6)
    assert alert.history_until == stamp(5, 2)  # the newest run before the window: an episode's reference


def test_a_firing_opens_an_episode_that_confirms_a_change_that_persists():
    history = [HEALTHY] * 6 + [BAD]
    first = check_library(runs(history))[0]
    counter, action = advance(Escalation(), first.fired, first.run, first.history_until)
    assert action == "record" and counter.reference == stamp(5, 2) and counter.last_fired == stamp(6, 2)
    still_bad = check_library(runs([*history, [(1, 0, 1), (1, 0, 1), (1, 0, 0)]]), {"edit_outcomes": counter})[0]
    assert still_bad.fired and f"{CONFIRM_ALPHA:.2%}" in still_bad.message  # 3 fresh attempts, 2 worse: under 5 %
    counter, action = advance(counter, True, still_bad.run)
    assert action == "record" and counter.count == 2 and counter.reference == stamp(5, 2)  # the reference stays
    passed = check_library(runs([*history, [(1, 0, 1), (1, 0, 1), (1, 0, 0)], HEALTHY]), {"edit_outcomes": counter})[0]
    assert passed.active and not passed.fired  # healthy attempts since: the change did not persist
    waiting = check_library(runs([*history, [(1, 0, 0), (0, 0, 0), (0, 0, 0)]]),
                            {"edit_outcomes": advance(Escalation(), True, first.run, first.history_until)[0]})[0]
    assert not waiting.active and f"{CONFIRM} needed" in waiting.message  # one fresh attempt is not evidence


def test_a_counter_that_resets_closes_its_episode():
    counter = advance(Escalation(), True, "r0", "h")[0]
    for quiet in range(10):
        counter, action = advance(counter, False, f"q{quiet}")
    assert action == "reset" and counter.count == 0 and counter.reference == ""


def test_drift_that_persists_confirms_against_the_readings_before_it():
    readings = [[0.3, -0.2, 0.1], [-0.1, 0.2, -0.3], [0.2, 0.0, -0.1], [-0.2, 0.1, 0.3], [0.1, -0.3, 0.0],
                [0.0, 0.2, -0.2]]
    outcomes = [HEALTHY] * 8
    first = check_library(runs(outcomes[:7], [*readings, [1.5, 1.5, 1.5]]))[1]
    assert first.fired and first.name == "score_shift"
    counter = advance(Escalation(), True, first.run, first.history_until)[0]
    # the next run reads the same texts 1.5 high again: no shift from the last baseline, but against the readings
    # before the episode the drift is still there
    again = check_library(runs(outcomes, [*readings, [1.5, 1.5, 1.5], [1.6, 1.4, 1.5]]), {"score_shift": counter})[1]
    assert again.active and again.fired, again.message
    back = check_library(runs(outcomes, [*readings, [1.5, 1.5, 1.5], [0.1, -0.1, 0.0]]), {"score_shift": counter})[1]
    assert back.active and not back.fired, back.message


def test_a_watched_library_does_not_rest_a_skill_that_keeps_nothing():
    assert roi_precheck(60, 5, [0.0, 0.0, 0.0], 7).decision == "recommend_skip"
    watched = roi_precheck(60, 5, [0.0, 0.0, 0.0], 7, watched=True)
    assert watched.decision == "optimize" and "watching" in watched.estimate
