"""Phase 2 (the ratchet over skills), 2.5 (exploratory rewrite) and 3 (the held-out gate, Steps A–D)."""

from __future__ import annotations

import difflib

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact

from flows import measure, tasks
from flows.context import Run, SkillOutcome
from flows.events import emit
from flows.fan_out import fan_out, side_by_side
from flows.progress import NO_DISPLAY, progress
from flows.ratchet import ProposalAhead, freeze, kept_edits, optimize_skill, propose_ahead, reject
from flows.trial import Outcome, try_edit
from scoring.formula import round1
from scoring.keep_decision import compare_means
from scoring.model import DIM_NAMES
from workspace import meta_learnings
from workspace import profile as profile_store
from workspace.atomic import atomic_write
from workspace.governance_records import now_iso
from workspace.manifest import save_round_backup
from workspace.rejected_edits import RejectReason
from workspace.results_tsv import Status, Stop


def optimize_all(run: Run) -> None:
    """Skills in ascending baseline order; a 🔴 checkpoint after each; 'not good' restores the original."""
    order = sorted(run.skills, key=run.incumbent_total)
    with progress(order, run.max_rounds) as display:
        run.display = display  # a checkpoint asked in the terminal pauses it (Run.ask)
        try:
            if run.options.fan_out_to or (run.options.parallel > 1 and len(order) > 1):
                _optimize_side_by_side(run, order, display.update)
            else:
                _optimize_in_order(run, order, display.update)
        finally:
            run.display = NO_DISPLAY


def _optimize_in_order(run: Run, order: list[str], update) -> None:
    round_one_stops, ahead = 0, None
    for index, skill in enumerate(order):
        if run.stopped:
            break
        before = _pre_run_version(run, skill)
        outcome = continue_or_start(run, skill, update, ahead)
        ahead = _next_first_proposal(run, order[index + 1:])
        round_one_stops = _after_skill(run, order, skill, before, outcome, update, round_one_stops)


def _optimize_side_by_side(run: Run, order: list[str], update) -> None:
    """The skills' rounds at once (flows/fan_out.py); then, in baseline order, what the serial loop does after each."""
    before = {skill: _pre_run_version(run, skill) for skill in order}
    outcomes = fan_out(run, order, lambda child, skill: continue_or_start(child, skill, update))
    round_one_stops = 0
    for skill in order:
        round_one_stops = _after_skill(run, order, skill, before[skill], outcomes[skill], update, round_one_stops)


def _after_skill(run: Run, order: list[str], skill: str, before: bytes, outcome: SkillOutcome, update,
                 round_one_stops: int) -> int:
    """The round cap's checkpoint, the backup, the skill's checkpoint, and the exploratory-rewrite trigger (two
    skills in a row stopped in round 1); the streak of such skills after this one."""
    update(skill, run.max_rounds, outcome.stop)
    run.outcomes[skill] = outcome
    if outcome.stop is Stop.MAX_ROUNDS:
        outcome = run.outcomes[skill] = _at_max_rounds(run, skill, outcome)
    save_round_backup(run.run_dir, skill, max(outcome.rounds, 1), run.workspace.skill_file(skill).read_bytes())
    _review_skill(run, skill, before, outcome)
    round_one_stops = round_one_stops + 1 if outcome.rounds <= 1 and outcome.stop in (Stop.BOTTLENECK, Stop.NO_EDIT) else 0
    if run.mode == "full" and round_one_stops >= 2:
        exploratory_rewrite(run, min(order, key=lambda s: run.outcomes.get(s, outcome).after))
        round_one_stops = 0
    return round_one_stops


def _at_max_rounds(run: Run, skill: str, outcome: SkillOutcome) -> SkillOutcome:
    """🔴 at the round cap: one more round, an exploratory rewrite (the choice is the consent), or finish."""
    answer = run.ask(f"max-rounds-{skill}", f"{skill} used all {run.max_rounds} rounds",
                     choices=("one more round", "exploratory rewrite", "finish"), default_choice="finish")
    if answer.choice == "one more round":
        return _merge(outcome, optimize_skill(run, skill, max_rounds=1, start_round=run.next_round(skill)))
    if answer.choice == "exploratory rewrite":
        exploratory_rewrite(run, skill, consented=answer.answered_by in ("ui", "cli"))
    return outcome


def _pre_run_version(run: Run, skill: str) -> bytes:
    """What the skill's checkpoint diff starts from: on --resume, the version saved at this run's baseline."""
    saved = run.run_dir / skill / "baseline.md"
    if skill in run.resumed and saved.exists():
        return saved.read_bytes()
    return run.workspace.skill_file(skill).read_bytes()


