"""The judges' one interface for the flows: evaluate, design prompts, propose an edit, measure held-out.

``make_backend(settings, cache_dir)`` returns the online backend (judges/online_backend.py: the openai
client, any OpenAI-compatible server) or, with no key and no base URL, the
offline one, whose every score says it is a heuristic.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from judges import fallbacks
from judges.llm import LLMClient
from judges.offline import heuristic_dim8, heuristic_structure, runtime_bound
from judges.performance import (
    Measurement,
)
from judges.prompt_design import offline_prompts
from judges.review import Review
from judges.server import ServerFacts
from judges.settings import Settings
from judges.structure_judge import Panel, Verdict
from judges.usage import Usage
from scoring.document import decode, normalize_text, parse
from scoring.edits import SKILL_FILE, Edit
from scoring.model import DimensionScore, SkillScore
from scoring.rubric import Mode, score_document
from scoring.skill_view import SourceFile
from scoring.validation import scan_references
from workspace.baseline_cache import BaselineCache
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


class OfflineBackend:
    """Deterministic stand-ins: heuristic judges, ``fallback_dry`` dim8, and the strategy-library proposer."""

    kind = BackendKind.OFFLINE
    settings = None
    usage: Usage | None = None
    exact = True  # the heuristics read the text itself: the same text, the same scores

    def server_facts(self) -> dict[str, Any]:
        return {"backend": "offline"}

    def evaluate(self, text, skill_name, files, mode, prompts, ever_reverted=False, last_dim10_raw=None, diff="",
                 first_reading=0, sources=()) -> Evaluation:
        """The heuristics read the text itself: they are exact, so a null variant would only be the same reading;
        they read SKILL.md only (``sources`` are for judges that read)."""
        doc = parse(as_text(text))
        refs = tuple(scan_references(doc, files))
        structure = heuristic_structure(doc, refs, runtime_bound(doc, skill_name))
        base = score_document(doc, skill_name, files, mode=mode, llm_dims=structure)
        dims = dict(structure, dim8=heuristic_dim8(doc, structure, base.dim("dim1").score or 0))
        dim10 = None if mode == "quick" else DimensionScore("dim10", 10, "formula", ("offline: no review gate ran, dim10 = 10",))
        score = score_document(doc, skill_name, files, mode=mode, llm_dims=dims, dim10=dim10)
        return Evaluation(score, "fallback_dry", 0)

    def resample(self, text, skill_name, files, mode, prompts, judges, dim8, first_reading=0, sources=()) -> Resample:
        """Nothing to add: the heuristics give the same text the same scores, so they are exact (never resampled)."""
        return Resample()

    def design_prompts(self, text, skill_name):
        return offline_prompts(parse(as_text(text)), skill_name), "offline design (description trigger phrases and headings)"

    def candidates(self, request: ProposalRequest, feedback: str | None) -> list[Edit]:
        from judges.offline_proposer import verified_candidates

        return verified_candidates(self, request)

    def rewrite(self, text: str, skill_name: str, files: frozenset[str]) -> str | None:
        from judges.offline_proposer import offline_rewrite

        return offline_rewrite(self, as_text(text), skill_name, files)

    def held_out(self, text, skill_name, files, prompts, first_reading=0, sources=()) -> float | None:
        """Offline there is no model to run: the held-out proxy is the heuristic workflow quality."""
        if not any(p.held_out for p in prompts):
            return None
        doc = parse(as_text(text))
        structure = heuristic_structure(doc, tuple(scan_references(doc, files)))
        return round(sum(structure[d].score or 0 for d in ("dim2", "dim3", "dim5")) / 3, 2)


def make_backend(settings: Settings, cache_dir: Path, usage: Usage | None = None,
                 gate: Callable[[], AbstractContextManager[object]] | None = None, facts: ServerFacts | None = None) -> Backend:
    """The offline stand-ins, or the model behind ``settings``; ``usage``, ``gate`` and ``facts`` as ``LLMClient``
    takes them."""
    if settings.backend == "offline":
        return OfflineBackend()
    from judges.online_backend import OnlineBackend

    return OnlineBackend(settings, BaselineCache(cache_dir), LLMClient(settings, usage, gate, facts))
