"""A skill's progress rebuilt from its records: what a fresh start, a resume and a fan-out child read."""

from __future__ import annotations

from flows.state.run import Run
from workspace.results_tsv import Status, Stop


def recorded_progress(run: Run, skill: str) -> tuple[float, int, Stop | None] | None:
    """(baseline total, last recorded round, why it stopped or None) for the skill's last run.

    The stop is the row's ``stop`` column; rows written before it existed kept it in the note as ``stop=…``."""
    from scoring.notes import parse_note

    rows = run.results(skill).rows()
    starts = [i for i, r in enumerate(rows) if r.status == Status.BASELINE]
    if not starts or rows[starts[-1]].new_score is None:
        return None
    this = rows[starts[-1]:]
    stops = [r.stop or parse_note(r.note)[0].get("stop", "") for r in this]
    stop = next((Stop(s) for s in reversed(stops) if s in {x.value for x in Stop} and s != Stop.BUDGET), None)
    baseline = rows[starts[-1]].new_score
    assert baseline is not None  # checked above
    return baseline, max(r.round for r in this), stop
