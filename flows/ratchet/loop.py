"""Phase 2: the ratchet for one skill — propose, measure, decide, apply; one edit per round.

An edit is kept only when the keep decision (``scoring/keep_decision.py``)
says it is better beyond the judges' noise. Otherwise the file goes back
(git checkout of that one path, or the .bak), the edit goes into
rejected_edits.md, and: a confident non-improvement ends the skill (its
bottleneck), an inconclusive one does not — the next round tries another
edit. Two kept rounds in a row under +2 are the ceiling signal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, replace
from typing import NamedTuple

from flows.ratchet import measure, records
from flows.ratchet.trial import Outcome, Trial, try_edit
from flows.state.config import Quality, RunStop, StopKind
from flows.state.measurements import Pending
from flows.state.products import SkillOutcome, SkillState
from flows.state.rows import RowDraft
from flows.state.run import Run
from judges.backend import Evaluation, ProposalRequest
from judges.proposer import Proposal, RefusalKind
from judges.usage import BudgetExhausted
from scoring.boilerplate import boilerplate, inserted_units
from scoring.diagnosis import diagnose
from scoring.document import parse
from scoring.edit_guards import adds_words
from scoring.edits import SKILL_FILE, Edit
from scoring.notes import fact_float
from scoring.skill_view import SourceFile
from scoring.validation import scan_references
from workspace import profile as profile_store
from workspace.governance_records import now_iso
from workspace.manifest import save_round_backup
from workspace.rejected_edits import RejectReason, edit_sha256
from workspace.rejected_edits import save as save_rejected
from workspace.results_tsv import Status, Stop, now_stamp

CEILING_DELTA = 2.0


def optimize_skill(run: Run, skill: str, max_rounds: int | None = None, start_round: int = 1,
                   on_round: Callable[[str, int, str], None] = lambda skill, round_no, status: None,
                   ahead: ProposalAhead | None = None) -> SkillOutcome:
    """Propose → measure → decide → apply, until a stop; the skill's outcome, from its kept version's samples."""
    kept = measure.Version.on_disk(run, skill)
    outcome = SkillOutcome(skill, measure.total(run, skill, kept), measure.total(run, skill, kept), 0, Stop.MAX_ROUNDS)
    last_round = start_round + (max_rounds or run.max_rounds) - 1
    small_gains = _small_gains_so_far(run, skill) if start_round > 1 else 0
    for round_no in range(start_round, last_round + 1):
        proposal, stop, spent = next_proposal(run, skill, kept.text, ahead)  # propose
        if stop is not None or proposal is None:
            record_stop(run, skill, round_no, stop or Stop.NO_EDIT, proposal, spent)
            return replace(outcome, stop=stop or Stop.NO_EDIT, ends_run=RunStop(StopKind.BUDGET, spent) if spent else None)
        candidate = put_in_place(run, skill, round_no, proposal)
        trial = try_candidate(run, skill, round_no, kept, candidate, proposal)  # measure, decide
        small_gains = small_gains + 1 if trial.kept and trial.gain < CEILING_DELTA else 0  # kept rounds in a row
        more = trial.kept and small_gains < 2 and round_no < last_round
        ahead = propose_ahead(run, skill, candidate.text, trial.evaluation) if more and trial.evaluation else None
        apply(run, skill, round_no, kept, proposal, trial)  # keep or roll back, and record: one step
        kept = candidate if trial.kept else kept
        outcome = outcome.after_round(trial.kept, trial.outcome is Outcome.REJECT, measure.total(run, skill, kept),
                                      round_no - start_round + 1)
        on_round(skill, round_no, trial.decision.verdict.value if trial.decision else trial.outcome.value)
        stop = trial.stop or (Stop.CEILING if small_gains >= 2 else None)
        if stop is not None:
            spent = trial.why or "LLM budget reached"
            return replace(outcome, stop=stop, ends_run=RunStop(StopKind.BUDGET, spent) if stop is Stop.BUDGET else None)
    return outcome


def _small_gains_so_far(run: Run, skill: str) -> int:
    """Kept rounds under +2 in a row at the end of the records: a skill continued (--resume, one more round)
    reaches the ceiling where the unbroken run would have."""
    count = 0
    for row in reversed(run.results(skill).rows()):
        if row.status != Status.KEEP or row.delta is None or row.delta >= CEILING_DELTA:
            break
        count += 1
    return count


def put_in_place(run: Run, skill: str, round_no: int, proposal: Proposal) -> measure.Version:
    """The candidate on disk, the kept file backed up first: the version the judges will read."""
    edit = proposal.edit
    assert edit is not None and proposal.edited_text is not None
    run.editor.pre_edit(skill, edit.file)
    save_round_backup(run.run_dir, skill, round_no, proposal.edited_text.encode("utf-8"), kind="candidate",
                      file=edit.file)
    run.editor.write_skill(skill, proposal.edited_text, edit.file)
    return measure.Version.on_disk(run, skill)


def try_candidate(run: Run, skill: str, round_no: int, kept: measure.Version, candidate: measure.Version,
                  proposal: Proposal) -> Trial:
    """The candidate tried against the kept version (``try_edit``), told what the edit aims at and whether it adds words."""
    edit = proposal.edit
    assert edit is not None
    return try_edit(run, skill, round_no, kept, candidate, edit.target_dim, ever_reverted(run, skill),
                    adds_words(kept.file_text(edit.file), edit), edit.file)


def apply(run: Run, skill: str, round_no: int, before: measure.Version, proposal: Proposal, trial: Trial) -> None:
    """The round's one effect path, one recorded step either way (its row pending, the effect, its row complete).
    Kept: commit, then the kept version's card, samples and inserted lines. Not kept: remember the edit, then roll
    back — in that order, so a crash before the rollback can never let the same edit be tried again."""
    edit = proposal.edit
    assert edit is not None
    draft = records.trial_draft(trial, round_no, _status(trial), dim=edit.target_dim, facts=_facts(run, proposal, trial),
                                calls=trial.calls + (0 if run.backend.exact else proposal.attempts),  # an editor call an attempt
                                text=edit.describe() if trial.kept else f"{trial.why}; {edit.describe()}",
                                edit_pct=proposal.edit_pct)
    if trial.kept:
        def insert() -> None:
            run.inserted.add(inserted_units(before.file_text(edit.file), edit, skill), skill)

        records.keep_and_record(run, skill, draft, trial, asdict(edit), measure.Version.on_disk(run, skill), edit.file,
                                also=insert)
        return

    def reject_and_roll_back() -> None:
        if trial.outcome is Outcome.REJECT:  # first: a kill after it can never let the edit be tried again
            reject(run, skill, edit, trial.reason or RejectReason.SCORE_REGRESSION)
        run.editor.rollback(skill, edit.file)
        if trial.outcome is Outcome.REJECT:
            run.effects.emit("luban.rollback", skill, {"skill_path": str(run.workspace.skill_file(skill)),
                                                       "from_version": "edited", "to_version": run.commit() or "kept",
                                                       "reason": trial.reason})
        if trial.freeze:
            freeze(run, skill, "Safety red line hit by a judge", runs=None)

    records.recorded_step(run, skill, draft, reject_and_roll_back, rejected_sha256=str(draft.facts.get("sha256", "")))


def _status(trial: Trial) -> Status:
    return Status.KEEP if trial.kept else Status.REVERT if trial.outcome is Outcome.REJECT else Status.SKIP


def _facts(run: Run, proposal: Proposal, trial: Trial) -> dict[str, object]:
    """The note's facts of an attempt: the strategy, what the editor expected, how many proposals it took, repeats
    refused, the file when it is not SKILL.md, and — for a rejected edit — its digest and why."""
    edit = proposal.edit
    assert edit is not None
    facts: dict[str, object] = {"strategy": edit.strategy, "expected": edit.expected_gain, "proposals": proposal.attempts,
                                "rejected_hits": proposal.count(RefusalKind.REPEAT)}
    if edit.file != SKILL_FILE:
        facts["file"] = edit.file
    if trial.outcome is Outcome.REJECT:
        facts["sha256"], facts["reason"] = edit_sha256(edit.old, edit.new, edit.file), trial.reason
    return facts


def record_stop(run: Run, skill: str, round_no: int, stop: Stop, proposal: Proposal | None, spent: str = "") -> None:
    """The round that found no edit to try, and why: each dimension's refusals (guards, budget, repeats) when any;
    ``spent`` says which budget ran out."""
    if stop is Stop.BUDGET:
        why = str(RunStop(StopKind.BUDGET, spent or "LLM budget reached"))
    elif proposal is not None and proposal.refusals:
        why = proposal.reason if stop is Stop.PROPOSER_UNAVAILABLE else f"no edit passed its checks: {proposal.reason}"
    else:
        why = "no applicable edit for any dimension"
    records.record_row(run, skill, RowDraft(round_no, Status.SKIP, stop=stop, text=why[:2000]))


def next_proposal(run: Run, skill: str, text: str,
                  ahead: ProposalAhead | None) -> tuple[Proposal | None, Stop | None, str]:
    """The round's checked edit (the one asked ahead when it was asked for this very text), or why there is none;
    and, when asking for it found the LLM budget spent, which budget (the run stops after this skill)."""
    try:
        proposal = ahead.proposal.result() if ahead and ahead.text == text else propose_for(run, skill, text, run.best(skill))
    except BudgetExhausted as err:
        return None, Stop.BUDGET, str(err)
    for refusal in (proposal.refusals if proposal else ()):
        if refusal.kind is RefusalKind.BOILERPLATE:
            run.effects.notice(f"{skill}: refused a proposed edit as {refusal}")
    if proposal is None or proposal.edit is None:
        return proposal, Stop.PROPOSER_UNAVAILABLE if proposal is not None and proposal.unavailable else Stop.NO_EDIT, ""
    return proposal, None, ""


def ever_reverted(run: Run, skill: str) -> bool:
    """Whether any edit of this skill was ever reverted (the heterogeneous re-check's third trigger)."""
    return any(r.status == Status.REVERT for r in run.results(skill).rows())


def proposal_requests(run: Run, skill: str, text: str, card: Evaluation) -> list[ProposalRequest]:
    """One request per dimension the proposer may try, in diagnosis order."""
    guarded = frozenset(run.profile.guarded_dims(skill, str(run.mode)))
    exclude: frozenset[str] = frozenset()
    if run.quality is Quality.LITE:  # lite: format fixes only
        exclude = frozenset(d.dim for d in card.score.dims) - {"dim7"}
    buffer, files = run.buffer(skill), measure.skill_files(run, skill)
    rejections = tuple(f"{e.target_dim}: {e.new[:80]}" for e in buffer.entries if e.blocking)[-10:]
    def elsewhere(units: tuple[str, ...]) -> str:
        return boilerplate(units, run.inserted.snapshot(), skill)

    references = editable_references(run, skill, text) if run.quality is not Quality.LITE else ()
    return [ProposalRequest(text, skill, files, dim, rationales=tuple(card.score.dim(dim).reasons[:3]),
                            active_rejections=rejections, is_rejected=buffer.is_rejected, budget=run.budget_for(skill),
                            allow_rename=run.options.allow_rename, inserted_elsewhere=elsewhere, meta_hints=run.meta_hints,
                            references=references)
            for dim in diagnose(card.score, guarded, run.preferred_dims, exclude)]


REFERENCE_CHARS = 24_000  # the referenced files shown to the editor, in all: about 6 000 tokens beside SKILL.md


def editable_references(run: Run, skill: str, text: str) -> tuple[tuple[str, str], ...]:
    """The Markdown files SKILL.md references that an edit may change instead, in the order it references them, as
    many as REFERENCE_CHARS hold: full mode only (git rolls back any file; quick mode's snapshots hold SKILL.md), never
    under evals/ (the author's cases are not the skill's to change)."""
    if run.editor.git is None:
        return ()
    return references_to_offer(text, measure.skill_files(run, skill), measure.skill_sources(run, skill))


def references_to_offer(text: str, files: frozenset[str], sources: tuple[SourceFile, ...]) -> tuple[tuple[str, str], ...]:
    """``editable_references`` from what is read of the skill: (path, text) of each Markdown file SKILL.md references."""
    texts = {s.path: s.text for s in sources if s.text is not None}
    chosen: dict[str, str] = {}
    for ref in scan_references(parse(text), files):
        body = texts.get(ref.target)
        if ref.status != "exists" or body is None or not ref.target.endswith(".md") or ref.target.startswith("evals/"):
            continue
        if ref.target not in chosen and sum(map(len, chosen.values())) + len(body) <= REFERENCE_CHARS:
            chosen[ref.target] = body
    return tuple(chosen.items())


def propose_for(run: Run, skill: str, text: str, card: Evaluation) -> Proposal | None:
    """The first dimension, in diagnosis order, for which the proposer has a checked edit (None: no dimension has one)."""
    return run.measurements.propose(run.backend, proposal_requests(run, skill, text, card)).result()


class ProposalAhead(NamedTuple):
    """A proposal asked for before its round, and the text it was asked for (it is used only on that text)."""

    text: str
    proposal: Pending[Proposal | None]


def propose_ahead(run: Run, skill: str, text: str, card: Evaluation) -> ProposalAhead:
    """Ask for the next round's edit now, in the background: committing and recording a kept edit needs no model,
    and the proposal depends only on the kept text, its score card and the rejected edits, which keeping leaves alone."""
    return ProposalAhead(text, run.measurements.propose(run.backend, proposal_requests(run, skill, text, card)))


def reject(run: Run, skill: str, edit: Edit, reason: RejectReason, status: str = "active") -> str:
    buffer, entry, pruned = run.buffer(skill).add(now_stamp(), edit.target_dim, edit.old, edit.new, reason.value, status,
                                                   note=edit.describe(), file=edit.file)
    buffer = replace(buffer, hit_to_submit_ratio=hit_to_submit(run.results(skill).rows()))
    run.take(SkillState(skill, buffer=buffer))
    save_rejected(run.workspace.rejected_edits(skill), buffer)
    if pruned and run.manifest:
        run.manifest.pruned(rejected=pruned)
    return entry.sha256


def hit_to_submit(rows) -> float:
    """Proposals refused for repeating a rejected edit, over proposals made, across the skill's recorded attempts."""
    notes = [r.note for r in rows if r.status in (Status.KEEP, Status.REVERT)]
    proposals = sum(fact_float(n, "proposals") or 1 for n in notes)
    return round(sum(fact_float(n, "rejected_hits") or 0 for n in notes) / proposals, 2) if proposals else 0.0


def freeze(run: Run, skill: str, reason: str, runs: int | None) -> None:
    """Hold the skill out of the next runs: ``runs`` of them (Phase 0 counts them down), or until a person lifts it."""
    def change(p: profile_store.LubanProfile) -> None:
        p.frozen[skill] = profile_store.FrozenSkill(reason=reason, since=now_iso(), runs_left=runs)

    run.effects.update_profile(run.workspace.profile, change)
    run.effects.emit("luban.freeze", skill, {"skill_path": str(run.workspace.skill_file(skill)), "freeze_scope": "current",
                                 "reason": reason, "duration_rounds": runs})  # the design's event schema: its "rounds" are runs
