"""rejected_edits.md's hit-to-submit ratio comes from the records (it was written as 0.00 for ever)."""

from __future__ import annotations

from flows.ratchet.loop import hit_to_submit
from workspace.results_tsv import ResultRow


def row(status: str, note: str) -> ResultRow:
    return ResultRow("2026-12-01T10:00:00+00:00", "alpha", 1, status, "full", note=note)


def test_refused_repeats_over_proposals_across_the_recorded_attempts():
    rows = [row("baseline", "baseline"), row("revert", "rejected_hits=2; proposals=3"), row("keep", "proposals=1"),
            row("revert", "strategy=s")]  # an attempt with no counts: one proposal, no repeat
    assert hit_to_submit(rows) == round(2 / 5, 2)
    assert hit_to_submit([row("baseline", "")]) == 0.0
