"""Prefect tasks: each a small typed step with a name a person recognises in the UI.

Only the IO step that can fail transiently (appending a results row) retries.
The measurements — the expensive, LLM-bound steps — are cached under the key
``flows.ratchet.measure.measurement_key`` computes (text, files, prompts, settings,
code version, root flow run, sample index): a suspended run executed again
gets its own answers back, and nothing else ever shares them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from judges.backend import Backend, Evaluation, ProposalRequest, Resample
from judges.proposer import Proposal, ProposalRefusal, RefusalKind, propose_checked
from scoring.skill_view import SourceFile
from workspace.layout import Mode
from workspace.results_tsv import Repair, ResultRow, ResultsFile
from workspace.test_prompts import TestPrompt


def _given_key(context: Any, parameters: dict[str, Any]) -> str:
    return str(parameters["key"])


@task(name="evaluate", cache_key_fn=_given_key, persist_result=True)
def evaluate(backend: Backend, key: str, text: str, skill: str, files: tuple[str, ...], mode: Mode,
             prompts: list[TestPrompt], ever_reverted: bool = False, diff: str = "", first_reading: int = 0,
             sources: tuple[SourceFile, ...] = ()) -> Evaluation:
    return backend.evaluate(text, skill, frozenset(files), mode, prompts, ever_reverted, diff=diff, first_reading=first_reading,
                            sources=sources)


@task(name="measure-again", cache_key_fn=_given_key, persist_result=True)
def resample(backend: Backend, key: str, text: str, skill: str, files: tuple[str, ...], mode: Mode,
             prompts: list[TestPrompt], judges: int, dim8: bool, first_reading: int = 0,
             sources: tuple[SourceFile, ...] = ()) -> Resample:
    return backend.resample(text, skill, frozenset(files), mode, prompts, judges, dim8, first_reading, sources)


@task(name="propose-edit", cache_policy=NO_CACHE)
def propose(backend: Backend, requests: list[ProposalRequest]) -> Proposal | None:
    """The first checked edit, trying each dimension's request in turn; when none has one, a proposal without an edit
    that says why (each refusal: a guard, the budget, a repeat), or None when no dimension was asked at all.

    An unreachable editor ends the search with its failed proposal: every other dimension would ask the same server.
    """
    refusals: list[ProposalRefusal] = []
    attempts = 0
    for request in requests:
        if not backend.exact and attempts >= MAX_EDITOR_CALLS:
            refusals.append(ProposalRefusal(RefusalKind.GAVE_UP,
                                            f"stopped after {attempts} editor calls without an edit that passes its checks"))
            break
        proposal = propose_checked(backend, request)
        if proposal.edit is not None or proposal.unavailable:
            return proposal
        attempts += proposal.attempts
        refusals += [r.for_dim(request.target_dim) for r in proposal.refusals]
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
             first_reading: int = 0, sources: tuple[SourceFile, ...] = ()) -> float | None:
    return backend.held_out(text, skill, files, prompts, first_reading, sources)


@task(name="record-results-row", retries=2, retry_delay_seconds=0.2, cache_policy=NO_CACHE)
def append_row(results_tsv: Path, row: ResultRow) -> Repair | None:
    return ResultsFile(results_tsv).append(row)
