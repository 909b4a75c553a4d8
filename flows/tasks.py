"""Prefect tasks: each a small typed step with a name a person recognises in the UI.

Only the IO step that can fail transiently (appending a results row) retries.
The measurements — the expensive, LLM-bound steps — are cached under the key
``flows.measure.measurement_key`` computes (text, files, prompts, settings,
code version, root flow run, sample index): a suspended run executed again
gets its own answers back, and nothing else ever shares them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from flows.trial import Trial
from judges.backend import Backend, Evaluation, ProposalRequest, Resample
from judges.proposer import Proposal, propose_checked
from workspace.results_tsv import Repair, ResultRow, ResultsFile, Status
from workspace.test_prompts import TestPrompt


def _given_key(context: Any, parameters: dict[str, Any]) -> str:
    return str(parameters["key"])


@task(name="evaluate", cache_key_fn=_given_key, persist_result=True)
def evaluate(backend: Backend, key: str, text: str, skill: str, files: tuple[str, ...], mode: str,
             prompts: list[TestPrompt], ever_reverted: bool = False, diff: str = "", first_reading: int = 0) -> Evaluation:
    return backend.evaluate(text, skill, frozenset(files), mode, prompts, ever_reverted, diff=diff,  # type: ignore[arg-type]
                            first_reading=first_reading)


@task(name="measure-again", cache_key_fn=_given_key, persist_result=True)
def resample(backend: Backend, key: str, text: str, skill: str, files: tuple[str, ...], mode: str,
             prompts: list[TestPrompt], judges: int, dim8: bool, first_reading: int = 0) -> Resample:
    return backend.resample(text, skill, frozenset(files), mode, prompts, judges, dim8, first_reading)  # type: ignore[arg-type]


@task(name="propose-edit", cache_policy=NO_CACHE)
def propose(backend: Backend, requests: list[ProposalRequest]) -> Proposal | None:
    """The first checked edit, trying each dimension's request in turn; when none has one, a proposal without an edit
    that says why (each refusal: a guard, the budget, a repeat), or None when no dimension was asked at all.

    An unreachable editor ends the search with its failed proposal: every other dimension would ask the same server.
    """
    refusals: list[str] = []
    attempts = 0
    for request in requests:
        if backend.name != "offline" and attempts >= MAX_EDITOR_CALLS:
            refusals.append(f"stopped after {attempts} editor calls without an edit that passes its checks")
            break
        proposal = propose_checked(backend, request)
        if proposal.edit is not None or proposal.unavailable:
            return proposal
        attempts += proposal.attempts
        refusals += [f"{request.target_dim}: {r}" for r in proposal.refusals]
    return Proposal(None, None, attempts, tuple(refusals)) if requests else None


# Editor calls one round may spend looking for an edit that passes its checks, over every dimension it tries: an
# editor that has failed this often on one text (a small model that cannot quote the skill exactly, say) is not
# going to find one by being asked about more dimensions, and each call costs a reply of up to its cap.
MAX_EDITOR_CALLS = 6


@task(name="design-test-prompts", cache_policy=NO_CACHE)
def design_prompts(backend: Backend, text: str, skill: str) -> tuple[list[TestPrompt], str]:
    return backend.design_prompts(text, skill)


@task(name="held-out-test", cache_key_fn=_given_key, persist_result=True)
def held_out(backend: Backend, key: str, text: str, skill: str, files: frozenset[str], prompts: list[TestPrompt],
             first_reading: int = 0) -> float | None:
    return backend.held_out(text, skill, files, prompts, first_reading)


@task(name="record-results-row", retries=2, retry_delay_seconds=0.2, cache_policy=NO_CACHE)
def append_row(results_tsv: Path, row: ResultRow) -> Repair | None:
    return ResultsFile(results_tsv).append(row)


def record_row(run, skill: str, round_no: int, status: Status, source: Trial | Evaluation | None = None, **fields) -> ResultRow:
    """Build the row here and give the task only the path and the row.

    Prefect walks every task parameter (looking for futures to link); handed
    the whole run, that walk cost ~50 ms a row (benchmarks/loop_overhead.py).
    A ``Trial`` brings its decision's evidence: both texts' samples, the
    decision, the calls it cost and the stop it means.
    """
    row = build_row(run, skill, round_no, status, source, **fields)
    run.repaired(skill, append_row(run.workspace.results_tsv(skill), row))
    return row


def build_row(run, skill: str, round_no: int, status: Status, source: Trial | Evaluation | None = None, **fields) -> ResultRow:
    if isinstance(source, Trial):
        fields = {"measured": source.candidate, "before": source.incumbent, "decision": source.decision,
                  "calls": source.calls, "stop": source.stop, "diff": source.diff} | fields
        source = source.evaluation
    return run.result_row(skill, round_no, status, source, **fields)


def keep_and_record(run, skill: str, round_no: int, trial: Trial, edit: dict[str, Any] | None, **fields) -> ResultRow:
    """Keep the edit in place and write its row, as one step a kill cannot split (``recorded_step``)."""
    from workspace.pending_keep import text_sha

    row = build_row(run, skill, round_no, Status.KEEP, trial, **fields)
    return recorded_step(run, skill, row, lambda: run.editor.keep(skill, trial.gain, fields.get("dim", ""), edit),
                         kept_sha256=text_sha(run.workspace.skill_file(skill).read_bytes()))


def recorded_step(run, skill: str, row: ResultRow, effect: Callable[[], object], kept_sha256: str = "",
                  rejected_sha256: str = "") -> ResultRow:
    """A decision's effect and its row as one step a kill cannot split: the row is saved as pending with what proves
    the effect happened (the text kept, or the edit rejected), then the effect, then the row with the commit the
    effect made; a resume completes or drops the pending row from that proof (``workspace.pending_keep``)."""
    from dataclasses import replace

    from workspace.pending_keep import PendingKeep, clear

    tsv = run.workspace.results_tsv(skill)
    PendingKeep(row, kept_sha256, rejected_sha256).save(tsv)
    effect()
    row = replace(row, commit=run.commit())
    run.repaired(skill, append_row(tsv, row))
    clear(tsv)
    return row
