"""Phase 3 (full mode): the held-out gate, and the design's Steps A–D when the held-out prompts decline beyond noise."""

from __future__ import annotations

from dataclasses import dataclass, replace

from prefect import get_run_logger

from flows.phases.rounds import exploratory_rewrite
from flows.ratchet import measure, records
from flows.ratchet.loop import freeze, optimize_skill, reject
from flows.ratchet.measure import Version
from flows.ratchet.rebuild import kept_edits
from flows.scale.threads import side_by_side
from flows.state.config import PhaseEnd, RunStop, StopKind
from flows.state.products import Optimized, SkillOutcome, SkillState
from flows.state.rows import RowDraft
from flows.state.run import Run
from judges.usage import BudgetExhausted
from scoring.formula import round1
from scoring.keep_decision import compare_means
from scoring.notes import parse_note
from workspace import meta_learnings
from workspace import profile as profile_store
from workspace.git_ratchet import CommitKind
from workspace.governance_records import now_iso
from workspace.pending_keep import text_sha
from workspace.rejected_edits import SKILL_FILE, RejectReason, edit_sha256, save
from workspace.results_tsv import ResultRow, Status


def held_out_gate(run: Run, optimized: Optimized) -> Optimized:
    """Phase 3 (full mode): the held-out prompts, and the design's Steps A–D when they decline beyond noise.

    Each version's held-out score is the mean of several graded calls, and a
    decline counts only when the one-sided 95 % upper bound of the difference
    is below 0, read against the held-out grades' pooled noise — the same rule
    as the keep decision's veto, not one graded call against another. The outcomes as the gate leaves them.
    """
    if run.mode != "full":
        return optimized
    outcomes, step_b_streak = dict(optimized.outcomes), 0
    try:
        graded = _graded_side_by_side(run, list(outcomes)) if run.options.parallel > 1 else {}
        for skill, outcome in optimized.outcomes.items():
            outcomes[skill], step_b_streak = _gate(run, skill, outcome, graded.get(skill), step_b_streak)
    except BudgetExhausted as err:  # the hard budget: the skills not yet gated keep their Phase 2 outcomes
        return Optimized(outcomes, PhaseEnd(RunStop(StopKind.BUDGET, str(err))))
    return Optimized.of(outcomes, optimized.end)


def _gate(run: Run, skill: str, outcome: SkillOutcome, graded: tuple[tuple[float, ...], tuple[float, ...]] | None,
          step_b_streak: int) -> tuple[SkillOutcome, int]:
    """One skill through the gate (``graded``: its grades taken side by side, if they were): its outcome after,
    and the streak of skills in a row that went through Step B."""
    undone = _step_b_recorded(run, skill)  # resumed after Step B rolled back: grade what it undid, as it did
    if undone is not None and undone.row.old_score is not None:
        outcome = replace(outcome, after=undone.row.old_score)
    base, now = (_baseline_held_out(run, skill), measure.held_out(run, skill, undone.text)) if undone else (
        graded or _graded(run, skill))
    held_delta = _decline(run, skill, base, now)
    if base and now:
        run.effects.notice(f"{skill}: held-out gate: {sum(base) / len(base):.2f} at baseline → {sum(now) / len(now):.2f} "
                           f"now ({len(base)} and {len(now)} graded call(s)): "
                           f"{'declined beyond noise' if held_delta is not None else 'no decline beyond noise'}")
    if held_delta is None:
        return outcome, 0
    main_delta = round1(outcome.after - outcome.before)
    outcome = replace(outcome, held_out_fail=True)
    step_b = main_delta > 0
    step_b_streak = step_b_streak + 1 if step_b else 0
    if step_b:
        outcome = _step_b(run, skill, outcome, base, undone)
    else:
        _step_c(run, skill, main_delta, held_delta)
    _step_d(run, skill, main_delta, held_delta, step_b_streak)
    return outcome, step_b_streak


