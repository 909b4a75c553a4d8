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

from flows.state.measurements import Pending
from judges.backend import Backend, Evaluation, ProposalRequest, Resample
from judges.proposer import Proposal, first_checked_edit
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
    """``judges.proposer.first_checked_edit``: never cached, since a proposal depends on the rejected edits so far."""
    return first_checked_edit(backend, requests)


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


class PrefectMeasurements:
    """``flows.state.measurements.Measurements`` as Prefect tasks: each one submitted (it runs in the background, a
    task run a person sees in the UI), and every measurement cached under its key."""

    def evaluate(self, backend: Backend, key: str, text: str, skill: str, files: tuple[str, ...], mode: Mode,
                 prompts: list[TestPrompt], ever_reverted: bool, diff: str, first_reading: int,
                 sources: tuple[SourceFile, ...]) -> Pending[Evaluation]:
        return evaluate.submit(backend, key, text, skill, files, mode, prompts, ever_reverted, diff, first_reading, sources)

    def resample(self, backend: Backend, key: str, text: str, skill: str, files: tuple[str, ...], mode: Mode,
                 prompts: list[TestPrompt], judges: int, dim8: bool, first_reading: int,
                 sources: tuple[SourceFile, ...]) -> Pending[Resample]:
        return resample.submit(backend, key, text, skill, files, mode, prompts, judges, dim8, first_reading, sources)

    def held_out(self, backend: Backend, key: str, text: str, skill: str, files: frozenset[str],
                 prompts: list[TestPrompt], first_reading: int, sources: tuple[SourceFile, ...]) -> Pending[float | None]:
        return held_out.submit(backend, key, text, skill, files, prompts, first_reading, sources)

    def propose(self, backend: Backend, requests: list[ProposalRequest]) -> Pending[Proposal | None]:
        return propose.submit(backend, requests)
