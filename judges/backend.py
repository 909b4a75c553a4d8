"""The judges' one interface for the flows: evaluate, design prompts, propose an edit, measure held-out.

This module is the contract (``Backend`` and the values it returns). The two backends keep to it:
``judges/online_backend.py`` (the openai client, any OpenAI-compatible server) and ``judges/offline_backend.py``
(heuristics whose every score says so); ``judges/backend_factory.py`` picks one from the settings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from judges import fallbacks
from judges.performance import (
    Measurement,
)
from judges.review import Review
from judges.settings import Settings
from judges.structure_judge import Panel, Verdict
from judges.usage import Usage
from scoring.document import decode, normalize_text
from scoring.edits import SKILL_FILE, Edit
from scoring.model import DimensionScore, SkillScore
from scoring.rubric import Mode
from scoring.skill_view import SourceFile
from workspace.test_prompts import TestPrompt

FULL_JUDGES = 2  # structure-judge calls in a full-mode evaluation (quick mode: one)


def readings(mode: str, judges: int = 0, dim8: bool = True, evaluation: bool = False) -> int:
    """Null variants a measurement reads: one per judge call, one for dim8 (or its dry run)."""
    calls = (FULL_JUDGES if mode == "full" else 1) if evaluation else judges
    return calls + int(dim8)


@dataclass(frozen=True)
class Evaluation:
    """A full score card plus what the flow must act on (disagreements, vetoes, blocking reviews)."""

    score: SkillScore
    eval_mode: str
    judge_count: int
    disagreements: tuple[str, ...] = ()
    safety_veto: bool = False
    review_blocking: bool = False
    orthogonality: Verdict | None = None
    panel: Panel | None = None
    measurement: Measurement | None = None
    review: Review | None = None

    @property
    def fallbacks(self) -> tuple[str, ...]:
        """What this evaluation fell back on (judges unscored, grades unread, answers cut): counted by the run."""
        return tuple(fallbacks.of_verdicts(self._verdicts()) + fallbacks.of_measurement(self.measurement)
                     + fallbacks.of_review(self.review))

    def void_replies(self) -> list[dict[str, str]]:
        return fallbacks.void_replies(self._verdicts(), self.measurement.pairs if self.measurement else (), self.review)

    def _verdicts(self) -> tuple[Verdict, ...]:
        return (self.panel.verdicts if self.panel else ()) + ((self.orthogonality,) if self.orthogonality else ())


@dataclass(frozen=True)
class Resample:
    """More measurements of one text, for the keep decision: judge calls and, optionally, dim8 again."""

    verdicts: tuple[Verdict, ...] = ()
    dim8: DimensionScore | None = None
    measurement: Measurement | None = None

    @property
    def fallbacks(self) -> tuple[str, ...]:
        return tuple(fallbacks.of_verdicts(self.verdicts) + fallbacks.of_measurement(self.measurement))

    def void_replies(self) -> list[dict[str, str]]:
        return fallbacks.void_replies(self.verdicts, self.measurement.pairs if self.measurement else ())


@dataclass(frozen=True)
class ProposalRequest:
    text: str
    skill_name: str
    files: frozenset[str]
    target_dim: str
    rationales: tuple[str, ...] = ()
    active_rejections: tuple[str, ...] = ()  # short descriptions of rejected edits, for the prompt
    meta_hints: tuple[str, ...] = ()
    is_rejected: Callable[[str, str, str], bool] = field(default=lambda old, new, file: False, compare=False)
    budget: float = 0.10
    allow_rename: bool = False  # a person's opt-in: the frontmatter name may change
    # the lines an edit inserts (normalized) -> the other skill that already received them or nearly the same lines
    # in the run, and how alike ("" when none): boilerplate is refused
    inserted_elsewhere: Callable[[tuple[str, ...]], str] = field(default=lambda units: "", compare=False)
    # the Markdown files SKILL.md references that an edit may change instead, (path in the skill, text); none in quick
    # mode, whose snapshot ratchet keeps SKILL.md alone
    references: tuple[tuple[str, str], ...] = ()

    def text_of(self, file: str) -> str | None:
        """The text an edit of ``file`` applies to: SKILL.md's, a referenced file's, or None (not a file it may change)."""
        return self.text if file == SKILL_FILE else dict(self.references).get(file)


class BackendKind(StrEnum):
    OFFLINE = "offline"  # deterministic heuristics: exact, free, no model asked
    OPENAI = "openai"  # any OpenAI-compatible server, through the openai client


class Backend(Protocol):
    kind: BackendKind
    usage: Usage | None

    @property
    def settings(self) -> Settings | None:
        """The model settings as resolved (None offline: no model is asked)."""

    @property
    def exact(self) -> bool:
        """Whether the same text always gets the same scores (offline heuristics): nothing to resample."""

    def server_facts(self) -> dict[str, Any]: ...

    def evaluate(self, text: str, skill_name: str, files: frozenset[str], mode: Mode, prompts: list[TestPrompt],
                 ever_reverted: bool = False, last_dim10_raw: float | None = None, diff: str = "",
                 first_reading: int = 0, sources: tuple[SourceFile, ...] = ()) -> Evaluation: ...

    def resample(self, text: str, skill_name: str, files: frozenset[str], mode: Mode, prompts: list[TestPrompt],
                 judges: int, dim8: bool, first_reading: int = 0, sources: tuple[SourceFile, ...] = ()) -> Resample: ...

    def design_prompts(self, text: str, skill_name: str) -> tuple[list[TestPrompt], str]: ...

    def candidates(self, request: ProposalRequest, feedback: str | None) -> list[Edit]: ...

    def held_out(self, text: str, skill_name: str, files: frozenset[str], prompts: list[TestPrompt],
                 first_reading: int = 0, sources: tuple[SourceFile, ...] = ()) -> float | None: ...

    def rewrite(self, text: str, skill_name: str, files: frozenset[str]) -> str | None: ...


def as_text(data: str | bytes) -> str:
    """A skill as text: a str normalized, bytes decoded as `luban score` decodes them."""
    return normalize_text(data) if isinstance(data, str) else decode(data)
