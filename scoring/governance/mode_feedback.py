"""Mode feedback between runs: what this run's gains say about the mode to run next (a notice in the report)."""

from __future__ import annotations


def mode_feedback(mode: str, skill_round_deltas: list[list[float]]) -> str | None:
    """Quick with Δ > 5 within 3 rounds → try full ("there is gold"); full with 3 skills in a row at Δ < 3 → quick.
    ``skill_round_deltas``: each skill's kept Δs of this run, in round order, skills in the order they ran."""
    if mode == "quick" and any(sum(deltas[:3]) > 5 for deltas in skill_round_deltas):
        return "quick mode found Δ > 5 within 3 rounds: there is gold here, run in full mode next"
    if mode == "full" and len(skill_round_deltas) >= 3 and all(sum(d) < 3 for d in skill_round_deltas[-3:]):
        return "full mode: 3 consecutive skills stable at Δ < 3, quick mode is enough next time"
    return None
