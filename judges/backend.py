"""The judges' one interface for the flows: evaluate, design prompts, propose an edit, measure held-out.

``make_backend(settings, cache_dir)`` returns the online backend (the openai
client, any OpenAI-compatible server) or, with no key and no base URL, the
offline one, whose every score says it is a heuristic.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from judges import fallbacks
from judges.llm import LLMClient, Usage
from judges.offline import heuristic_dim8, heuristic_structure, runtime_bound
from judges.performance import (
    Measurement,
    full_measurement,
    held_out_score,
    main_prompts,
    measure_dry_run,
    measure_pair,
    measure_pairs,
    skill_context,
)
from judges.prompt_design import design_prompts, offline_prompts
from judges.review import Review, needs_review, run_review
from judges.server import ServerFacts
from judges.settings import Settings
from judges.structure_judge import Panel, Verdict, combine, judge_once
from scoring.document import decode, normalize_text, parse
from scoring.edits import Edit
from scoring.model import DimensionScore, SkillScore
from scoring.null_variants import null_variant
from scoring.rubric import Mode, score_document
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
    is_rejected: Callable[[str, str], bool] = field(default=lambda old, new: False, compare=False)
    budget: float = 0.10
    allow_rename: bool = False  # a person's opt-in: the frontmatter name may change
    # the lines an edit inserts (normalized) -> the other skill that already received them or nearly the same lines
    # in the run, and how alike ("" when none): boilerplate is refused
    inserted_elsewhere: Callable[[tuple[str, ...]], str] = field(default=lambda units: "", compare=False)


class Backend(Protocol):
    name: str
    usage: Usage | None

    def server_facts(self) -> dict[str, Any]: ...

    def evaluate(self, text: str, skill_name: str, files: frozenset[str], mode: Mode, prompts: list[TestPrompt],
                 ever_reverted: bool = False, last_dim10_raw: float | None = None, diff: str = "",
                 first_reading: int = 0) -> Evaluation: ...

    def resample(self, text: str, skill_name: str, files: frozenset[str], mode: Mode, prompts: list[TestPrompt],
                 judges: int, dim8: bool, first_reading: int = 0) -> Resample: ...

    def design_prompts(self, text: str, skill_name: str) -> tuple[list[TestPrompt], str]: ...

    def candidates(self, request: ProposalRequest, feedback: str | None) -> list[Edit]: ...

    def held_out(self, text: str, skill_name: str, files: frozenset[str], prompts: list[TestPrompt],
                 first_reading: int = 0) -> float | None: ...

    def rewrite(self, text: str, skill_name: str, files: frozenset[str]) -> str | None: ...


def _text(data: str | bytes) -> str:
    return normalize_text(data) if isinstance(data, str) else decode(data)


class OfflineBackend:
    """Deterministic stand-ins: heuristic judges, ``fallback_dry`` dim8, and the strategy-library proposer."""

    name = "offline"
    usage: Usage | None = None

    def server_facts(self) -> dict[str, Any]:
        return {"backend": "offline"}

    def evaluate(self, text, skill_name, files, mode, prompts, ever_reverted=False, last_dim10_raw=None, diff="",
                 first_reading=0) -> Evaluation:
        """The heuristics read the text itself: they are exact, so a null variant would only be the same reading."""
        doc = parse(_text(text))
        refs = tuple(scan_references(doc, files))
        structure = heuristic_structure(doc, refs, runtime_bound(doc, skill_name))
        base = score_document(doc, skill_name, files, mode=mode, llm_dims=structure)
        dims = dict(structure, dim8=heuristic_dim8(doc, structure, base.dim("dim1").score or 0))
        dim10 = None if mode == "quick" else DimensionScore("dim10", 10, "formula", ("offline: no review gate ran, dim10 = 10",))
        score = score_document(doc, skill_name, files, mode=mode, llm_dims=dims, dim10=dim10)
        return Evaluation(score, "fallback_dry", 0)

    def resample(self, text, skill_name, files, mode, prompts, judges, dim8, first_reading=0) -> Resample:
        """Nothing to add: the heuristics give the same text the same scores, so they are exact (never resampled)."""
        return Resample()

    def design_prompts(self, text, skill_name):
        return offline_prompts(parse(_text(text)), skill_name), "offline design (description trigger phrases and headings)"

    def candidates(self, request: ProposalRequest, feedback: str | None) -> list[Edit]:
        from judges.offline_proposer import verified_candidates

        return verified_candidates(self, request)

    def rewrite(self, text: str, skill_name: str, files: frozenset[str]) -> str | None:
        from judges.offline_proposer import offline_rewrite

        return offline_rewrite(self, _text(text), skill_name, files)

    def held_out(self, text, skill_name, files, prompts, first_reading=0) -> float | None:
        """Offline there is no model to run: the held-out proxy is the heuristic workflow quality."""
        if not any(p.held_out for p in prompts):
            return None
        doc = parse(_text(text))
        structure = heuristic_structure(doc, tuple(scan_references(doc, files)))
        return round(sum(structure[d].score or 0 for d in ("dim2", "dim3", "dim5")) / 3, 2)


class OnlineBackend:
    name = "openai"

    def __init__(self, settings: Settings, cache: BaselineCache, client: LLMClient | None = None):
        self.settings = settings
        self.cache = cache
        self.client = client or LLMClient(settings)
        self.usage: Usage | None = self.client.usage

    def server_facts(self) -> dict[str, Any]:
        """How the run talks to its server (dialects learned, slots, concurrency, caps), for run.json and the report."""
        return {"backend": "openai", "base_url": self.settings.base_url or "the OpenAI API"} | self.client.facts()

    def _warnings(self) -> tuple[str, ...]:
        if self.settings.same_source:
            return (f"same-source warning: the editor and a judge are both '{self.settings.editor_model}' "
                    "(separate calls, but the design's red line 1 asks that it be shown)",)
        return ()

    def evaluate(self, text, skill_name, files, mode, prompts, ever_reverted=False, last_dim10_raw=None, diff="",
                 first_reading=0) -> Evaluation:
        """The score card. Each judge and the dim8 measurement read their own null variant of the text, from
        ``first_reading`` on (``readings``); the rules, the review and the references read the text itself."""
        text = _text(text)
        if mode == "full":
            doc, refs, panel, measurement = self._judge_and_measure(text, files, prompts, first_reading)
        else:
            doc = parse(text)
            refs = tuple(scan_references(doc, files))
            panel = combine([judge_once(self.client, self.settings.judge_model, "judge-1",
                                        null_variant(text, first_reading), refs)], self._warnings())
            measurement = measure_dry_run(self.client, self.settings, null_variant(text, first_reading + 1), prompts)
        dims = dict(panel.dims, dim8=measurement.dim8)
        review = None
        safety = dict(measurement.dim8.details).get("safety") if measurement.dim8.score is not None else None
        if mode == "full" and needs_review(safety, last_dim10_raw):
            review = run_review(self.client, self.settings.judge_model, text, diff)
        score = score_document(doc, skill_name, files, mode=mode, llm_dims=dims,
                               dim10=review.dim10 if review else None, warnings=self._warnings())
        veto = panel.safety_veto or bool(dict(measurement.dim8.details).get("safety_red_line"))
        recheck = self._orthogonality(score, text, refs, safety, ever_reverted)
        return Evaluation(score, measurement.eval_mode, panel.judge_count, panel.disagreements, veto,
                          bool(review and review.blocking), recheck, panel, measurement, review)

    def _judge_and_measure(self, text: str, files: frozenset[str], prompts: list[TestPrompt], first_reading: int):
        """The two judges and the dim8 pairs share one pool of ``max_concurrency`` workers, pairs first.

        Nothing here waits on anything else but a grade on its runs. A pair is a
        chain (runs, then the grade) and a judge one call, so queueing the chains
        first lets an evaluation finish in two latencies where judges-first, or
        judges then dim8, takes three or four. The runs need only the text, so
        the skill is parsed (for the judges' reference list and the rules) while
        they are in flight (benchmarks/loop_overhead.py).
        """
        context = skill_context(null_variant(text, first_reading + FULL_JUDGES), files)
        models = [self.settings.judge_model] * FULL_JUDGES
        with ThreadPoolExecutor(max_workers=self.settings.max_concurrency) as pool:
            pairs = [pool.submit(measure_pair, self.client, self.settings, self.cache, context, p) for p in main_prompts(prompts)]
            doc = parse(text)
            refs = tuple(scan_references(doc, files))
            verdicts = [pool.submit(judge_once, self.client, model, f"judge-{i + 1}", null_variant(text, first_reading + i), refs)
                        for i, model in enumerate(models)]
            panel = combine([v.result() for v in verdicts], self._warnings())
            measurement = full_measurement([p.result() for p in pairs])
        return doc, refs, panel, measurement

    def resample(self, text, skill_name, files, mode, prompts, judges, dim8, first_reading=0) -> Resample:
        """``judges`` fresh structure-judge calls and, with ``dim8``, dim8 once more, all side by side.

        The same judge model and prompts as the evaluation, each reading its own
        null variant of the text (``first_reading`` on, dim8 last): samples of the
        judge's whole noise about the text, which is what the keep decision weighs.
        """
        text = _text(text)
        refs = tuple(scan_references(parse(text), files))
        dim8_text = null_variant(text, first_reading + judges)
        with ThreadPoolExecutor(max_workers=self.settings.max_concurrency) as pool:
            measured = None
            if dim8 and mode == "full":
                measured = pool.submit(lambda: full_measurement(
                    measure_pairs(self.client, self.settings, self.cache, skill_context(dim8_text, files), main_prompts(prompts))))
            elif dim8:
                measured = pool.submit(measure_dry_run, self.client, self.settings, dim8_text, prompts)
            calls = [pool.submit(judge_once, self.client, self.settings.judge_model, f"judge-{i + 3}",
                                 null_variant(text, first_reading + i), refs) for i in range(judges)]
            verdicts = tuple(c.result() for c in calls)
            measurement = measured.result() if measured else None
            return Resample(verdicts, measurement.dim8 if measurement else None, measurement)

    def _orthogonality(self, score: SkillScore, text: str, refs, safety, ever_reverted: bool) -> Verdict | None:
        """The design's heterogeneous re-check: shown, never counted among the standard judges."""
        accuracy = dict(score.dim("dim8").details).get("accuracy")
        triggers = [
            (score.dim("dim1").score or 0) >= 9 and accuracy is not None and accuracy <= 5,
            safety is not None and safety >= 10 and (score.dim("dim9").score or 0) <= 3,
            (score.dim("dim4").score or 0) >= 9 and not ever_reverted,
        ]
        if not any(triggers) or not self.settings.judge_model_2:
            return None
        return judge_once(self.client, self.settings.judge_model_2, "orthogonality", text, refs)

    def design_prompts(self, text, skill_name):
        return design_prompts(self.client, self.settings.editor_model, parse(_text(text)), skill_name)

    def candidates(self, request: ProposalRequest, feedback: str | None) -> list[Edit]:
        from judges.proposer import propose_online

        edit = propose_online(self.client, self.settings.editor_model, request, feedback)
        return [edit] if edit else []

    def rewrite(self, text: str, skill_name: str, files: frozenset[str]) -> str | None:
        from judges.proposer import rewrite_online

        return rewrite_online(self.client, self.settings.editor_model, _text(text))

    def held_out(self, text, skill_name, files, prompts, first_reading=0) -> float | None:
        return held_out_score(self.client, self.settings, self.cache, null_variant(_text(text), first_reading), files, prompts)


def make_backend(settings: Settings, cache_dir: Path, usage: Usage | None = None,
                 gate: Callable[[], AbstractContextManager[object]] | None = None, facts: ServerFacts | None = None) -> Backend:
    """The offline stand-ins, or the model behind ``settings``; ``usage``, ``gate`` and ``facts`` as ``LLMClient``
    takes them."""
    if settings.backend == "offline":
        return OfflineBackend()
    return OnlineBackend(settings, BaselineCache(cache_dir), LLMClient(settings, usage, gate, facts))
