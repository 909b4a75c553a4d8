"""Mode routing: every band and boundary of the design's table, and the ROI precheck."""

from __future__ import annotations

import pytest

from scoring.governance.mode_router import normalize_domain, normalize_file_scale, normalize_pii, record_override, route
from scoring.governance.roi import roi_precheck

FINANCE = "Reconcile the bank payment ledger."
PERSONAL = "Write a short poem for my diary."
UNMATCHED = "Sort the widgets."


@pytest.mark.parametrize(
    "text, lines, refs, reverts, m, rounded, band, mode, pause",
    [
        # all four signals full: 0.30 + 0.25 + 0.20 + 0.15 = 0.90 exactly -> hard route, no pause
        (FINANCE + " api_key = sk-abcdefghijklmnopqrstu", 900, 0, 3, 0.90, 0.90, "hard_full", "full", False),
        # 0.30 + 0.25 + 0.15 = 0.70 exactly -> soft full, pause to confirm
        (FINANCE + " secret: 0123456789abcdef", 100, 0, 3, 0.70, 0.70, "soft_full", "full", True),
        # 0.30 + 0.25 + 0.105 + 0.04 = 0.695 -> half-up to 0.70 -> soft full
        (FINANCE + " password = hunter2hunter2", 320, 0, 2, 0.695, 0.70, "soft_full", "full", True),
        # 0.30 + 0.25 + 0.105 + 0.0397 = 0.6947 -> 0.69 -> manual choice
        (FINANCE + " token: abcdefghijkl", 319, 0, 2, 0.6947, 0.69, "manual", None, True),
        # 0.30 + 0.01 = 0.31 -> manual
        (FINANCE, 230, 0, 0, 0.31, 0.31, "manual", None, True),
        # exactly 0.30 -> soft default quick
        (FINANCE, 100, 0, 0, 0.30, 0.30, "soft_quick", "quick", False),
        # 0.06 + 0.04 = 0.10 exactly -> soft quick (only <= 0.09 is hard)
        (UNMATCHED, 320, 0, 0, 0.10, 0.10, "soft_quick", "quick", False),
        # personal (0) + e-mail (0.075) + 0.02 = 0.095 -> 0.10 -> soft quick
        (PERSONAL + " mail me at a@b.co", 260, 0, 0, 0.095, 0.10, "soft_quick", "quick", False),
        # personal + e-mail = 0.075 -> 0.08, short file, no revert -> hard quick
        (PERSONAL + " mail me at a@b.co", 100, 0, 0, 0.075, 0.08, "hard_quick", "quick", False),
        # 0.06 alone -> 0.06 but the domain is not personal: the hard band's conditions fail -> soft quick
        (UNMATCHED, 100, 0, 0, 0.06, 0.06, "soft_quick", "quick", False),
        # five referenced files make the file scale full: 0.06 + 0.20 = 0.26
        (UNMATCHED, 50, 5, 0, 0.26, 0.26, "soft_quick", "quick", False),
    ],
)
def test_routing_bands_and_boundaries(text, lines, refs, reverts, m, rounded, band, mode, pause):
    r = route(text, lines, refs, reverts, records=10)
    assert (r.m, r.rounded, r.band, r.mode, r.pause) == (m, rounded, band, mode, pause)
    assert round(sum(r.contributions.values()), 4) == r.m
    assert len(r.reasons) == 5


def test_explicit_mode_short_circuits():
    assert route(FINANCE, 900, 9, 9, 100, explicit="quick").m == 0.0
    full = route(PERSONAL, 1, 0, 0, 0, explicit="full")
    assert (full.m, full.band, full.mode, full.contributions) == (1.0, "explicit", "full", {})


def test_cold_start_goes_to_manual_choice():
    r = route(FINANCE, 900, 0, 3, records=4)
    assert r.band == "cold_start" and r.mode is None and r.pause


@pytest.mark.parametrize("text, value", [
    ("客户的银行卡号与支付流水", 1.0), ("修复生产环境部署脚本", 0.8), ("Design the API schema", 0.4),
    ("写一篇公众号文章", 0.0), ("整理一下", 0.2), ("Deploy to production the bank app", 1.0),
])
def test_domain_detection_is_bilingual(text, value):
    assert normalize_domain(text)[0] == value