def _graded(run: Run, skill: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The held-out grades of the skill's baseline and of its version now."""
    return _baseline_held_out(run, skill), measure.held_out(run, skill, run.workspace.skill_file(skill).read_text(encoding="utf-8"))


def _graded_side_by_side(run: Run, skills: list[str]) -> dict[str, tuple[tuple[float, ...], tuple[float, ...]]]:
    """--parallel: every skill graded at once before the gate decides, in order, skill by skill. Each decision then
    reads the held-out noise pooled over all skills' grades, where the serial gate reads the grades so far."""
    return dict(zip(skills, side_by_side(run, skills, lambda skill: _graded(run, skill)), strict=True))


def _baseline_held_out(run: Run, skill: str) -> tuple[float, ...]:
    """The baseline version's held-out grades this run. After --resume, the saved baseline graded again, as the run
    that stopped had graded it (its row keeps only a rounded mean, and a gate read against a rounded value can
    see a decline the uninterrupted run would not); the recorded mean only when the saved version is gone."""
    saved = run.run_dir / skill / "baseline.md"
    samples = run.ledger.held_out_of(skill, saved.read_text(encoding="utf-8")) if saved.exists() else ()
    if not samples and saved.exists() and run.resumed(skill) is not None:
        samples = measure.held_out(run, skill, saved.read_text(encoding="utf-8"))
    if samples:
        return samples
    row = next((r for r in reversed(run.results(skill).rows()) if r.status == Status.BASELINE), None)
    return (row.held_out_score,) if row is not None and row.held_out_score is not None else ()


def _decline(run: Run, skill: str, base: tuple[float, ...], now: tuple[float, ...]) -> float | None:
    """The held-out Δ (one decimal) when it declined beyond noise; None when it did not, or cannot be told."""
    if not base or not now:
        return None
    delta, upper = compare_means(base, now, measure.held_out_noise(run))
    if upper is None:
        run.effects.notice(f"{skill}: held-out Δ {delta:+.2f} on too few graded calls to know their noise; not read as a decline")
        return None
    if upper >= 0:
        return None
    get_run_logger().warning("%s: held-out declined beyond noise (Δ %+.2f, upper bound %+.2f; %d vs %d graded calls)",
                             skill, delta, upper, len(now), len(base))
    return round1(delta)


@dataclass(frozen=True)
class StepB:
    """A Step B this run recorded: its REVERT row, and the text it rolled back from (the version graded as declined)."""

    row: ResultRow
    text: str


def _step_b_recorded(run: Run, skill: str) -> StepB | None:
    """This run's Step B for the skill, when a resumed run finds its row (the rollback and the row are one step)."""
    rows = run.results(skill).rows()
    start = max((i for i, r in enumerate(rows) if r.status == Status.BASELINE), default=0)
    row = next((r for r in rows[start:] if r.status == Status.REVERT and parse_note(r.note)[0].get("step") == "B"), None)
    history = run.editor.git.history() if run.editor.git else []
    rollback = next((c for c in reversed(history) if c.skill == skill and c.kind is CommitKind.HELD_OUT_ROLLBACK), None)
    if row is None or rollback is None or run.editor.git is None:
        return None
    return StepB(row, run.editor.git.committed_text(skill, f"{rollback.sha}^").decode("utf-8"))


def _step_b(run: Run, skill: str, outcome: SkillOutcome, base: tuple[float, ...],
            done: StepB | None = None) -> SkillOutcome:
    """Overfitting: roll back the last kept edit, reject it, tighten to 5 %, allow one limited round, measure again.

    The rollback, the rejection and the REVERT row are one recoverable step; a run resumed after it (``done``)
    goes on from there: the tightening, the one round (unless its row is there), the measurement. The outcome after."""
    if done is None and not _roll_back_last_keep(run, skill, outcome):
        return outcome
    _tighten(run, skill, 0.05, "held-out overfitting (Step B)", scope="skill")
    rows = run.results(skill).rows()
    if done is None or rows[-1].round <= done.row.round:  # no row after Step B's: its one round is still to run
        retry = optimize_skill(run, skill, max_rounds=1, start_round=run.next_round(skill))
        outcome = replace(outcome, after=retry.after, ends_run=outcome.ends_run or retry.ends_run)
    else:
        outcome = replace(outcome, after=run.incumbent_total(skill))
    again = measure.held_out(run, skill, run.workspace.skill_file(skill).read_text(encoding="utf-8"))
    held_delta = _decline(run, skill, base, again)
    if held_delta is not None:
        _step_c(run, skill, round1(outcome.after - outcome.before), held_delta, double=True)
    return outcome


def _roll_back_last_keep(run: Run, skill: str, outcome: SkillOutcome) -> bool:
    """Step B's decision taking effect: the undone edit rejected, the file back to before it, and the row — the
    restored text measured first, so the row can wait as pending until the rollback commit proves it."""
    ratchet = run.editor.git
    assert ratchet is not None  # the gate runs in full mode
    history = ratchet.history()
    keeps = [c for c in history if c.skill == skill and c.kind is CommitKind.OPTIMIZE]
    kept = kept_edits(history, skill)
    last_keep = next((r for r in reversed(run.results(skill).rows()) if r.status == Status.KEEP), None)
    if last_keep is None or not kept or not keeps:
        return False
    undone = kept[-1]  # the very edit: never proposed again (a rewrite has no edit to remember)
    file = undone.file if undone is not None else SKILL_FILE
    before_keep = f"{keeps[-1].sha}^"
    restored_file = ratchet.committed_text(skill, before_keep, file)
    restored = Version.on_disk(run, skill).with_file(file, restored_file.decode("utf-8"))
    # measured afresh: its older samples were this run's too
    run.take(SkillState(skill, best=measure.baseline(run, skill, restored.text, restored.sources)))
    digest = edit_sha256(undone.old, undone.new, undone.file) if undone is not None else ""
    draft = RowDraft(run.next_round(skill), Status.REVERT, run.best(skill), old=outcome.after,
                     measured=restored.samples(run, skill), dim=last_keep.dim_changed,
                     facts={"held_out_fail": "true", "step": "B", "sha256": digest, "reason": RejectReason.HELD_OUT_DEGRADED},
                     text="held-out declined while main rose: rolled back the last kept edit")

    def reject_and_roll_back() -> None:
        if undone is not None and digest not in {e.sha256 for e in run.buffer(skill).entries}:
            reject(run, skill, undone, RejectReason.HELD_OUT_DEGRADED)
        ratchet.rollback_to_previous_keep(skill)

    records.recorded_step(run, skill, draft, reject_and_roll_back, kept_sha256=text_sha(restored_file), file=file)
    run.effects.emit("luban.rollback", skill, {"skill_path": str(run.workspace.skill_file(skill)), "from_version": last_keep.commit,
                                   "to_version": run.commit(), "reason": RejectReason.HELD_OUT_DEGRADED})
    return True


def _step_c(run: Run, skill: str, main_delta: float, held_delta: float, double: bool = False) -> None:
    """Systemic decline: suggest a rewrite, wait at most 300 s, then keep the current version and flag it."""
    answer = run.ask(f"held-out-{skill}", f"{skill}: held-out and main both declined (main {main_delta:+.1f}, "
                     f"held-out {held_delta:+.1f}); rewrite it (Phase 2.5)?",
                     default_approve=False, timeout=min(300, run.options.approval_timeout))
    flag = "held_out_double_fail" if double else "held_out_fail"
    if answer.approved and answer.by_a_person:  # a person's yes is the rewrite's consent: Phase 2.5 runs now
        kept = exploratory_rewrite(run, skill, consented=True)
        run.effects.notice(f"{skill}: {flag}; the rewrite a person approved was {'kept' if kept else 'not better: rolled back'}")
    else:
        run.effects.notice(f"{skill}: {flag}; kept the current version (rewrite not approved: {answer.answered_by})")

    def queue(meta: meta_learnings.MetaLearnings) -> None:
        meta.add("L1 待处理队列", now_iso()[:10], f"{skill}: {flag}", {"main_delta": f"{main_delta:+.1f}",
                 "held_out_delta": f"{held_delta:+.1f}", "state": "awaiting review"})

    meta_learnings.update(run.workspace.meta_learnings, queue, created=now_iso())


def _step_d(run: Run, skill: str, main_delta: float, held_delta: float, step_b_streak: int) -> None:
    if main_delta >= 8 and held_delta <= -3:
        _tighten(run, skill, 0.05, "strong overfitting (Step D)", scope="global")
    if main_delta >= 5 and held_delta <= -5:
        freeze(run, skill, "extreme overfitting (Step D): frozen for 5 runs", runs=5)
        buffer = run.buffer(skill)
        last = buffer.entries[-1] if buffer.entries else None
        if last is not None:
            buffer = buffer.with_status(last.number, "permanent_block")
            run.take(SkillState(skill, buffer=buffer))
            save(run.workspace.rejected_edits(skill), buffer)
    if step_b_streak >= 2:
        _tighten(run, skill, 0.05, "two skills in a row overfitted (Step B twice)", scope="global")


def _tighten(run: Run, skill: str, budget: float, reason: str, scope: str) -> None:
    previous = run.profile.edit_budget if scope == "global" else run.profile.budget_for(skill)

    def change(p: profile_store.LubanProfile) -> None:
        if scope == "global":
            p.edit_budget = min(p.edit_budget, budget)
        else:
            p.skill_edit_budget[skill] = budget
        p.budget_runs_left[profile_store.ALL_SKILLS if scope == "global" else skill] = profile_store.TIGHTEN_RUNS

    run.effects.update_profile(run.workspace.profile, change)
    run.effects.emit("luban.budget_tighten", skill, {"new_budget_percent": budget * 100, "reason": reason, "triggered_by_skill": skill,
                                         "previous_budget_percent": previous * 100, "scope": scope})
    run.effects.notice(f"edit budget {previous:.0%} → {budget:.0%} ({scope}) for the next {profile_store.TIGHTEN_RUNS} "
                       f"runs: {reason}; 'luban lift --budget' ends it now")