def _next_first_proposal(run: Run, rest: list[str]) -> ProposalAhead | None:
    """The next skill's first proposal, asked while this one is reviewed, when no person answers in between
    (with a person, the answer may stop the run, and the call would be paid for nothing)."""
    if run.options.approval != "auto" or not rest or rest[0] in run.resumed or run.stopped:
        return None
    text = run.workspace.skill_file(rest[0]).read_text(encoding="utf-8")
    return propose_ahead(run, rest[0], text, run.baselines[rest[0]])


def continue_or_start(run: Run, skill: str, update, ahead: ProposalAhead | None = None) -> SkillOutcome:
    if skill not in run.resumed:
        return optimize_skill(run, skill, on_round=update, ahead=ahead)
    before, last_round, stop = run.resumed[skill]
    current = run.incumbent_total(skill)
    if stop is not None or last_round >= run.max_rounds:  # this skill had finished: nothing is repeated
        return SkillOutcome(skill, before, current, last_round, stop or Stop.MAX_ROUNDS)
    outcome = optimize_skill(run, skill, max_rounds=run.max_rounds - last_round, start_round=last_round + 1, on_round=update)
    outcome.before = before
    return outcome


def _merge(first: SkillOutcome, extra: SkillOutcome) -> SkillOutcome:
    return SkillOutcome(first.skill, first.before, extra.after, first.rounds + extra.rounds, extra.stop,
                        first.kept + extra.kept, first.reverted + extra.reverted)


def _review_skill(run: Run, skill: str, before: bytes, outcome: SkillOutcome) -> None:
    after = run.workspace.skill_file(skill).read_bytes()
    diff = "".join(difflib.unified_diff(before.decode().splitlines(True), after.decode().splitlines(True),
                                        f"{skill}/SKILL.md (before)", f"{skill}/SKILL.md (after)")) or "(no change)\n"
    base, best = run.ledger.of(skill, before.decode()).means(), run.incumbent(skill).means()
    deltas = "\n".join(f"| {d} {DIM_NAMES.get(d, '')} | {base.get(d, '—')} | {best.get(d, '—')} |"
                       for d in sorted(set(base) | set(best), key=_order))
    summary = (f"**{skill}**: {outcome.before} → {outcome.after} in {outcome.rounds} round(s), stop: {outcome.stop}\n\n"
               f"| dim (mean of its samples) | before | after |\n|---|---:|---:|\n{deltas}\n\n"
               f"{_decisions_table(run, skill)}\n\n```diff\n{diff}```")
    create_markdown_artifact(summary, key=f"skill-{_key(skill)}", description=f"Phase 2 result for {skill}")
    answer = run.ask(f"skill-{skill}", summary)
    if not answer.approved and not answer.timed_out:
        run.editor.restore_original(skill)
        tasks.record_row(run, skill, run.next_round(skill), Status.REVERT, run.baselines[skill], old=outcome.after,
                         measured=run.incumbent(skill), stop=Stop.USER_REJECTED, text=f"restored the original: {answer.comment}")
        outcome.after, outcome.stop = outcome.before, Stop.USER_REJECTED
        outcome.reverted, outcome.kept = outcome.reverted + outcome.kept, 0  # the summary says what the skill ends with
    elif answer.timed_out:
        run.stopped = f"no answer at the checkpoint after {skill}: resumable with 'luban optimize --resume'"


def _order(dim: str) -> int:
    from scoring.model import WEIGHTS

    return list(WEIGHTS).index(dim)


def _decisions_table(run: Run, skill: str) -> str:
    """Each decision of this run with its evidence: what decided it, Δ, the bound, the samples and the calls."""
    from scoring.governance.report import decision_lines

    rows = run.results(skill).rows()
    start = max((i for i, r in enumerate(rows) if r.status == Status.BASELINE), default=0)
    return "\n".join(decision_lines(rows[start:]))


def _key(skill: str) -> str:
    """An artifact key (lowercase ASCII letters, digits, dashes); a hash keeps two non-ASCII names apart."""
    import hashlib

    key = "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in skill.lower())
    return key if key == skill else f"{key}-{hashlib.sha256(skill.encode()).hexdigest()[:8]}"


