"""Phase 2: the ratchet for one skill — diagnose, propose, commit, score, record, keep or roll back.

Every round changes one dimension with one edit. The edit is kept only when
the new total, at one decimal, is strictly higher; otherwise the file goes back
through the workspace (git checkout of that one path, or the .bak), the edit
goes into rejected_edits.md, and the skill stops: it has hit its bottleneck.
Two kept rounds in a row under +2 are the ceiling signal.
"""

from __future__ import annotations

from typing import NamedTuple

from prefect.futures import PrefectFuture

from judges.backend import Evaluation, ProposalRequest
from judges.llm import BudgetExhausted
from scoring.diagnosis import diagnose
from scoring.edits import Edit
from scoring.formula import is_improvement, round1
from workspace.manifest import save_round_backup
from workspace.rejected_edits import save as save_rejected
from workspace.skill_source import list_files
from workspace.results_tsv import now_stamp
from flows import tasks
from flows.context import Run, SkillOutcome
from flows.events import emit

CEILING_DELTA = 2.0


def backend_id(run: Run) -> str:
    settings = getattr(run.backend, "settings", None)
    if settings is None:
        return "offline"
    return f"openai:{settings.base_url}:{settings.judge_model}:{settings.target_model}:{settings.editor_model}"


def skill_files(run: Run, skill: str) -> frozenset[str]:
    return list_files(run.workspace.skill_file(skill).parent)


def ever_reverted(run: Run, skill: str) -> bool:
    """Whether any edit of this skill was ever reverted (the heterogeneous re-check's third trigger)."""
    return any(r.status == "revert" for r in run.results(skill).rows())


def score_text(run: Run, skill: str, text: str, ever_reverted: bool = False) -> Evaluation:
    mode = "quick" if run.mode_quality == "quick" else run.mode  # a weak target model: quick evaluation only
    return tasks.evaluate(run.backend, backend_id(run), text, skill, tuple(sorted(skill_files(run, skill))), mode,
                          run.prompts.get(skill, []), ever_reverted)


def proposal_requests(run: Run, skill: str, text: str, card: Evaluation) -> list[ProposalRequest]:
    """One request per dimension the proposer may try, in diagnosis order."""
    guarded = frozenset(run.profile.guarded_dims())
    exclude: frozenset[str] = frozenset()
    if run.mode_quality == "lite":  # lite: format fixes only
        exclude = frozenset(d.dim for d in card.score.dims) - {"dim7"}
    buffer, files = run.buffers[skill], skill_files(run, skill)
    rejections = tuple(f"{e.target_dim}: {e.new[:80]}" for e in buffer.entries if e.blocking)[-10:]
    return [ProposalRequest(text, skill, files, dim, rationales=tuple(card.score.dim(dim).reasons[:3]),
                            active_rejections=rejections, is_rejected=buffer.is_rejected, budget=run.budget_for(skill))
            for dim in diagnose(card.score, guarded, run.preferred_dims, exclude)]


def propose_for(run: Run, skill: str, text: str, card: Evaluation):
    """The first dimension, in diagnosis order, for which the proposer has a checked edit (None: no dimension has one)."""
    return tasks.propose(run.backend, proposal_requests(run, skill, text, card))


class ProposalAhead(NamedTuple):
    """A proposal asked for before its round, and the text it was asked for (it is used only on that text)."""

    text: str
    proposal: PrefectFuture


def propose_ahead(run: Run, skill: str, text: str, card: Evaluation) -> ProposalAhead:
    """Ask for the next round's edit now, in the background: committing and recording a kept edit needs no model,
    and the proposal depends only on the kept text, its score card and the rejected edits, which keeping leaves alone."""
    return ProposalAhead(text, tasks.propose.submit(run.backend, proposal_requests(run, skill, text, card)))


def reject(run: Run, skill: str, edit: Edit, reason: str, status: str = "active") -> str:
    buffer, entry, pruned = run.buffers[skill].add(now_stamp(), edit.target_dim, edit.old, edit.new, reason, status,
                                                   note=edit.describe())
    run.buffers[skill] = buffer
    save_rejected(run.workspace.rejected_edits(skill), buffer)
    if pruned and run.manifest:
        run.manifest.pruned(rejected=pruned)
    return entry.sha256


