"""A decision's row in results.tsv: built from what was measured, written pending → effect → complete."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flows.ratchet.trial import Trial
from flows.state.run import Run
from judges.backend import Evaluation
from workspace.results_tsv import ResultRow, Status
from workspace.skill_source import SKILL_FILE


def record_row(run: Run, skill: str, round_no: int, status: Status, source: Trial | Evaluation | None = None, **fields) -> ResultRow:
    """Build the row and write it through the run's effects. A ``Trial`` brings its decision's evidence: both texts'
    samples, the decision, the calls it cost and the stop it means."""
    row = build_row(run, skill, round_no, status, source, **fields)
    run.repaired(skill, run.effects.write_row(run.workspace.results_tsv(skill), row))
    return row


def build_row(run: Run, skill: str, round_no: int, status: Status, source: Trial | Evaluation | None = None, **fields) -> ResultRow:
    if isinstance(source, Trial):
        fields = {"measured": source.candidate, "before": source.incumbent, "decision": source.decision,
                  "calls": source.calls, "stop": source.stop, "diff": source.diff} | fields
        source = source.evaluation
    return run.result_row(skill, round_no, status, source, **fields)


def keep_and_record(run: Run, skill: str, round_no: int, trial: Trial, edit: dict[str, Any] | None,
                    file: str = SKILL_FILE, **fields) -> ResultRow:
    """Keep the edit of ``file`` in place and write its row, as one step a kill cannot split (``recorded_step``)."""
    from workspace.pending_keep import text_sha

    row = build_row(run, skill, round_no, Status.KEEP, trial, **fields)
    kept = (run.workspace.skill_file(skill).parent / file).read_bytes()
    return recorded_step(run, skill, row, lambda: run.editor.keep(skill, trial.gain, fields.get("dim", ""), edit, file),
                         kept_sha256=text_sha(kept), file=file)


def recorded_step(run: Run, skill: str, row: ResultRow, effect: Callable[[], object], kept_sha256: str = "",
                  rejected_sha256: str = "", file: str = SKILL_FILE) -> ResultRow:
    """A decision's effect and its row as one step a kill cannot split: the row is saved as pending with what proves
    the effect happened (the text kept, or the edit rejected), then the effect, then the row with the commit the
    effect made; a resume completes or drops the pending row from that proof (``workspace.pending_keep``)."""
    from dataclasses import replace

    from workspace.pending_keep import PendingKeep, clear

    tsv = run.workspace.results_tsv(skill)
    PendingKeep(row, kept_sha256, rejected_sha256, file).save(tsv)
    effect()
    row = replace(row, commit=run.commit())
    run.repaired(skill, run.effects.write_row(tsv, row))
    clear(tsv)
    return row
