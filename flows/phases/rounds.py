"""Phase 2 (the ratchet over skills) and 2.5 (exploratory rewrite); Phase 3 is flows/phases/held_out_gate.py."""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import replace

from prefect.artifacts import create_markdown_artifact

from flows.interaction.progress import NO_DISPLAY, progress
from flows.ratchet import measure, records
from flows.ratchet.loop import ProposalAhead, optimize_skill, propose_ahead
from flows.ratchet.measure import Version
from flows.ratchet.trial import Outcome, try_edit
from flows.scale.fan_out import fan_out
from flows.state.config import PhaseEnd, RunStop, StopKind
from flows.state.products import Optimized, SkillOutcome
from flows.state.rows import RowDraft
from flows.state.run import Run
from judges.usage import BudgetExhausted
from scoring.governance.report import decision_lines
from scoring.model import DIM_NAMES, WEIGHTS
from workspace.atomic import atomic_write
from workspace.manifest import save_round_backup
from workspace.pending_keep import text_sha
from workspace.rejected_edits import SKILL_FILE
from workspace.results_tsv import Status, Stop
from workspace.skill_source import list_files


def optimize_all(run: Run) -> Optimized:
    """Skills in ascending baseline order; a 🔴 checkpoint after each; 'not good' restores the original."""
    order = sorted(run.skills, key=run.incumbent_total)
    outcomes: dict[str, SkillOutcome] = {}  # filled skill by skill: what a budget stop leaves is still reported
    with progress(order, run.max_rounds) as display:
        run.display = display  # a checkpoint asked in the terminal pauses it (Run.ask)
        try:
            if run.options.fan_out_to or (run.options.parallel > 1 and len(order) > 1):
                _optimize_side_by_side(run, order, display.update, outcomes)
            else:
                _optimize_in_order(run, order, display.update, outcomes)
        except BudgetExhausted as err:  # the hard budget, reached outside a round (a rewrite, a child's record)
            return Optimized(outcomes, PhaseEnd(RunStop(StopKind.BUDGET, str(err))))
        finally:
            run.display = NO_DISPLAY
    return Optimized.of(outcomes)


def _optimize_in_order(run: Run, order: list[str], update, outcomes: dict[str, SkillOutcome]) -> None:
    round_one_stops, ahead = 0, None
    for index, skill in enumerate(order):
        before = _pre_run_version(run, skill)
        outcome = _in_own_run(run, skill, update, ahead)
        ahead = _next_first_proposal(run, order[index + 1:]) if not outcome.ends_run else None
        round_one_stops = _after_skill(run, order, skill, before, outcome, update, round_one_stops, outcomes)
        if outcomes[skill].ends_run:
            break


def _optimize_side_by_side(run: Run, order: list[str], update, outcomes: dict[str, SkillOutcome]) -> None:
    """The skills' rounds at once (flows/scale/fan_out.py); then, in baseline order, what the serial loop does after each."""
    before = {skill: _pre_run_version(run, skill) for skill in order}
    rounds_left = [skill for skill in order if not finished(run, skill)]  # a resumed batch forks only those
    ran = {skill: continue_or_start(run, skill, update) for skill in order if skill not in rounds_left}
    if rounds_left:
        ran |= fan_out(run, rounds_left, lambda child, skill: continue_or_start(child, skill, update))
    round_one_stops = 0
    for skill in order:
        round_one_stops = _after_skill(run, order, skill, before[skill], ran[skill], update, round_one_stops, outcomes)


def _in_own_run(run: Run, skill: str, update, ahead: ProposalAhead | None) -> SkillOutcome:
    """A skill's rounds in a run of their own, as a skill's rounds side by side are: what they produced (the kept
    card, the rejected edits) taken back, even when the budget ran out among them."""
    mine = run.for_skill()
    try:
        return continue_or_start(mine, skill, update, ahead)
    finally:
        run.join(mine, skill)


def _after_skill(run: Run, order: list[str], skill: str, before: dict[str, bytes], outcome: SkillOutcome, update,
                 round_one_stops: int, outcomes: dict[str, SkillOutcome]) -> int:
    """The round cap's checkpoint, the backup, the skill's checkpoint, and the exploratory-rewrite trigger (two
    skills in a row stopped in round 1), each skill's outcome into ``outcomes``; the streak of such skills after
    this one."""
    update(skill, run.max_rounds, outcome.stop)
    if outcome.stop is Stop.MAX_ROUNDS:
        outcome = _at_max_rounds(run, skill, outcome)
    save_round_backup(run.run_dir, skill, max(outcome.rounds, 1), run.workspace.skill_file(skill).read_bytes())
    outcome = outcomes[skill] = _review_skill(run, skill, before, outcome)
    round_one_stops = round_one_stops + 1 if outcome.rounds <= 1 and outcome.stop in (Stop.BOTTLENECK, Stop.NO_EDIT) else 0
    if run.mode == "full" and round_one_stops >= 2:
        target = min(order, key=lambda s: outcomes.get(s, outcome).after)
        if exploratory_rewrite(run, target) and target in outcomes:
            outcomes[target] = replace(outcomes[target], after=run.incumbent_total(target))
        round_one_stops = 0
    return round_one_stops


