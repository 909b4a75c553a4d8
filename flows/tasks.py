"""Prefect tasks: each a small typed step with a name a person recognises in the UI.

Only the IO step that can fail transiently (appending a results row) retries.
Evaluation — the expensive, LLM-bound step — is cached on its inputs minus the
backend object (``backend_id`` stands in for it: backend, models, server), so a
flow re-run after a suspend or a crash does not pay for the same judging twice.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import INPUTS, NO_CACHE, TASK_SOURCE

from judges.backend import Backend, Evaluation, ProposalRequest
from judges.proposer import Proposal, propose_checked
from workspace.results_tsv import Repair, ResultRow, ResultsFile
from workspace.test_prompts import TestPrompt


# ``files`` is a sorted tuple, not a set: a set's order follows the process's string hashing, which
# would give the same inputs a different cache key in the process that re-runs a resumed flow.
@task(name="evaluate", cache_policy=(INPUTS + TASK_SOURCE) - "backend", persist_result=True)
def evaluate(backend: Backend, backend_id: str, text: str, skill: str, files: tuple[str, ...], mode: str,
             prompts: list[TestPrompt], ever_reverted: bool = False) -> Evaluation:
    return backend.evaluate(text, skill, frozenset(files), mode, prompts, ever_reverted)  # type: ignore[arg-type]


@task(name="propose-edit", cache_policy=NO_CACHE)
def propose(backend: Backend, requests: list[ProposalRequest]) -> Proposal | None:
    """The first checked edit, trying each dimension's request in turn (None: no dimension has one).

    An unreachable editor ends the search with its failed proposal: every other dimension would ask the same server.
    """
    for request in requests:
        proposal = propose_checked(backend, request)
        if proposal.edit is not None or proposal.unavailable:
            return proposal
    return None


@task(name="design-test-prompts", cache_policy=NO_CACHE)
def design_prompts(backend: Backend, text: str, skill: str) -> tuple[list[TestPrompt], str]:
    return backend.design_prompts(text, skill)


@task(name="held-out-test", cache_policy=NO_CACHE)
def held_out(backend: Backend, text: str, skill: str, files: frozenset[str], prompts: list[TestPrompt]) -> float | None:
    return backend.held_out(text, skill, files, prompts)


@task(name="record-results-row", retries=2, retry_delay_seconds=0.2, cache_policy=NO_CACHE)
def append_row(results_tsv: Path, row: ResultRow) -> Repair | None:
    return ResultsFile(results_tsv).append(row)


def record_row(run, skill: str, round_no: int, status: str, evaluation: Evaluation | None, **fields) -> ResultRow:
    """Build the row here and give the task only the path and the row.

    Prefect walks every task parameter (looking for futures to link); handed
    the whole run, that walk cost ~50 ms a row (benchmarks/loop_overhead.py).
    """
    row = run.result_row(skill, round_no, status, evaluation, **fields)
    run.repaired(skill, append_row(run.workspace.results_tsv(skill), row))
    return row
