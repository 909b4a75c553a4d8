"""The eight alerts just inside and just outside their thresholds, k from scipy, and the escalation ladder."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy import stats

from scoring.governance.alerts import binomial_tail, check_alerts, k_for, run_metrics
from scoring.governance.escalation import Escalation, observe
from workspace.results_tsv import COLUMNS


def test_k_is_the_bonferroni_quantile_from_scipy():
    assert k_for(4) is None
    assert k_for(5) == pytest.approx(stats.t.isf(0.05 / 8, 4))
    assert k_for(29) == pytest.approx(stats.t.isf(0.05 / 8, 28))
    assert k_for(30) == pytest.approx(stats.norm.isf(0.05 / 8))
    assert 2.49 < k_for(30) < 2.51


def metrics(history: list[dict], current: dict) -> pd.DataFrame:
    base = {"run": 1, "dry_run_ratio": 0.0, "revert_rate": 0.5, "delta_mean": 1.0, "flat_ratio": 0.0,
            "mode_completeness": 1.0, "rejected_hit_rate": 0.1, "budget_use": 5.0, "assessment_gap": 1.0,
            "attempts": 2, "keeps": 1, "proposals": 2, "hits": 0}
    rows = [dict(base, skill=f"other-{i}", started=f"2026-01-{i + 1:02d}", **h) for i, h in enumerate(history)]
    rows.append(dict(base, skill="target", started="2026-12-31", **current))
    return pd.DataFrame(rows)


def fired(frame: pd.DataFrame, name: str) -> bool | None:
    alert = next(a for a in check_alerts(frame) if a.skill == "target" and a.name == name)
    return alert.fired if alert.active else None


def threshold(values: list[float], side: str) -> float:
    k = k_for(len(values))
    mean, sd = sum(values) / len(values), pd.Series(values).std(ddof=1)
    return mean + k * sd if side == "upper" else mean - k * sd


@pytest.mark.parametrize("name, side", [("dry_run_ratio", "upper")])
@pytest.mark.parametrize("points", [6, 40])  # t quantile below 30 points, normal from 30
def test_dynamic_alerts_just_inside_and_just_outside(name: str, side: str, points: int):
    values = [0.2 + 0.03 * (i % 7) for i in range(points)]
    line = threshold(values, side)
    step = 1e-6 if side == "upper" else -1e-6
    history = [{name: v} for v in values]
    assert fired(metrics(history, {name: line - step}), name) is False
    assert fired(metrics(history, {name: line + step}), name) is True


def test_binomial_tail_is_scipys():
    for n, p in ((3, 0.4), (12, 0.05), (1, 0.9)):
        for k in range(n + 1):
            assert binomial_tail(k, n, p, "lower") == pytest.approx(stats.binom.cdf(k, n, p))
            assert binomial_tail(k, n, p, "upper") == pytest.approx(stats.binom.sf(k - 1, n, p))


def test_a_revert_rate_of_few_attempts_is_read_on_its_counts():
    """Two reverts in three attempts, run after run: no revert in the next three is within chance (P = 0.037); none in
    twelve is not (P = 2e-6). A normal line on per-run rates (0, 1/3, 2/3, 1) fired on the first."""
    history = [{"attempts": 3, "keeps": 1, "revert_rate": 2 / 3} for _ in range(10)]
    assert fired(metrics(history, {"attempts": 3, "keeps": 3, "revert_rate": 0.0}), "revert_rate") is False
    assert fired(metrics(history, {"attempts": 12, "keeps": 12, "revert_rate": 0.0}), "revert_rate") is True
    assert fired(metrics(history[:4], {"attempts": 12, "keeps": 12, "revert_rate": 0.0}), "revert_rate") is None


def test_a_rejected_hit_rate_of_few_proposals_is_read_on_its_counts():
    history = [{"proposals": 3, "hits": 1 if i == 0 else 0} for i in range(10)]  # pooled 1/30
    assert fired(metrics(history, {"proposals": 3, "hits": 1}), "rejected_hit_rate") is False
    assert fired(metrics(history, {"proposals": 3, "hits": 3}), "rejected_hit_rate") is True
    alert = next(a for a in check_alerts(metrics(history, {"proposals": 3, "hits": 3})) if a.name == "rejected_hit_rate"
                 and a.skill == "target")
    assert "3/3 against the history's pooled 0.033" in alert.message and alert.escalates


def test_dynamic_alert_is_inactive_under_five_points():
    history = [{"dry_run_ratio": 0.1}] * 4
    assert fired(metrics(history, {"dry_run_ratio": 0.99}), "dry_run_ratio") is None


@pytest.mark.parametrize("name, inside, outside", [
    ("flat_ratio", 0.40, 0.41), ("assessment_gap", 5.0, 5.1), ("mode_completeness", 1.0, 0.9),
])
def test_fixed_alerts(name, inside, outside):
    assert fired(metrics([], {name: inside}), name) is False
    assert fired(metrics([], {name: outside}), name) is True


@pytest.mark.parametrize("inside, outside", [(2.0, 1.9), (8.0, 8.1)])
def test_budget_use_alert_on_both_sides(inside, outside):
    assert fired(metrics([], {"budget_use": inside}), "budget_use") is False
    assert fired(metrics([], {"budget_use": outside}), "budget_use") is True


@pytest.mark.parametrize("slope, fires", [(-0.09, False), (-0.11, True)])
def test_delta_trend_slope(slope, fires):
    history = [{"delta_mean": 5 + slope * i} for i in range(5)]
    assert fired(metrics(history, {"delta_mean": 5 + slope * 5}), "delta_trend") is fires


def results_frame(rows: list[dict]) -> pd.DataFrame:
    full = [{c: r.get(c, "") for c in COLUMNS} for r in rows]
    frame = pd.DataFrame(full)
    for c in ("delta", "edit_pct", "new_score"):
        frame[c] = pd.to_numeric(frame[c], errors="coerce")
    return frame


def test_run_metrics_from_results_rows():
    rows = [
        dict(timestamp="t1", skill="a", round=0, status="baseline", mode="full", eval_mode="fallback_dry"),
        dict(timestamp="t2", skill="a", round=1, status="keep", mode="full", eval_mode="fallback_dry", delta=2.0, edit_pct=4.0,
             note="strategy=x; expected=6.0; rejected_hits=1; proposals=2"),
        dict(timestamp="t3", skill="a", round=2, status="revert", mode="full", eval_mode="full_test", delta=0.0, edit_pct=6.0,
             note="strategy=y; expected=2.0; proposals=1"),
        dict(timestamp="t4", skill="a", round=0, status="baseline", mode="full", eval_mode="full_test"),
    ]
    m = run_metrics(results_frame(rows))
    first = m.iloc[0]
    assert len(m) == 2 and first["skill"] == "a"
    assert first["dry_run_ratio"] == pytest.approx(2 / 3) and first["revert_rate"] == 0.5
    assert first["flat_ratio"] == 0.5 and first["budget_use"] == 5.0
    assert first["rejected_hit_rate"] == pytest.approx(1 / 3) and first["assessment_gap"] == pytest.approx(3.0)
    assert math.isnan(m.iloc[1]["revert_rate"])  # a run with no attempts yet


def test_with_evidence_flat_means_within_noise_and_the_gap_counts_only_what_noise_cannot_explain():
    import json

    inconclusive = json.dumps({"verdict": "inconclusive", "basis": None, "dims": {"dim5": {"delta": 0.9, "se": 0.5}}})
    gained = json.dumps({"verdict": "keep", "basis": "dim5", "dims": {"dim5": {"delta": 1.5, "se": 0.2}}})
    rows = [
        dict(timestamp="t1", skill="a", round=0, status="baseline", mode="full", eval_mode="full_test"),
        # Δ +1.6 looks like movement, but nothing was established beyond noise: flat
        dict(timestamp="t2", skill="a", round=1, status="revert", mode="full", eval_mode="full_test", delta=1.6, edit_pct=3.0,
             note="strategy=x; expected=3.0", dim_changed="dim5", evidence=inconclusive),
        # Δ +0.05 at the same decimal, but a gain was established on dim5: not flat
        dict(timestamp="t3", skill="a", round=2, status="keep", mode="full", eval_mode="full_test", delta=0.05, edit_pct=3.0,
             note="strategy=y; expected=3.0", dim_changed="dim5", evidence=gained),
    ]
    first = run_metrics(results_frame(rows)).iloc[0]
    assert first["flat_ratio"] == 0.5
    # |3.0 − 1.6| − 1.96·0.5·18/10 = 1.4 − 1.764 → 0;  |3.0 − 0.05| − 1.96·0.2·1.8 = 2.95 − 0.7056
    assert first["assessment_gap"] == pytest.approx((0 + 2.95 - 0.7056) / 2)


# --- escalation --------------------------------------------------------------------------------

def run(state: Escalation, pattern: str) -> tuple[Escalation, list[str]]:
    actions = []
    for ch in pattern:
        state, action = observe(state, ch == "x")
        actions.append(action)
    return state, actions


def test_ladder_record_record_pause_then_freeze():
    state, actions = run(Escalation(), "xxxxx")
    assert actions == ["record", "record", "pause", "pause", "freeze"]
    assert state.frozen and state.paused and state.count == 5


def test_counters_reset_after_ten_quiet_rounds():
    state, actions = run(Escalation(), "xx" + "." * 9)
    assert state.count == 2
    state, actions = run(state, ".")
    assert actions == ["reset"] and state.count == 0


def test_pause_recovers_after_five_quiet_rounds_with_a_cooldown():
    state, _ = run(Escalation(), "xxx")
    state, actions = run(state, ".....")
    assert actions[-1] == "recover" and state.count == 1 and not state.paused and state.cooldown_left == 5
    state, _ = run(state, ".....")  # a quiet cool-down: the counter stays at 1
    assert state.count == 1 and state.cooldown_left == 0


def test_false_recovery_restores_the_counter_plus_one():
    state, _ = run(Escalation(), "xxx.....")
    assert state.count == 1 and state.before_downgrade == 3
    state, actions = run(state, "xx.x.")  # 3 of 5 cool-down rounds fired: ≥ 50 %
    assert actions[-1] == "false_recovery" and state.count == 4


def test_freeze_needs_a_person_even_after_the_counter_recovers():
    state, _ = run(Escalation(), "xxxxx")
    state, actions = run(state, "." * 10)
    assert actions[-1] == "recover" and state.count == 2 and state.cooldown_left == 10
    assert state.frozen  # the issue: frozen until a person lifts it (workspace/holds.py resets the counter then)


def test_state_round_trips_through_the_profile():
    state, _ = run(Escalation(), "xxx..")
    assert Escalation.from_dict(state.to_dict()) == state


def test_the_same_text_read_by_other_models_is_a_new_reference_not_a_shift():
    """score_shift reads the judges' drift off an unchanged text; a model upgrade moves the reading too, so the same
    SKILL.md and files read by other models start a new reference (said), and the next re-read is against that."""
    def baseline(day: int, score: float, models: str) -> dict:
        return {"timestamp": f"2026-12-0{day}T09:00:00+00:00", "skill": "alpha", "status": "baseline", "new_score": score,
                "note": f"sha=abc123def456; models={models}; baseline", "eval_mode": "full_test", "mode": "full"}

    frame = pd.DataFrame([baseline(1, 70.0, "j1/t1"), baseline(2, 71.0, "j1/t1"), baseline(3, 60.0, "j2/t1"),
                          baseline(4, 60.5, "j2/t1")], columns=list(COLUMNS)).fillna({"delta": math.nan})
    metrics = run_metrics(frame)
    assert list(metrics["shift"].round(1).fillna(-99)) == [-99, 1.0, -99, 0.5]
    assert metrics["reference"][2] == "the judging models changed (j1/t1 → j2/t1)"
    shift = next(a for a in check_alerts(metrics.iloc[:3]) if a.name == "score_shift")
    assert shift.message == "score_shift: a new reference from this run: the judging models changed (j1/t1 → j2/t1)"
