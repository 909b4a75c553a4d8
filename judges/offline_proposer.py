"""The offline proposer: the mechanical fixes (``offline_strategies``), each checked to raise its own dimension.

A candidate is offered only if it applies exactly, stays within the edit
budget, is not a rejected edit, and — scored offline — really raises the
dimension it targets. The proposer's structural guards check it again, as they
check every proposal.
"""

from __future__ import annotations

from judges import offline_strategies as s
from judges.backend import Backend, ProposalRequest
from scoring.document import normalize_text, parse
from scoring.edits import SIZE_CAP, Edit, EditRefused, apply_edit, check_budget
from scoring.rubric import Mode


def strategy_candidates(text: str, target_dim: str, missing_refs: list[str], files: frozenset[str]) -> list[Edit]:
    return s.candidates(parse(text), target_dim, missing_refs, files)


def verified_candidates(backend: Backend, request: ProposalRequest) -> list[Edit]:
    text = normalize_text(request.text)
    before = backend.evaluate(text, request.skill_name, request.files, Mode.QUICK, [])
    missing = [r.target for r in before.score.references if r.status == "missing"]
    good = []
    for edit in strategy_candidates(text, request.target_dim, missing, request.files):
        try:
            edited = apply_edit(text, edit)
        except EditRefused:
            continue
        if not check_budget(text, edited, request.budget).within or request.is_rejected(edit.old, edit.new, edit.file):
            continue
        after = backend.evaluate(edited, request.skill_name, request.files, Mode.QUICK, [])
        target = edit.target_dim
        if (after.score.dim(target).score or 0) > (before.score.dim(target).score or 0):
            good.append(edit)
    return good


def offline_rewrite(backend: Backend, text: str, skill_name: str, files: frozenset[str], rounds: int = 8) -> str | None:
    """Phase 2.5 offline: every verified strategy edit applied in turn — a restructuring no single
    10 % edit could make — within the 150 % size cap. None when nothing applies."""
    original, current = normalize_text(text), normalize_text(text)
    for _ in range(rounds):
        card = backend.evaluate(current, skill_name, files, Mode.QUICK, []).score
        # the most points to gain first; an unscored dimension has none to offer
        weakest = sorted(card.dims, key=lambda d: -(10 - d.score) * d.weight if d.score is not None else 0)
        weakest = [d for d in weakest if d.score is not None and d.score < 10]
        applied = False
        for dim in weakest:
            for edit in verified_candidates(backend, ProposalRequest(current, skill_name, files, dim.dim)):
                candidate = apply_edit(current, edit)
                if len(candidate) <= SIZE_CAP * len(original):
                    current, applied = candidate, True
                    break
            if applied:
                break
        if not applied:
            break
    return current if current != original else None