def _at_max_rounds(run: Run, skill: str, outcome: SkillOutcome) -> SkillOutcome:
    """🔴 at the round cap: one more round, an exploratory rewrite (the choice is the consent), or finish."""
    answer = run.ask(f"max-rounds-{skill}", f"{skill} used all {run.max_rounds} rounds",
                     choices=("one more round", "exploratory rewrite", "finish"), default_choice="finish")
    if answer.choice == "one more round":
        return _merge(outcome, optimize_skill(run, skill, max_rounds=1, start_round=run.next_round(skill)))
    if answer.choice == "exploratory rewrite" and exploratory_rewrite(run, skill, consented=answer.by_a_person):
        return replace(outcome, after=run.incumbent_total(skill))
    return outcome


def _pre_run_version(run: Run, skill: str) -> dict[str, bytes]:
    """What the skill's checkpoint diff starts from: SKILL.md and every Markdown file beside it (an edit may change one
    that SKILL.md references); on --resume, SKILL.md as saved at this run's baseline and the others as the run's
    original commit holds them."""
    folder = run.workspace.skill_file(skill).parent
    files = {name: (folder / name).read_bytes() for name in sorted(list_files(folder)) if name.endswith(".md")}
    saved = run.run_dir / skill / "baseline.md"
    if run.resumed(skill) is not None and saved.exists():
        ratchet = run.editor.git
        for name in files:
            if ratchet is not None and name != SKILL_FILE:
                try:
                    files[name] = ratchet.committed_text(skill, ratchet.original, file=name)
                except KeyError:  # not in the original commit: new since, so all of it is the run's
                    files[name] = b""
        files[SKILL_FILE] = saved.read_bytes()
    return files


def skill_diff(skill: str, before: dict[str, bytes], after: dict[str, bytes]) -> str:
    """A unified diff of every file that differs, SKILL.md first; "(no change)" when none does."""
    names = sorted(set(before) | set(after), key=lambda n: (n != SKILL_FILE, n))
    return "".join("".join(difflib.unified_diff(before.get(n, b"").decode(errors="replace").splitlines(True),
                                                after.get(n, b"").decode(errors="replace").splitlines(True),
                                                f"{skill}/{n} (before)", f"{skill}/{n} (after)"))
                   for n in names) or "(no change)\n"


def _next_first_proposal(run: Run, rest: list[str]) -> ProposalAhead | None:
    """The next skill's first proposal, asked while this one is reviewed, when no person answers in between
    (with a person, the answer may stop the run, and the call would be paid for nothing)."""
    if run.options.approval != "auto" or not rest or run.resumed(rest[0]) is not None:
        return None
    text = run.workspace.skill_file(rest[0]).read_text(encoding="utf-8")
    return propose_ahead(run, rest[0], text, run.baseline(rest[0]))


def finished(run: Run, skill: str) -> bool:
    """A resumed skill whose rounds had ended before the run stopped: nothing of it is repeated."""
    progress = run.resumed(skill)
    if progress is None:
        return False
    _, last_round, stop = progress
    return stop is not None or last_round >= run.max_rounds


def continue_or_start(run: Run, skill: str, update, ahead: ProposalAhead | None = None) -> SkillOutcome:
    progress = run.resumed(skill)
    if progress is None:
        return optimize_skill(run, skill, on_round=update, ahead=ahead)
    before, last_round, stop = progress
    current = run.incumbent_total(skill)
    if finished(run, skill):
        return SkillOutcome(skill, before, current, last_round, stop or Stop.MAX_ROUNDS)
    outcome = optimize_skill(run, skill, max_rounds=run.max_rounds - last_round, start_round=last_round + 1, on_round=update)
    return replace(outcome, before=before)


def _merge(first: SkillOutcome, extra: SkillOutcome) -> SkillOutcome:
    return SkillOutcome(first.skill, first.before, extra.after, first.rounds + extra.rounds, extra.stop,
                        first.kept + extra.kept, first.reverted + extra.reverted, ends_run=extra.ends_run)


