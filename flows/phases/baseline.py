"""Phase 1: every skill's baseline (or, on --resume, its recorded one), the ROI precheck, and the score card."""

from __future__ import annotations

from dataclasses import dataclass, replace

from flows.ratchet import measure, records
from flows.ratchet.rebuild import rebuild_skill, recorded_progress
from flows.scale.threads import side_by_side
from flows.state.config import GO_ON, PhaseEnd, RunStop, StopKind
from flows.state.products import Baselines, Progress, SkillState
from flows.state.rows import RowDraft
from flows.state.run import Run
from scoring.governance.library_alerts import LIBRARY
from scoring.governance.roi import earlier_runs, roi_precheck
from workspace.manifest import save_round_backup
from workspace.results_tsv import ResultsFile, Status, Stop


def baseline(run: Run) -> Baselines:
    """Phase 1: score every skill (or, on --resume, take its recorded baseline), ROI precheck, score card, 🔴.

    Each skill is measured in a run of its own (``Run.for_skill``; with --parallel, several at once): what it
    produced is returned, and the flow puts it into the run."""

    def one(skill: str) -> Measured:
        mine = run.for_skill()
        progress = recorded_progress(mine, skill) if run.options.resume else None
        if progress is not None:
            return _resume_skill(mine, skill, progress)
        if run.options.resume:
            run.effects.notice(f"{skill}: nothing recorded to resume; it gets a fresh baseline")
        return _baseline_skill(mine, skill)

    measured = side_by_side(run, list(run.skills), one)  # with --parallel, several skills at once
    states = tuple(m.state for m in measured)  # the card's order: the skills', however they finished
    return Baselines(states, tuple(m.state.skill for m in measured if m.going_on), _score_card_checkpoint(run, states))


@dataclass(frozen=True)
class Measured:
    """One skill's baseline: its state, and whether it goes on to the rounds."""

    state: SkillState
    going_on: bool = True


def _resume_skill(run: Run, skill: str, progress: Progress) -> Measured:
    """--resume: keep the recorded baseline; measure the current (kept) version afresh as the incumbent."""
    run.take(state := rebuild_skill(run, skill, progress))
    run.effects.notice(f"{skill}: resumed after round {progress[1]} (baseline {progress[0]}, now {run.incumbent_total(skill)})")
    return Measured(state)


def _baseline_skill(run: Run, skill: str) -> Measured:
    text = run.workspace.skill_file(skill).read_text(encoding="utf-8")
    calls = measure.CallCounter(run)
    card = measure.baseline(run, skill, text)
    held = measure.held_out(run, skill, text) if run.mode == "full" else ()
    run.take(state := SkillState(skill, baseline=card, best=card))
    key, models = run.reference(skill, text)  # a re-measure of the same text by the same models shows drift
    records.record_row(run, skill, RowDraft(0, Status.BASELINE, card, measured=run.incumbent(skill), calls=calls.spent(),
                                            text="baseline", held_out=sum(held) / len(held) if held else None,
                                            facts={"sha": key, "models": models}))
    save_round_backup(run.run_dir, skill, 0, text.encode("utf-8"))
    if skill in run.measure_only:  # paused: this baseline is the new evidence its alerts read next time
        records.record_row(run, skill, RowDraft(0, Status.SKIP, card, measured=run.incumbent(skill), stop=Stop.PAUSED,
                                                text="paused by an alert: measured, not edited"))
        return Measured(state, going_on=False)
    lowest = min(d.score for d in card.score.dims if d.score is not None)
    total = run.incumbent_total(skill)
    deltas, days, rested = earlier_runs(ResultsFile(run.workspace.results_tsv(skill)).rows()[:-1], run.started)
    watched = run.profile.counter("edit_outcomes", LIBRARY, str(run.workspace.mode)).count > 0
    roi = roi_precheck(total, lowest, deltas, days, rested, watched)
    run.effects.notice(f"{skill}: {roi.estimate}")
    if roi.decision == "recommend_skip":
        answer = run.ask(f"roi-{skill}", f"{skill}: {roi.reason}; {roi.estimate}. Optimize it anyway?", default_approve=False)
        if not answer.approved:
            roi = replace(roi, decision="skip", reason=f"{roi.reason} (skipped: {answer.answered_by})")
    if roi.decision == "skip":
        records.record_row(run, skill, RowDraft(0, Status.SKIP, card, measured=run.incumbent(skill), stop=Stop.ROI,
                                                text=roi.reason))
        return Measured(state, going_on=False)
    if card.review_blocking:  # an open P0 (or three P1) blocks the next phase for this skill
        records.record_row(run, skill, RowDraft(0, Status.SKIP, card, measured=run.incumbent(skill), stop=Stop.REVIEW_BLOCKED,
                                                text="the review gate has open findings that block optimization; fix them first"))
        return Measured(state, going_on=False)
    return Measured(state)


def _score_card_checkpoint(run: Run, states: tuple[SkillState, ...]) -> PhaseEnd:
    """The score card as an artifact, then 🔴 'baseline' (asked again on --resume: the answer may have been no)."""
    from prefect.artifacts import create_markdown_artifact

    measured = run.for_skill()  # the run as these baselines leave it: each total is its samples' mean
    for state in states:
        measured.take(state)
    rows = [f"| {s.skill} | {measured.incumbent_total(s.skill)} | {s.baseline.score.deterministic_subtotal} | "
            f"{s.baseline.eval_mode} |" for s in states if s.baseline is not None]
    card_md = "| skill | total | deterministic | eval_mode |\n|---|---:|---:|---|\n" + "\n".join(rows)
    create_markdown_artifact(card_md, key="baseline-score-card", description="Phase 1 baseline")
    answer = run.ask("baseline", card_md)
    if answer.approved:
        return GO_ON
    if answer.timed_out:
        return PhaseEnd(RunStop(StopKind.NO_ANSWER, "stopped at the baseline checkpoint (no answer: resumable)"))
    return PhaseEnd(RunStop(StopKind.DECLINED, f"stopped at the baseline checkpoint: {answer.comment}"))