def exploratory_rewrite(run: Run, skill: str, consented: bool = False) -> None:
    """Phase 2.5: rewrite one bottleneck skill, only with a person's consent, kept only if it beats the saved best.

    Reached when two skills in a row stop in round 1 (🛑 asks first), or when a
    person chose "exploratory rewrite" at a skill's max-rounds checkpoint (that choice is the consent).
    """
    if not consented:
        answer = run.ask(f"rewrite-{skill}", f"🛑 STOP: two consecutive skills stopped in round 1. Rewrite {skill} "
                         "from scratch (kept only if it beats the saved best)?", default_approve=False)
        if not answer.approved:
            run.notices.append(f"exploratory rewrite of {skill} proposed, not approved ({answer.answered_by})")
            return
    current = run.workspace.skill_file(skill).read_text(encoding="utf-8")
    atomic_write(run.run_dir / skill / "best-pre-rewrite.md", current)
    rewritten = run.backend.rewrite(current, skill, measure.skill_files(run, skill))
    if rewritten is None or len(rewritten) > 1.5 * len(current):
        run.notices.append(f"exploratory rewrite of {skill}: no usable rewrite (kept the saved best)")
        return
    round_no = run.next_round(skill)
    run.editor.pre_edit(skill)
    run.editor.write_skill(skill, rewritten)
    trial = try_edit(run, skill, round_no, current, rewritten, None)  # the same keep decision as any edit
    facts = {"strategy": "exploratory-rewrite"}
    if trial.outcome is Outcome.KEEP:
        tasks.keep_and_record(run, skill, round_no, trial, None, dim="rewrite", facts=facts,
                              text="Phase 2.5 exploratory rewrite beat the saved best")
        run.best[skill] = trial.evaluation  # type: ignore[assignment]
        if skill in run.outcomes:
            run.outcomes[skill].after = run.incumbent_total(skill)
        return
    run.editor.rollback(skill)
    tasks.record_row(run, skill, round_no, Status.REVERT if trial.outcome is Outcome.REJECT else Status.SKIP, trial,
                     dim="rewrite", facts=facts, stop=Stop.BUDGET if trial.outcome is Outcome.ABANDON else Stop.REWRITE_NOT_BETTER,
                     text=f"Phase 2.5 rewrite did not beat the saved best: {trial.why}")


def held_out_gate(run: Run) -> None:
    """Phase 3 (full mode): the held-out prompts, and the design's Steps A–D when they decline beyond noise.

    Each version's held-out score is the mean of several graded calls, and a
    decline counts only when the one-sided 95 % upper bound of the difference
    is below 0, read against the held-out grades' pooled noise — the same rule
    as the keep decision's veto, not one graded call against another.
    """
    if run.mode != "full":
        return
    step_b_streak = 0
    graded = _graded_side_by_side(run) if run.options.parallel > 1 else {}
    for skill, outcome in list(run.outcomes.items()):
        base, now = graded.get(skill) or _graded(run, skill)
        held_delta = _decline(run, skill, base, now)
        if base and now:
            run.notices.append(f"{skill}: held-out gate: {sum(base) / len(base):.2f} at baseline → {sum(now) / len(now):.2f} "
                               f"now ({len(base)} and {len(now)} graded call(s)): "
                               f"{'declined beyond noise' if held_delta is not None else 'no decline beyond noise'}")
        if held_delta is None:
            step_b_streak = 0
            continue
        main_delta = round1(outcome.after - outcome.before)
        outcome.held_out_fail = True
        step_b = main_delta > 0
        step_b_streak = step_b_streak + 1 if step_b else 0
        if step_b:
            _step_b(run, skill, outcome, base)
        else:
            _step_c(run, skill, main_delta, held_delta)
        _step_d(run, skill, main_delta, held_delta, step_b_streak)


