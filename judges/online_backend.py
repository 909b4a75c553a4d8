"""The judges behind a model server: any OpenAI-compatible one, through the openai client (``judges/llm.py``).

Every measurement reads a null variant of the text (``scoring/null_variants.py``) so the spread a judge shows on
texts that say the same thing is part of the noise the keep decision reads against.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from judges.backend import FULL_JUDGES, BackendKind, Evaluation, ProposalRequest, Resample, as_text
from judges.llm import LLMClient
from judges.performance import (
    full_measurement,
    held_out_score,
    main_prompts,
    measure_dry_run,
    measure_pair,
    measure_pairs,
)
from judges.prompt_design import design_prompts
from judges.proposer import propose_online, rewrite_online
from judges.review import needs_review, run_review
from judges.settings import Settings
from judges.structure_judge import Verdict, combine, judge_once
from judges.target_tools import TargetSkill
from judges.tokens import count_tokens
from judges.usage import Usage
from scoring.document import parse
from scoring.edits import Edit
from scoring.model import Reference, SkillScore
from scoring.null_variants import null_variant
from scoring.rubric import score_document
from scoring.skill_view import SkillView, SourceFile, skill_view
from scoring.validation import scan_references
from workspace.baseline_cache import BaselineCache
from workspace.test_prompts import TestPrompt


class OnlineBackend:
    kind = BackendKind.OPENAI
    exact = False  # judges at any temperature move on texts that say the same thing

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

    def _view(self, text: str, sources: tuple[SourceFile, ...], refs: tuple[Reference, ...]) -> SkillView:
        """What a judge reads: ``text`` (SKILL.md) and the skill's files it references, within the judges' budget."""
        return skill_view(text, sources, tuple(r.target for r in refs if r.status == "exists"),
                          self.settings.judge_context_tokens, lambda t: count_tokens(t, self.settings.judge_model)[0])

    @staticmethod
    def _target(text: str, sources: tuple[SourceFile, ...], refs: tuple[Reference, ...]) -> TargetSkill:
        """What the with-skill run is given: ``text`` as SKILL.md, the skill's files, those SKILL.md references."""
        return TargetSkill(text, tuple(sources), tuple(r.target for r in refs if r.status == "exists"))

    def evaluate(self, text, skill_name, files, mode, prompts, ever_reverted=False, last_dim10_raw=None, diff="",
                 first_reading=0, sources=()) -> Evaluation:
        """The score card. Each judge and the dim8 measurement read their own null variant of the text, from
        ``first_reading`` on (``readings``); the rules, the review and the references read the text itself; the
        judges read the skill's files (``sources``) with it."""
        text = as_text(text)
        if mode == "full":
            doc, refs, panel, measurement = self._judge_and_measure(text, files, prompts, first_reading, sources)
        else:
            doc = parse(text)
            refs = tuple(scan_references(doc, files))
            view = self._view(null_variant(text, first_reading), sources, refs)
            panel = combine([judge_once(self.client, self.settings.judge_model, "judge-1", view, refs)],
                            self._warnings(), view.unseen())
            measurement = measure_dry_run(self.client, self.settings, null_variant(text, first_reading + 1), prompts)
        dims = dict(panel.dims, dim8=measurement.dim8)
        review = None
        safety = dict(measurement.dim8.details).get("safety") if measurement.dim8.score is not None else None
        if mode == "full" and needs_review(safety, last_dim10_raw):
            review = run_review(self.client, self.settings.judge_model, text, diff)
        score = score_document(doc, skill_name, files, mode=mode, llm_dims=dims,
                               dim10=review.dim10 if review else None, warnings=self._warnings())
        veto = panel.safety_veto or bool(dict(measurement.dim8.details).get("safety_red_line"))
        recheck = self._orthogonality(score, self._view(text, sources, refs), refs, safety, ever_reverted)
        return Evaluation(score, measurement.eval_mode, panel.judge_count, panel.disagreements, veto,
                          bool(review and review.blocking), recheck, panel, measurement, review)

    def _judge_and_measure(self, text: str, files: frozenset[str], prompts: list[TestPrompt], first_reading: int,
                           sources: tuple[SourceFile, ...]):
        """The two judges and the dim8 pairs share one pool of ``max_concurrency`` workers, pairs first.

        Nothing here waits on anything else but a grade on its runs. A pair is a
        chain (runs, then the grade) and a judge one call, so queueing the chains
        first lets an evaluation finish in two latencies where judges-first, or
        judges then dim8, takes three or four (benchmarks/loop_overhead.py).
        """
        doc = parse(text)
        refs = tuple(scan_references(doc, files))
        target = self._target(null_variant(text, first_reading + FULL_JUDGES), sources, refs)
        models = [self.settings.judge_model] * FULL_JUDGES
        with ThreadPoolExecutor(max_workers=self.settings.max_concurrency) as pool:
            pairs = [pool.submit(measure_pair, self.client, self.settings, self.cache, target, p) for p in main_prompts(prompts)]
            views = [self._view(null_variant(text, first_reading + i), sources, refs) for i in range(len(models))]
            verdicts = [pool.submit(judge_once, self.client, model, f"judge-{i + 1}", views[i], refs)
                        for i, model in enumerate(models)]
            panel = combine([v.result() for v in verdicts], self._warnings(), views[0].unseen())
            measurement = full_measurement([p.result() for p in pairs])
        return doc, refs, panel, measurement

    def resample(self, text, skill_name, files, mode, prompts, judges, dim8, first_reading=0, sources=()) -> Resample:
        """``judges`` fresh structure-judge calls and, with ``dim8``, dim8 once more, all side by side.

        The same judge model and prompts as the evaluation, each reading its own
        null variant of the text (``first_reading`` on, dim8 last): samples of the
        judge's whole noise about the text, which is what the keep decision weighs.
        """
        text = as_text(text)
        refs = tuple(scan_references(parse(text), files))
        dim8_text = null_variant(text, first_reading + judges)
        with ThreadPoolExecutor(max_workers=self.settings.max_concurrency) as pool:
            measured = None
            if dim8 and mode == "full":
                target = self._target(dim8_text, sources, refs)
                measured = pool.submit(lambda: full_measurement(
                    measure_pairs(self.client, self.settings, self.cache, target, main_prompts(prompts))))
            elif dim8:
                measured = pool.submit(measure_dry_run, self.client, self.settings, dim8_text, prompts)
            calls = [pool.submit(judge_once, self.client, self.settings.judge_model, f"judge-{i + 3}",
                                 self._view(null_variant(text, first_reading + i), sources, refs), refs)
                     for i in range(judges)]
            verdicts = tuple(c.result() for c in calls)
            measurement = measured.result() if measured else None
            return Resample(verdicts, measurement.dim8 if measurement else None, measurement)

    def _orthogonality(self, score: SkillScore, view: SkillView, refs, safety, ever_reverted: bool) -> Verdict | None:
        """The design's heterogeneous re-check: shown, never counted among the standard judges."""
        accuracy = dict(score.dim("dim8").details).get("accuracy")
        triggers = [
            (score.dim("dim1").score or 0) >= 9 and accuracy is not None and accuracy <= 5,
            safety is not None and safety >= 10 and (score.dim("dim9").score or 0) <= 3,
            (score.dim("dim4").score or 0) >= 9 and not ever_reverted,
        ]
        if not any(triggers) or not self.settings.judge_model_2:
            return None
        return judge_once(self.client, self.settings.judge_model_2, "orthogonality", view, refs)

    def design_prompts(self, text, skill_name):
        return design_prompts(self.client, self.settings.editor_model, parse(as_text(text)), skill_name)

    def candidates(self, request: ProposalRequest, feedback: str | None) -> list[Edit]:
        edit = propose_online(self.client, self.settings.editor_model, request, feedback)
        return [edit] if edit else []

    def rewrite(self, text: str, skill_name: str, files: frozenset[str]) -> str | None:
        return rewrite_online(self.client, self.settings.editor_model, as_text(text))

    def held_out(self, text, skill_name, files, prompts, first_reading=0, sources=()) -> float | None:
        text = as_text(text)
        refs = tuple(scan_references(parse(text), files))
        target = self._target(null_variant(text, first_reading), sources, refs)
        return held_out_score(self.client, self.settings, self.cache, target, prompts)
