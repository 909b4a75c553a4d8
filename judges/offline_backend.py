"""The offline backend: deterministic stand-ins for every judge, used with no key and no base URL.

Heuristic judges, ``fallback_dry`` dim8 and the strategy-library proposer: exact, free, and marked as estimates
wherever a score is shown.
"""

from __future__ import annotations

from typing import Any

from judges.backend import BackendKind, Evaluation, ProposalRequest, Resample, as_text
from judges.offline import heuristic_dim8, heuristic_structure, runtime_bound
from judges.offline_proposer import offline_rewrite, verified_candidates
from judges.prompt_design import offline_prompts
from judges.usage import Usage
from scoring.document import parse
from scoring.edits import Edit
from scoring.model import DimensionScore
from scoring.rubric import score_document
from scoring.validation import scan_references


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
        return verified_candidates(self, request)

    def rewrite(self, text: str, skill_name: str, files: frozenset[str]) -> str | None:
        return offline_rewrite(self, as_text(text), skill_name, files)

    def held_out(self, text, skill_name, files, prompts, first_reading=0, sources=()) -> float | None:
        """Offline there is no model to run: the held-out proxy is the heuristic workflow quality."""
        if not any(p.held_out for p in prompts):
            return None
        doc = parse(as_text(text))
        structure = heuristic_structure(doc, tuple(scan_references(doc, files)))
        return round(sum(structure[d].score or 0 for d in ("dim2", "dim3", "dim5")) / 3, 2)
