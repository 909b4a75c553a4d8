"""A decision's row in results.tsv: drafted from what was measured (``RowDraft``), written pending → effect → complete."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from flows.ratchet.measure import Version
from flows.ratchet.trial import Trial
from flows.state.products import SkillState
from flows.state.rows import Drafted, RowDraft, row_of
from flows.state.run import Run
from workspace.pending_keep import PendingKeep, clear, text_sha
from workspace.results_tsv import ResultRow, Status
from workspace.skill_source import SKILL_FILE


def trial_draft(trial: Trial, round_no: int, status: Status, **fields: Any) -> RowDraft:
    """A trial's row: its decision's evidence — both texts' samples, the decision, the calls it cost, the stop it
    means, the lines it changed — and ``fields`` over them."""
    return replace(RowDraft(round_no, status, trial.evaluation, trial.candidate, trial.incumbent, trial.decision,
                            trial.calls, trial.stop, diff=trial.diff), **fields)


def record_row(run: Run, skill: str, draft: RowDraft) -> ResultRow:
    """Write the row ``draft`` says through the run's effects (one atomic write)."""
    return _write(run, skill, row_of(run, skill, draft))


def keep_and_record(run: Run, skill: str, draft: RowDraft, trial: Trial, edit: dict[str, Any] | None, kept: Version,
                    file: str = SKILL_FILE, also: Callable[[], None] = lambda: None) -> ResultRow:
    """Keep the edit of ``file`` and write its row, as one step a kill cannot split (``recorded_step``): the commit,
    then what the run holds of the kept version — its score card, and from now on only the samples its keep did not
    choose (``Ledger.kept``) — and ``also``."""
    proof = (run.workspace.skill_file(skill).parent / file).read_bytes()
    card = trial.evaluation
    assert card is not None  # a kept trial was evaluated in full

    def keep() -> None:
        run.editor.keep(skill, trial.gain, draft.dim, edit, file)
        run.take(SkillState(skill, best=card))
        kept.kept(run, skill)
        also()

    return recorded_step(run, skill, draft, keep, kept_sha256=text_sha(proof), file=file)


def recorded_step(run: Run, skill: str, draft: RowDraft, effect: Callable[[], object], kept_sha256: str = "",
                  rejected_sha256: str = "", file: str = SKILL_FILE) -> ResultRow:
    """A decision's effect and its row as one step a kill cannot split: the row is saved as pending with what proves
    the effect happened (the text kept, or the edit rejected), then the effect, then the row with the commit the
    effect made; a resume completes or drops the pending row from that proof (``workspace.pending_keep``)."""
    tsv = run.workspace.results_tsv(skill)
    drafted = row_of(run, skill, draft)
    PendingKeep(drafted.row, kept_sha256, rejected_sha256, file).save(tsv)
    effect()
    row = _write(run, skill, replace(drafted, row=replace(drafted.row, commit=run.commit())))
    clear(tsv)
    return row


def _write(run: Run, skill: str, drafted: Drafted) -> ResultRow:
    """Append the row, then count the fallbacks it shows as shown (a row built and not written shows none)."""
    run.repaired(skill, run.effects.write_row(run.workspace.results_tsv(skill), drafted.row))
    run.ledger.shown(skill, drafted.skill_fallbacks, drafted.run_wide_fallbacks)
    return drafted.row