@pytest.mark.parametrize("text, value", [
    ("身份证 11010519491231002X", 1.0), ("card 4111 1111 1111 1111", 1.0), ("card 4111 1111 1111 1112", 0.0),
    ("key sk-proj-abcdefghijklmnop123", 1.0), ("AKIAABCDEFGHIJKLMNOP", 1.0), ("host db.internal", 0.7),
    ("connect to 10.2.3.4", 0.7), ("内网地址", 0.7), ("mail ops@example.com", 0.3), ("电话 13812345678", 0.3), ("nothing", 0.0),
])
def test_pii_detection(text, value):
    assert normalize_pii(text)[0] == value


@pytest.mark.parametrize("lines, refs, value", [(800, 0, 1.0), (801, 0, 1.0), (200, 0, 0.0), (500, 0, 0.5), (10, 5, 1.0), (10, 4, 0.0)])
def test_file_scale(lines, refs, value):
    assert normalize_file_scale(lines, refs) == value


def test_two_overrides_in_a_row_halve_the_domain_weight():
    history, factor = record_override([], "full", "quick", 1.0)
    assert factor == 1.0 and history == ["full->quick"]
    history, factor = record_override(history, "full", "quick", factor)
    assert factor == 0.5 and history == []
    decayed = route(FINANCE, 100, 0, 0, 10, domain_factor=factor)
    assert decayed.contributions["domain"] == 0.15 and "× 0.5 correction" in decayed.reasons[0]
    assert record_override(["full->quick"], "full", "full", 1.0) == ([], 1.0)  # agreeing resets


@pytest.mark.parametrize(
    "total, lowest, deltas, decision, room",
    [
        (85.0, 7.0, [], "skip", "low"),
        (86.0, 6.9, [], "optimize", "medium"),
        (84.9, 9.0, [2.0], "optimize", "medium"),
        (60.0, 2.0, [], "optimize", "high"),
        (75.0, 5.0, [0.0, 0.0, 0.0], "recommend_skip", "low"),
        (75.0, 5.0, [0.5, 0.2, 0.9], "optimize", "medium"),  # every kept edit cleared the noise: small gains are gains
        (75.0, 5.0, [3.0, 0.0, 0.0], "optimize", "medium"),
    ],
)
def test_roi_precheck(total, lowest, deltas, decision, room):
    check = roi_precheck(total, lowest, deltas, 14 if deltas else None)
    assert (check.decision, check.room) == (decision, room)


def test_roi_estimate_line():
    assert roi_precheck(72.0, 5.0, [3.0, 0.5, 1.2], 14).estimate == "optimized 3 time(s), last +1.2, 14 days ago: room medium"
    assert roi_precheck(50.0, 1.0, [], None).estimate == "never optimized: room high"


def test_a_stuck_skill_rests_then_is_tried_again():
    """Skipping it records a run that attempts nothing: that must not keep it stuck for ever."""
    stuck = [0.0, 0.0, 0.0]
    assert [roi_precheck(75.0, 5.0, stuck, 7, rested).decision for rested in range(5)] == [
        "recommend_skip", "recommend_skip", "recommend_skip", "optimize", "optimize"]


def test_earlier_runs_count_attempted_runs_and_the_rest_since():
    from datetime import UTC, datetime
    from types import SimpleNamespace as Row

    from scoring.governance.roi import earlier_runs

    def run(day: int, *attempts: tuple[str, float]) -> list:
        stamp = f"2026-11-{day:02d}T10:00:00+00:00"
        return [Row(status="baseline", delta=None, timestamp=stamp)] + [Row(status=s, delta=d, timestamp=stamp) for s, d in attempts]

    rows = run(1, ("keep", 0.4), ("revert", -1.0)) + run(2, ("revert", 0.3)) + run(3) + run(4, ("keep", 2.0)) + run(5) + run(6)
    deltas, days, rested = earlier_runs(rows, datetime(2026, 11, 13, 10, tzinfo=UTC))
    assert deltas == [0.4, 0.0, 2.0] and days == 7 and rested == 2
    assert earlier_runs([], datetime(2026, 11, 13, tzinfo=UTC)) == ([], None, 0)