def optimize_skill(run: Run, skill: str, max_rounds: int | None = None, start_round: int = 1,
                   on_round=lambda skill, round_no, status: None, ahead: ProposalAhead | None = None) -> SkillOutcome:
    best = run.best.get(skill) or run.baselines[skill]
    outcome = SkillOutcome(skill, best.score.total, best.score.total, 0, "max_rounds")
    small_gains = 0
    last_round = start_round + (max_rounds or run.max_rounds) - 1
    reverted_before = ever_reverted(run, skill)  # every revert below ends the loop, so this holds for all its rounds
    for round_no in range(start_round, last_round + 1):
        text = run.workspace.skill_file(skill).read_text(encoding="utf-8")
        try:
            proposal = ahead.proposal.result() if ahead and ahead.text == text else propose_for(run, skill, text, best)
        except BudgetExhausted as err:
            run.stopped = outcome.stop = f"budget: {err}"
            break
        ahead = None
        if proposal is None or proposal.edit is None:  # no dimension has an edit, or the editor was unreachable
            stop, why = ("proposer_unavailable", proposal.reason) if proposal else ("no_edit", "no applicable edit for any dimension")
            tasks.record_row(run, skill, round_no, "skip", None, facts={"stop": stop}, text=why)
            outcome.stop = stop
            break
        edit = proposal.edit
        run.ratchet.pre_edit(skill)
        save_round_backup(run.run_dir, skill, round_no, proposal.edited_text.encode("utf-8"), kind="candidate")
        run.ratchet.write_skill(skill, proposal.edited_text)
        try:
            after = score_text(run, skill, proposal.edited_text, reverted_before)
        except BudgetExhausted as err:
            run.ratchet.rollback(skill)
            run.stopped = outcome.stop = f"budget: {err}"
            tasks.record_row(run, skill, round_no, "skip", None, dim=edit.target_dim, facts={"stop": "budget"},
                             text="LLM budget reached before this edit could be scored; rolled back")
            break
        facts = {"strategy": edit.strategy, "expected": edit.expected_gain, "proposals": proposal.attempts,
                 "rejected_hits": sum("rejected edit" in r for r in proposal.refusals)}
        outcome.rounds = round_no - start_round + 1
        on_round(skill, round_no, f"Δ {after.score.total - best.score.total:+.1f}")
        if after.disagreements or after.review_blocking:
            why = (f"judges disagree by more than 3 points on {', '.join(after.disagreements)}" if after.disagreements
                   else "the review gate has an open P0 (or three open P1)")
            answer = run.ask(f"judges-{skill}", f"{skill} round {round_no}: {why}. Keep this edit?", default_approve=False)
            if not (answer.approved and is_improvement(best.score.total, after.score.total)) or after.review_blocking:
                facts["sha256"] = reject(run, skill, edit, "user_manual" if answer.answered_by in ("ui", "cli") else "score_regression")
                run.ratchet.rollback(skill)
                stop = "disagreement" if after.disagreements else "review_blocked"
                tasks.record_row(run, skill, round_no, "revert", after, old=best.score.total, dim=edit.target_dim,
                                 facts=facts | {"stop": stop}, text=f"{why}; {answer.answered_by}: {answer.comment}",
                                 edit_pct=proposal.edit_pct)
                outcome.stop, outcome.reverted = stop, outcome.reverted + 1
                break
        if after.safety_veto:
            facts["sha256"] = reject(run, skill, edit, "safety_frozen")
            run.ratchet.rollback(skill)
            tasks.record_row(run, skill, round_no, "revert", after, old=best.score.total, dim=edit.target_dim,
                             facts=facts | {"stop": "safety_veto"}, text=edit.describe(), edit_pct=proposal.edit_pct)
            freeze(run, skill, "Safety red line hit by a judge", rounds=None)
            outcome.stop, outcome.reverted = "safety_veto", outcome.reverted + 1
            break
        if is_improvement(best.score.total, after.score.total):
            delta = round1(after.score.total - best.score.total)
            small_gains = small_gains + 1 if delta < CEILING_DELTA else 0
            if small_gains < 2 and round_no < last_round:
                ahead = propose_ahead(run, skill, proposal.edited_text, after)
            run.ratchet.keep(skill, delta, edit.target_dim)
            tasks.record_row(run, skill, round_no, "keep", after, old=best.score.total, dim=edit.target_dim,
                             facts=facts, text=edit.describe(), edit_pct=proposal.edit_pct)
            best, outcome.after, outcome.kept = after, after.score.total, outcome.kept + 1
            run.best[skill] = best
            run.kept_edits.setdefault(skill, []).append(edit)
            if small_gains >= 2:
                outcome.stop = "ceiling"
                break
        else:  # rejected first: a crash before the rollback must not let the same edit be tried again
            facts["sha256"] = reject(run, skill, edit, "score_regression")
            run.ratchet.rollback(skill)
            tasks.record_row(run, skill, round_no, "revert", after, old=best.score.total, dim=edit.target_dim,
                             facts=facts | {"stop": "bottleneck"}, text=edit.describe(), edit_pct=proposal.edit_pct)
            emit("luban.rollback", skill, {"skill_path": str(run.workspace.skill_file(skill)), "from_version": "edited",
                                           "to_version": run.commit() or "kept", "reason": "score_regression"})
            outcome.stop, outcome.reverted = "bottleneck", outcome.reverted + 1
            break
    return outcome


def freeze(run: Run, skill: str, reason: str, rounds: int | None) -> None:
    from workspace import profile as profile_store
    from workspace.governance_records import now_iso

    def change(p: profile_store.LubanProfile) -> None:
        p.frozen[skill] = profile_store.FrozenSkill(reason=reason, since=now_iso(), rounds_left=rounds)

    run.profile = profile_store.update(run.workspace.profile, change)
    emit("luban.freeze", skill, {"skill_path": str(run.workspace.skill_file(skill)), "freeze_scope": "current",
                                 "reason": reason, "duration_rounds": rounds})