def _graded(run: Run, skill: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The held-out grades of the skill's baseline and of its version now."""
    return _baseline_held_out(run, skill), measure.held_out(run, skill, run.workspace.skill_file(skill).read_text(encoding="utf-8"))


def _graded_side_by_side(run: Run) -> dict[str, tuple[tuple[float, ...], tuple[float, ...]]]:
    """--parallel: every skill graded at once before the gate decides, in order, skill by skill. Each decision then
    reads the held-out noise pooled over all skills' grades, where the serial gate reads the grades so far."""
    skills = list(run.outcomes)
    return dict(zip(skills, side_by_side(run, skills, lambda skill: _graded(run, skill)), strict=True))


def _baseline_held_out(run: Run, skill: str) -> tuple[float, ...]:
    """The baseline version's held-out grades this run. After --resume, the saved baseline graded again, as the run
    that stopped had graded it (its row keeps only a rounded mean, and a gate read against a rounded value can
    see a decline the uninterrupted run would not); the recorded mean only when the saved version is gone."""
    saved = run.run_dir / skill / "baseline.md"
    samples = run.ledger.held_out.get((skill, measure.text_id(saved.read_text(encoding="utf-8"))), ()) if saved.exists() else ()
    if not samples and saved.exists() and skill in run.resumed:
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
        run.notices.append(f"{skill}: held-out Δ {delta:+.2f} on too few graded calls to know their noise; not read as a decline")
        return None
    if upper >= 0:
        return None
    get_run_logger().warning("%s: held-out declined beyond noise (Δ %+.2f, upper bound %+.2f; %d vs %d graded calls)",
                             skill, delta, upper, len(now), len(base))
    return round1(delta)


def _step_b(run: Run, skill: str, outcome: SkillOutcome, base: tuple[float, ...]) -> None:
    """Overfitting: roll back the last kept edit, reject it, tighten to 5 %, allow one limited round, measure again."""
    last_keep = next((r for r in reversed(run.results(skill).rows()) if r.status == Status.KEEP), None)
    kept = kept_edits(run.editor.history(), skill)  # type: ignore[union-attr]  # the gate runs in full mode: git
    if last_keep is None or not kept:
        return
    run.editor.rollback_to_previous_keep(skill)  # type: ignore[union-attr]
    undone = kept[-1]  # the very edit: never proposed again (a rewrite has no edit to remember)
    digest = reject(run, skill, undone, RejectReason.HELD_OUT_DEGRADED) if undone is not None else ""
    emit("luban.rollback", skill, {"skill_path": str(run.workspace.skill_file(skill)), "from_version": last_keep.commit,
                                   "to_version": run.commit(), "reason": RejectReason.HELD_OUT_DEGRADED})
    _tighten(run, skill, 0.05, "held-out overfitting (Step B)", scope="skill")
    restored = run.workspace.skill_file(skill).read_text(encoding="utf-8")
    run.best[skill] = measure.baseline(run, skill, restored)  # measured afresh: its older samples were this run's too
    tasks.record_row(run, skill, run.next_round(skill), Status.REVERT, run.best[skill], old=outcome.after,
                     measured=run.incumbent(skill), dim=last_keep.dim_changed,
                     facts={"held_out_fail": "true", "step": "B", "sha256": digest, "reason": RejectReason.HELD_OUT_DEGRADED},
                     text="held-out declined while main rose: rolled back the last kept edit")
    retry = optimize_skill(run, skill, max_rounds=1, start_round=run.next_round(skill))
    again = measure.held_out(run, skill, run.workspace.skill_file(skill).read_text(encoding="utf-8"))
    outcome.after = retry.after
    held_delta = _decline(run, skill, base, again)
    if held_delta is not None:
        _step_c(run, skill, round1(outcome.after - outcome.before), held_delta, double=True)


def _step_c(run: Run, skill: str, main_delta: float, held_delta: float, double: bool = False) -> None:
    """Systemic decline: suggest a rewrite, wait at most 300 s, then keep the current version and flag it."""
    answer = run.ask(f"held-out-{skill}", f"{skill}: held-out and main both declined (main {main_delta:+.1f}, "
                     f"held-out {held_delta:+.1f}); rewrite it (Phase 2.5)?",
                     default_approve=False, timeout=min(300, run.options.approval_timeout))
    flag = "held_out_double_fail" if double else "held_out_fail"
    run.notices.append(f"{skill}: {flag}; kept the current version (rewrite {'approved' if answer.approved else 'not approved'})")

    def queue(meta: meta_learnings.MetaLearnings) -> None:
        meta.add("L1 待处理队列", now_iso()[:10], f"{skill}: {flag}", {"main_delta": f"{main_delta:+.1f}",
                 "held_out_delta": f"{held_delta:+.1f}", "state": "awaiting review"})

    meta_learnings.update(run.workspace.meta_learnings, queue, created=now_iso())


def _step_d(run: Run, skill: str, main_delta: float, held_delta: float, step_b_streak: int) -> None:
    if main_delta >= 8 and held_delta <= -3:
        _tighten(run, skill, 0.05, "strong overfitting (Step D)", scope="global")
    if main_delta >= 5 and held_delta <= -5:
        freeze(run, skill, "extreme overfitting (Step D): frozen for 5 rounds", rounds=5)
        last = run.buffers[skill].entries[-1] if run.buffers[skill].entries else None
        if last is not None:
            run.buffers[skill] = run.buffers[skill].with_status(last.number, "permanent_block")
            from workspace.rejected_edits import save

            save(run.workspace.rejected_edits(skill), run.buffers[skill])
    if step_b_streak >= 2:
        _tighten(run, skill, 0.05, "two skills in a row overfitted (Step B twice)", scope="global")


def _tighten(run: Run, skill: str, budget: float, reason: str, scope: str) -> None:
    previous = run.profile.edit_budget if scope == "global" else run.profile.budget_for(skill)

    def change(p: profile_store.LubanProfile) -> None:
        if scope == "global":
            p.edit_budget = min(p.edit_budget, budget)
        else:
            p.skill_edit_budget[skill] = budget

    run.profile = profile_store.update(run.workspace.profile, change)
    emit("luban.budget_tighten", skill, {"new_budget_percent": budget * 100, "reason": reason, "triggered_by_skill": skill,
                                         "previous_budget_percent": previous * 100, "scope": scope})
    run.notices.append(f"edit budget {previous:.0%} → {budget:.0%} ({scope}): {reason}")
