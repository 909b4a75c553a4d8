"""How a run asks its backend: measurements and proposals behind one small object the round is given, as effects are.

The flows give ``flows.ratchet.tasks.PrefectMeasurements``: each measurement a Prefect task run in the background and
cached under its key (``flows.ratchet.measure.measurement_key``), so a suspended run executed again gets its own
answers back. ``DirectMeasurements`` asks the backend itself, at once, with no Prefect and no cache — so a round runs,
and is tested, on its own. Either way a measurement returns its value; adding its samples to the ledger is the
round's own step (``flows.ratchet.measure.recorded``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from judges.backend import Backend, Evaluation, ProposalRequest, Resample
from judges.proposer import Proposal, first_checked_edit
from scoring.skill_view import SourceFile
from workspace.layout import Mode
from workspace.test_prompts import TestPrompt

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Pending(Protocol[T_co]):
    """A measurement or proposal under way (a Prefect future is one): ``result`` waits for it."""

    def result(self) -> T_co: ...


@dataclass(frozen=True)
class Done(Generic[T]):
    """One already made."""

    value: T

    def result(self) -> T:
        return self.value


class Measurements(Protocol):
    """What the round asks of the backend. ``key`` names the measurement (the cache key; see the module's note)."""

    def evaluate(self, backend: Backend, key: str, text: str, skill: str, files: tuple[str, ...], mode: Mode,
                 prompts: list[TestPrompt], ever_reverted: bool, diff: str, first_reading: int,
                 sources: tuple[SourceFile, ...]) -> Pending[Evaluation]:
        """A full evaluation: the score card, the gates, dim8."""

    def resample(self, backend: Backend, key: str, text: str, skill: str, files: tuple[str, ...], mode: Mode,
                 prompts: list[TestPrompt], judges: int, dim8: bool, first_reading: int,
                 sources: tuple[SourceFile, ...]) -> Pending[Resample]:
        """More judge calls, and dim8 once more when asked."""

    def held_out(self, backend: Backend, key: str, text: str, skill: str, files: frozenset[str],
                 prompts: list[TestPrompt], first_reading: int, sources: tuple[SourceFile, ...]) -> Pending[float | None]:
        """One held-out grade."""

    def propose(self, backend: Backend, requests: list[ProposalRequest]) -> Pending[Proposal | None]:
        """The first checked edit over the dimensions' requests (``judges.proposer.first_checked_edit``)."""


class DirectMeasurements:
    """The backend asked at once, in the caller's thread; nothing is cached, so ``key`` is not read."""

    def evaluate(self, backend: Backend, key: str, text: str, skill: str, files: tuple[str, ...], mode: Mode,
                 prompts: list[TestPrompt], ever_reverted: bool, diff: str, first_reading: int,
                 sources: tuple[SourceFile, ...]) -> Pending[Evaluation]:
        return Done(backend.evaluate(text, skill, frozenset(files), mode, prompts, ever_reverted, diff=diff,
                                     first_reading=first_reading, sources=sources))

    def resample(self, backend: Backend, key: str, text: str, skill: str, files: tuple[str, ...], mode: Mode,
                 prompts: list[TestPrompt], judges: int, dim8: bool, first_reading: int,
                 sources: tuple[SourceFile, ...]) -> Pending[Resample]:
        return Done(backend.resample(text, skill, frozenset(files), mode, prompts, judges, dim8, first_reading, sources))

    def held_out(self, backend: Backend, key: str, text: str, skill: str, files: frozenset[str],
                 prompts: list[TestPrompt], first_reading: int, sources: tuple[SourceFile, ...]) -> Pending[float | None]:
        return Done(backend.held_out(text, skill, files, prompts, first_reading, sources))

    def propose(self, backend: Backend, requests: list[ProposalRequest]) -> Pending[Proposal | None]:
        return Done(first_checked_edit(backend, requests))
