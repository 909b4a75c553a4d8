"""A results.tsv row from one typed value: what the round knows of an attempt (``RowDraft``), turned into the row.

Building a row changes no state: the fallbacks it shows are read, and counted as shown only once the row is written
(``flows.ratchet.records.write``), so a row built and not written leaves the ledger as it was.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from judges.backend import Evaluation
from scoring.keep_decision import Decision as KeepDecision
from scoring.keep_decision import Measured
from scoring.notes import format_note
from workspace.results_tsv import ResultRow, Status, Stop, now_stamp

if TYPE_CHECKING:
    from flows.state.run import Run


@dataclass(frozen=True)
class RowDraft:
    """One attempt as its row will say it: the round, what happened, the evaluation and samples behind it, the
    decision's evidence, what it cost, why it stopped, and the note's facts and text."""

    round_no: int
    status: Status
    evaluation: Evaluation | None = None  # the score card the row shows (the candidate's, or the kept one's)
    measured: Measured | None = None  # every sample of the text the row scores: its totals are their means
    before: Measured | None = None  # the kept text's samples it was compared with
    decision: KeepDecision | None = None
    calls: int | None = None
    stop: Stop | None = None
    old: float | None = None  # the total before, when no samples say it
    dim: str = ""
    facts: Mapping[str, Any] = field(default_factory=dict)
    text: str = ""
    edit_pct: float | None = None
    held_out: float | None = None
    diff: str = ""  # the lines an edit changed, for the evidence


@dataclass(frozen=True)
class Drafted:
    """The row, and the fallbacks it shows (counted as shown once it is written)."""

    row: ResultRow
    skill_fallbacks: dict[str, int]
    run_wide_fallbacks: tuple[str, ...]


def row_of(run: Run, skill: str, draft: RowDraft) -> Drafted:
    """The row ``draft`` says: totals are the means of every sample (not one evaluation's), and a decision's evidence —
    samples, Δ, bound, calls — goes into its own columns."""
    facts = dict(draft.facts)
    settings = run.backend.settings
    if settings is not None and settings.same_source:
        facts["same_source"] = "true"
    evaluation = draft.evaluation
    if evaluation is not None:
        facts.update(_unscored_facts(evaluation, skill, run))
        if evaluation.panel is not None and evaluation.panel.unseen:  # what of the skill its judges did not read
            facts["not_shown_to_judges"] = evaluation.panel.unseen
        read = _target_read(evaluation)
        if read:  # which of the skill's files the target's with-skill answers read, and how often
            facts["target_read"] = read
    run_wide = tuple(run.ledger.unshown_run_wide(run.backend.server_facts().get("fallbacks", ())))
    mine = run.ledger.unshown_fallbacks(skill)
    taken = mine | dict.fromkeys(run_wide, 1)
    if taken:  # what this row's measurements fell back on, each counted once in the skill's rows
        facts["fallbacks"] = ", ".join(f"{kind} x{count}" for kind, count in sorted(taken.items()))
    measured, decision = draft.measured, draft.decision
    new = measured.total() if measured is not None and measured.dims else (evaluation.score.total if evaluation else None)
    old = draft.before.total() if draft.before is not None and draft.before.dims else draft.old
    delta = decision.total_delta if decision is not None else (round(new - old, 1) if new is not None and old is not None else None)
    row = ResultRow(
        timestamp=now_stamp(), skill=skill, round=draft.round_no, status=draft.status.value, mode=run.mode,
        commit=run.commit(), old_score=old, new_score=new, dim_changed=draft.dim, delta=delta,
        note=format_note(facts, draft.text), eval_mode=evaluation.eval_mode if evaluation else "",
        judge_count=evaluation.judge_count if evaluation else None, edit_pct=draft.edit_pct,
        scores=_scores(evaluation, measured), held_out_score=draft.held_out, stop=draft.stop.value if draft.stop else "",
        samples=decision.samples() if decision else "", bound=decision.bound if decision else None,
        llm_calls=draft.calls, evidence=_evidence(decision, run, draft.diff),
    )
    return Drafted(row, mine, run_wide)


def _scores(evaluation: Evaluation | None, measured: Measured | None) -> dict[str, float | None] | None:
    """Each dimension's mean over the text's samples (None where nothing could be scored)."""
    if evaluation is None and measured is None:
        return None
    out: dict[str, float | None] = {d.dim: d.score for d in evaluation.score.dims} if evaluation else {}
    if measured is not None:
        out.update(measured.means())
    return out


def _evidence(decision: KeepDecision | None, run: Run, diff: str = "") -> dict[str, Any] | None:
    """The decision per dimension, with the judge noise it was read against, which judge model that is, and the
    lines the edit changed."""
    if decision is None:
        return None
    settings = run.backend.settings
    out = decision.to_json() | {"judge_model": settings.judge_model if settings else "offline (exact heuristics)"}
    return out | {"diff": diff} if diff else out


def _target_read(evaluation: Evaluation) -> str:
    """The skill's files the with-skill answers of ``evaluation`` read, each with how many answers read it."""
    pairs = evaluation.measurement.pairs if evaluation.measurement is not None else ()
    counted = Counter(path for pair in pairs for path in dict.fromkeys(pair.files_read))
    return ", ".join(f"{path} x{count}" for path, count in sorted(counted.items()))


def _unscored_facts(evaluation: Evaluation, skill: str, run: Run) -> dict[str, str]:
    """Dimensions that could not be scored, named in the row with the first reason, and said in the log:
    the total of such a row covers only the scored dimensions."""
    missing = [d for d in evaluation.score.dims if d.score is None]
    if not missing:
        return {}
    reason = (missing[0].reasons[0] if missing[0].reasons else "no reason given")[:160]
    run.effects.warn("%s: %s unscored (%s); the total covers the scored dimensions only", skill,
                     ", ".join(d.dim for d in missing), reason)
    return {"unscored": ",".join(d.dim for d in missing), "unscored_reason": reason}
