"""One edit on trial: measure the candidate and the incumbent until the keep decision is made, then say what to do.

``try_edit`` writes nothing but the candidate file and asks no one but the
judges (and, when the judges disagree by more than three points, the person
at the checkpoint). What happens to the edit is the ``Trial`` it returns —
``flows.ratchet.loop.apply`` carries it out, in one place.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, replace
from enum import StrEnum

from flows.ratchet import measure
from flows.ratchet.measure import Version
from flows.state.run import Run
from judges.backend import Evaluation
from judges.usage import BudgetExhausted
from scoring.edits import SKILL_FILE
from scoring.keep_decision import Decision, Measured, Verdict, decide, next_samples
from workspace.rejected_edits import RejectReason
from workspace.results_tsv import Stop


class Outcome(StrEnum):
    KEEP = "keep"
    REJECT = "reject"  # rolled back and remembered in rejected_edits.md
    ABANDON = "abandon"  # rolled back unjudged (the LLM budget ran out): nothing to remember


@dataclass(frozen=True)
class Trial:
    outcome: Outcome
    decision: Decision | None = None
    evaluation: Evaluation | None = None  # the candidate's full evaluation
    incumbent: Measured = field(default_factory=Measured)
    candidate: Measured = field(default_factory=Measured)
    reason: RejectReason | None = None
    stop: Stop | None = None  # the skill's loop ends with this round
    freeze: bool = False
    why: str = ""
    calls: int = 0
    diff: str = ""  # the lines the edit changed, as a unified diff: what a reviewer judges

    @property
    def kept(self) -> bool:
        return self.outcome is Outcome.KEEP

    @property
    def gain(self) -> float:
        return self.decision.total_delta or 0.0 if self.decision else 0.0


def settle(decision: Decision) -> tuple[Outcome, RejectReason | None, Stop | None]:
    """The keep decision as what the ratchet does: only a confident non-improvement ends the skill."""
    if decision.verdict is Verdict.KEEP:
        return Outcome.KEEP, None, None
    if decision.verdict is Verdict.REVERT:
        return Outcome.REJECT, RejectReason.SCORE_REGRESSION, Stop.BOTTLENECK
    return Outcome.REJECT, RejectReason.INCONCLUSIVE, None  # INCONCLUSIVE (or MORE with nothing left to measure)


def try_edit(run: Run, skill: str, round_no: int, before: Version, after: Version, target: str | None,
             ever_reverted: bool = False, writes_words: bool = True, file: str = SKILL_FILE) -> Trial:
    """Measure ``after`` against ``before`` (the kept version) until the decision is made; the gates come first.

    ``writes_words``: the edit adds words, so its keyword-counting gains need a judged gain beside them; ``file``: the
    file the edit changed (what the review gate's diff shows)."""
    calls = measure.CallCounter(run)
    diff = unified_diff(skill, before.file_text(file), after.file_text(file), file)
    try:
        evaluation_ahead = measure.evaluate_ahead(run, skill, after.text, ever_reverted, diff, after.sources)
        fresh = measure.resample_ahead(run, skill, before.text, run.policy.judges_per_step,  # re-measured, every round
                                       measure.dim8_gone(run, skill, before), before.sources)
        evaluation = measure.recorded(run, evaluation_ahead)
        if fresh is not None:
            measure.recorded(run, fresh)
        gate = gates(run, skill, round_no, evaluation)
        if gate is not None:
            return _with(gate, evaluation=evaluation, calls=calls.spent(), diff=diff)
        min_looks = 2 if evaluation.disagreements else 1  # the person (if any) chose to go on: measure more first
        decision = _sequential(run, skill, before, after, target, min_looks, writes_words)
    except BudgetExhausted as err:
        return Trial(Outcome.ABANDON, stop=Stop.BUDGET, why=f"LLM budget reached before this edit could be decided: {err}",
                     calls=calls.spent(), diff=diff)
    outcome, reason, stop = settle(decision)
    return Trial(outcome, decision, evaluation, before.comparable(run, skill), after.samples(run, skill), reason, stop,
                 why=decision.reason, calls=calls.spent(), diff=diff)


def unified_diff(skill: str, before: str, after: str, file: str = SKILL_FILE) -> str:
    """The edit as a reviewer reads it: the changed lines of the file with one line of context."""
    lines = difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"{skill}/{file} (kept)",
                                 f"{skill}/{file} (edited)", n=1)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _sequential(run: Run, skill: str, before: Version, after: Version, target: str | None, min_looks: int,
                writes_words: bool) -> Decision:
    """decide → measure what it asks for → decide again, up to the policy's cap."""
    incumbent, candidate = before.comparable(run, skill), after.samples(run, skill)
    for look in range(1, run.policy.max_looks + 1):
        decision = decide(incumbent, candidate, measure.noise(run), target, look, run.policy, min_looks, writes_words)
        plan = next_samples(decision, incumbent, candidate, run.policy)
        if decision.verdict is not Verdict.MORE:
            return decision
        if plan.empty:  # undecided, and nothing left that more measuring could settle
            return decide(incumbent, candidate, measure.noise(run), target, run.policy.max_looks, run.policy,
                          writes_words=writes_words)
        incumbent, candidate = measure.measure_both(run, skill, before, after, plan)
    return decision


def gates(run: Run, skill: str, round_no: int, evaluation: Evaluation) -> Trial | None:
    """What no amount of measuring changes: a Safety red line, a blocking review, a person's no to a disagreement."""
    if evaluation.safety_veto:
        return Trial(Outcome.REJECT, reason=RejectReason.SAFETY_FROZEN, stop=Stop.SAFETY_VETO, freeze=True,
                     why="a Safety red line was hit")
    if evaluation.review_blocking:
        return Trial(Outcome.REJECT, reason=RejectReason.SCORE_REGRESSION, stop=Stop.REVIEW_BLOCKED,
                     why="the review gate has an open P0 (or three open P1)")
    if evaluation.disagreements:
        gap = ", ".join(evaluation.disagreements)
        answer = run.ask(f"judges-{skill}", f"{skill} round {round_no}: the judges disagree by more than 3 points on "
                         f"{gap}. Measure this edit further (more judge calls) before deciding?", default_approve=True)
        if not answer.approved:
            return Trial(Outcome.REJECT, reason=RejectReason.USER_MANUAL, stop=Stop.DISAGREEMENT,
                         why=f"judges disagree on {gap}; {answer.answered_by}: {answer.comment or 'not kept'}")
    return None


def _with(trial: Trial, **changes) -> Trial:
    return replace(trial, **changes)