def _review_skill(run: Run, skill: str, before: dict[str, bytes], outcome: SkillOutcome) -> SkillOutcome:
    """🔴 the skill's result: a diff of every file its edits touched, each dimension before and after, every decision;
    a no restores the original. The outcome as the person left it (restored, or ending the run when nobody
    answered)."""
    folder = run.workspace.skill_file(skill).parent
    diff = skill_diff(skill, before, {name: (folder / name).read_bytes() for name in before if (folder / name).exists()}
                      | {SKILL_FILE: (folder / SKILL_FILE).read_bytes()})
    base, best = run.ledger.of(skill, before[SKILL_FILE].decode()).means(), run.incumbent(skill).means()
    deltas = "\n".join(f"| {d} {DIM_NAMES.get(d, '')} | {base.get(d, '—')} | {best.get(d, '—')} |"
                       for d in sorted(set(base) | set(best), key=_order))
    summary = (f"**{skill}**: {outcome.before} → {outcome.after} in {outcome.rounds} round(s), stop: {outcome.stop}\n\n"
               f"| dim (mean of its samples) | before | after |\n|---|---:|---:|\n{deltas}\n\n"
               f"{_decisions_table(run, skill)}\n\n```diff\n{diff}```")
    create_markdown_artifact(summary, key=f"skill-{_key(skill)}", description=f"Phase 2 result for {skill}")
    answer = run.ask(f"skill-{skill}", summary)
    if answer.timed_out:
        return replace(outcome, ends_run=RunStop(StopKind.NO_ANSWER, f"no answer at the checkpoint after {skill}: resumable "
                                                                     "with 'luban optimize --resume'"))
    if not answer.approved:
        restore_original(run, skill, outcome, answer.comment)
        # the summary says what the skill ends with: the original, every kept edit undone
        return replace(outcome, after=outcome.before, stop=Stop.USER_REJECTED, reverted=outcome.reverted + outcome.kept, kept=0)
    return outcome


def restore_original(run: Run, skill: str, outcome: SkillOutcome, comment: str) -> None:
    """A person's no at the skill's checkpoint taking effect: the original back as the kept version, and its row, as
    one recorded step (the original's SHA-256 proves it on resume)."""
    original = run.editor.original_text(skill)
    draft = RowDraft(run.next_round(skill), Status.REVERT, run.baseline(skill), old=outcome.after,
                     measured=run.ledger.of(skill, original.decode("utf-8")), stop=Stop.USER_REJECTED,
                     text=f"restored the original: {comment}")
    records.recorded_step(run, skill, draft, lambda: run.editor.restore_original(skill), kept_sha256=text_sha(original))


def _order(dim: str) -> int:
    return list(WEIGHTS).index(dim)


def _decisions_table(run: Run, skill: str) -> str:
    """Each decision of this run with its evidence: what decided it, Δ, the bound, the samples and the calls."""
    rows = run.results(skill).rows()
    start = max((i for i, r in enumerate(rows) if r.status == Status.BASELINE), default=0)
    return "\n".join(decision_lines(rows[start:]))


def _key(skill: str) -> str:
    """An artifact key (lowercase ASCII letters, digits, dashes); a hash keeps two non-ASCII names apart."""
    key = "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in skill.lower())
    return key if key == skill else f"{key}-{hashlib.sha256(skill.encode()).hexdigest()[:8]}"


def exploratory_rewrite(run: Run, skill: str, consented: bool = False) -> bool:
    """Phase 2.5: rewrite one bottleneck skill, only with a person's consent, kept only if it beats the saved best.

    Reached when two skills in a row stop in round 1 (🛑 asks first), or when a
    person chose "exploratory rewrite" at a skill's max-rounds checkpoint (that choice is the consent).
    True when the rewrite was kept.
    """
    if not consented:
        answer = run.ask(f"rewrite-{skill}", f"🛑 STOP: two consecutive skills stopped in round 1. Rewrite {skill} "
                         "from scratch (kept only if it beats the saved best)?", default_approve=False)
        if not answer.approved:
            run.effects.notice(f"exploratory rewrite of {skill} proposed, not approved ({answer.answered_by})")
            return False
    current = run.workspace.skill_file(skill).read_text(encoding="utf-8")
    atomic_write(run.run_dir / skill / "best-pre-rewrite.md", current)
    rewritten = run.backend.rewrite(current, skill, measure.skill_files(run, skill))
    if rewritten is None or len(rewritten) > 1.5 * len(current):
        run.effects.notice(f"exploratory rewrite of {skill}: no usable rewrite (kept the saved best)")
        return False
    round_no = run.next_round(skill)
    files = measure.skill_sources(run, skill)  # a rewrite changes SKILL.md alone
    run.editor.pre_edit(skill)
    run.editor.write_skill(skill, rewritten)
    trial = try_edit(run, skill, round_no, Version(current, files), Version(rewritten, files), None)  # as any edit
    facts = {"strategy": "exploratory-rewrite"}
    if trial.outcome is Outcome.KEEP:
        draft = records.trial_draft(trial, round_no, Status.KEEP, dim="rewrite", facts=facts,
                                    text="Phase 2.5 exploratory rewrite beat the saved best")
        records.keep_and_record(run, skill, draft, trial, None, Version(rewritten, files))
        return True
    draft = records.trial_draft(trial, round_no, Status.REVERT if trial.outcome is Outcome.REJECT else Status.SKIP,
                                dim="rewrite", facts=facts,
                                stop=Stop.BUDGET if trial.outcome is Outcome.ABANDON else Stop.REWRITE_NOT_BETTER,
                                text=f"Phase 2.5 rewrite did not beat the saved best: {trial.why}")
    records.recorded_step(run, skill, draft, lambda: run.editor.rollback(skill))  # nothing to reject: a rewrite has no edit
    return False
